"""AMD GPUs from a recorded sysfs tree (tests/data/gpu_hosts/amd_mi300x_mi210)."""

from __future__ import annotations

from pathlib import Path

from hwadvisor.models.common import ProbeStatus
from hwadvisor.probe.amd import probe_amd
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo

HOST = Path(__file__).parents[1] / "data" / "gpu_hosts" / "amd_mi300x_mi210"


def _write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def test_mi300x_and_mi210_matched_to_their_kfd_nodes_by_pci_location() -> None:
    log = ProbeLog()
    gpus = probe_amd(Seams.recorded(HOST), log, start_index=3)
    assert log.records[0].status is ProbeStatus.OK
    # card0 is the board's ASPEED BMC (vendor 0x1a03) and is not a GPU.
    got = [
        (g.index, g.pci_bus_id, g.name, g.compute_capability, g.architecture, g.multiprocessors)
        for g in gpus
    ]
    assert got == [
        (3, "0000:0c:00.0", "AMD Instinct MI300X", "gfx942", "CDNA 3", 304),
        (4, "0000:22:00.0", "AMD Instinct MI210", "gfx90a", "CDNA 2", 104),
    ]
    mi300x, mi210 = gpus
    assert mi300x.memory_total_bytes == 192 * 2**30
    assert mi300x.memory_free_bytes == 192 * 2**30 - 301989888
    assert (mi300x.supports.fp8, mi300x.supports.tf32, mi210.supports.fp8, mi210.supports.bf16) == (
        True,
        True,
        False,
        True,
    )
    assert {g.vendor for g in gpus} == {"amd"}
    assert mi300x.driver_version == "6.8.5"


def test_no_amd_card_is_absent(tmp_path: Path) -> None:
    _write(tmp_path, "/sys/class/drm/card0/device/vendor", "0x10de\n")
    log = ProbeLog()
    assert (
        probe_amd(Seams(fs=HostFS(tmp_path), system=SystemInfo(env={})), log, start_index=0) == []
    )
    assert log.records[0].status is ProbeStatus.ABSENT


def test_apu_without_vram_is_skipped_and_missing_kfd_is_noted(tmp_path: Path) -> None:
    _write(
        tmp_path, "/sys/class/drm/card0/device/vendor", "0x1002\n"
    )  # APU: no mem_info_vram_total
    _write(tmp_path, "/sys/class/drm/card1/device/vendor", "0x1002\n")
    _write(tmp_path, "/sys/class/drm/card1/device/mem_info_vram_total", "25753026560\n")
    _write(tmp_path, "/sys/class/drm/card1/device/product_name", "Some Radeon\n")
    log = ProbeLog()
    gpus = probe_amd(Seams(fs=HostFS(tmp_path), system=SystemInfo(env={})), log, start_index=0)
    assert [
        (g.name, g.memory_total_bytes, g.memory_free_bytes, g.compute_capability) for g in gpus
    ] == [("Some Radeon", 25753026560, None, None)]
    assert "gfx target unknown" in (log.records[0].error or "")
