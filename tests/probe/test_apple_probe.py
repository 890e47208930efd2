"""Apple Silicon: unified memory on macOS arm64, unsupported under Asahi Linux."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.models.common import ProbeStatus
from hwadvisor.models.facts import Memory
from hwadvisor.probe.apple import WORKING_SET_SHARE, probe_apple
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo


def _seams(root: Path, system: str, machine: str) -> Seams:
    return Seams(
        fs=HostFS(root), system=SystemInfo(system=system, machine=machine, env={}, is_real=False)
    )


def test_arm64_mac_has_one_unified_memory_gpu(tmp_path: Path) -> None:
    log = ProbeLog()
    ram = 32 * 2**30
    gpus = probe_apple(
        _seams(tmp_path, "Darwin", "arm64"), log, Memory(total_bytes=ram), start_index=2
    )
    assert len(gpus) == 1
    gpu = gpus[0]
    assert (gpu.index, gpu.vendor, gpu.unified_memory) == (2, "apple", True)
    assert gpu.memory_total_bytes == int(ram * WORKING_SET_SHARE)
    assert log.records[0].status is ProbeStatus.OK
    assert "estimate" in (log.records[0].error or "")


def test_mac_with_unknown_ram_has_unknown_gpu_memory(tmp_path: Path) -> None:
    gpus = probe_apple(_seams(tmp_path, "Darwin", "arm64"), ProbeLog(), Memory(), start_index=0)
    assert gpus[0].memory_total_bytes is None


def test_asahi_linux_is_unsupported(tmp_path: Path) -> None:
    dt = tmp_path / "proc" / "device-tree" / "compatible"
    dt.parent.mkdir(parents=True)
    dt.write_bytes(b"apple,j314s\x00apple,t6000\x00apple,arm-platform\x00")
    log = ProbeLog()
    assert probe_apple(_seams(tmp_path, "Linux", "aarch64"), log, Memory(), start_index=0) == []
    assert log.records[0].status is ProbeStatus.UNSUPPORTED


@pytest.mark.parametrize(
    ("system", "machine"), [("Linux", "x86_64"), ("Darwin", "x86_64"), ("Windows", "AMD64")]
)
def test_other_systems_have_no_apple_gpu(tmp_path: Path, system: str, machine: str) -> None:
    log = ProbeLog()
    assert (
        probe_apple(
            _seams(tmp_path, system, machine), log, Memory(total_bytes=2**34), start_index=0
        )
        == []
    )
    assert log.records[0].status is ProbeStatus.ABSENT
