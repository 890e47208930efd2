"""The NVIDIA probe's fast path, switches, child-output parsing and NVML query details."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.models.common import ProbeStatus
from hwadvisor.probe import nvidia, nvml_process
from hwadvisor.probe.nvml_fake import FakeNvml
from hwadvisor.probe.nvml_process import ChildResult, parse_output
from hwadvisor.probe.nvml_query import cuda_version_text, normalise_bus_id, query_gpus
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo

NVML_DIR = Path(__file__).parents[1] / "data" / "nvml"


def _no_child(timeout: float, env: dict[str, str]) -> ChildResult:
    raise AssertionError("the NVML child must not start here")


def _seams(
    root: Path,
    env: dict[str, str] | None = None,
    *,
    real: bool = True,
    child: Callable[[float, dict[str, str]], ChildResult] = _no_child,
) -> Seams:
    """Seams over ``root`` whose NVML child is ``child`` (by default: one that must not run)."""
    return Seams(fs=HostFS(root), system=SystemInfo(env=env or {}, is_real=real), nvml_child=child)


def _touch(root: Path, path: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("")


def test_no_device_is_absent_without_starting_a_child(tmp_path: Path) -> None:
    log = ProbeLog()
    assert nvidia.probe_nvidia(_seams(tmp_path), log, timeout=5) == []
    rec = log.records[0]
    assert (rec.status, rec.error) == (ProbeStatus.ABSENT, "no NVIDIA driver or device found")


@pytest.mark.parametrize(
    ("files", "found"),
    [
        (["/dev/nvidiactl"], "/dev/nvidiactl"),
        (["/dev/nvidia0"], "/dev/nvidia0"),
        (["/proc/driver/nvidia/version"], "/proc/driver/nvidia/version"),
        (["/dev/dxg", "/usr/lib/wsl/lib/libnvidia-ml.so.1"], "/usr/lib/wsl/lib/libnvidia-ml.so.1"),
        (["/dev/dxg"], None),  # WSL without NVIDIA's library: some other vendor's GPU
        (["/dev/nvidia-uvm"], None),
    ],
)
def test_markers_of_an_nvidia_stack(tmp_path: Path, files: list[str], found: str | None) -> None:
    for f in files:
        _touch(tmp_path, f)
    assert nvidia.nvidia_visible(_seams(tmp_path)) == found


def test_recorded_host_with_a_device_but_no_answers_is_unsupported(tmp_path: Path) -> None:
    _touch(tmp_path, "/dev/nvidia0")
    log = ProbeLog()
    nvidia.probe_nvidia(_seams(tmp_path, real=False), log, timeout=5)
    assert log.records[0].status is ProbeStatus.UNSUPPORTED


def test_off_switch_skips_even_with_a_device(tmp_path: Path) -> None:
    _touch(tmp_path, "/dev/nvidia0")
    log = ProbeLog()
    nvidia.probe_nvidia(_seams(tmp_path, {"HWADVISOR_NVML": "off"}), log, timeout=5)
    assert log.records[0].status is ProbeStatus.ABSENT
    assert "HWADVISOR_NVML=off" in (log.records[0].error or "")


def test_force_runs_the_child_without_any_device(tmp_path: Path) -> None:
    calls: list[float] = []

    def fake_run(timeout: float, env: dict[str, str]) -> ChildResult:
        calls.append(timeout)
        return ChildResult(fatal="LibraryNotFound", fatal_message="nvmlInit failed")

    log = ProbeLog()
    seams = _seams(tmp_path, {"HWADVISOR_NVML": "force"}, child=fake_run)
    nvidia.probe_nvidia(seams, log, timeout=2.5)
    assert calls == [2.5]
    assert log.records[0].status is ProbeStatus.ABSENT


def test_fast_path_imports_neither_pynvml_nor_subprocess_machinery(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from hwadvisor.probe.seams import HostFS, Seams, SystemInfo\n"
        "from hwadvisor.probe import nvidia, software\n"
        "from hwadvisor.probe.runner import ProbeLog\n"
        f"s = Seams(fs=HostFS({str(tmp_path)!r}), system=SystemInfo(env={{}}))\n"
        "log = ProbeLog(); g = nvidia.probe_nvidia(s, log, timeout=5)\n"
        "software.probe_software(Seams(), log, g)\n"
        "print(sorted(m for m in ('pynvml', 'torch', 'hwadvisor.probe.nvml_process') if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == "[]"


def test_child_output_cut_short_keeps_complete_lines() -> None:
    gpu = {"index": 0, "name": "NVIDIA A10"}
    raw = (json.dumps({"gpu": gpu}) + "\n" + '{"gpu": {"index": 1, "na').encode()
    result = ChildResult()
    parse_output(raw, result)
    assert result.gpus == [gpu]
    assert result.bad_lines == 1
    assert not result.done


@pytest.mark.parametrize(
    ("result", "status", "text"),
    [
        (
            ChildResult(returncode=3, stderr_tail="Traceback...\nImportError: boom"),
            ProbeStatus.ERROR,
            "ImportError: boom",
        ),
        (ChildResult(returncode=0), ProbeStatus.ERROR, "no result"),
        (ChildResult(fatal="NoPermission", fatal_message="x"), ProbeStatus.DENIED, "NoPermission"),
        (
            ChildResult(fatal="Unknown", fatal_message="nvmlInit failed: Unknown"),
            ProbeStatus.ERROR,
            "Unknown",
        ),
        (ChildResult(timed_out=True, abandoned=True), ProbeStatus.TIMEOUT, "abandoned"),
    ],
)
def test_outcome_of_a_failed_child(result: ChildResult, status: ProbeStatus, text: str) -> None:
    got_status, reason = nvidia._outcome(result, 5.0, [], [])
    assert got_status is status
    assert reason is not None and text in reason


def test_malformed_record_keeps_the_gpu_and_says_so() -> None:
    notes: list[str] = []
    gpus = nvidia.gpus_from_records([{"index": 2, "memory_total_bytes": "lots"}], notes)
    assert [(g.index, g.vendor, g.memory_total_bytes) for g in gpus] == [(2, "nvidia", None)]
    assert notes and "GPU 2" in notes[0]


def test_a_compute_capability_of_the_wrong_type_loses_only_that_field() -> None:
    notes: list[str] = []
    (gpu,) = nvidia.gpus_from_records([{"index": 1, "name": "X", "compute_capability": 8.6}], notes)
    assert (gpu.index, gpu.name, gpu.compute_capability, gpu.architecture) == (1, "X", None, None)
    assert notes == ["GPU 1: malformed NVML fields left null: compute_capability=8.6"]


def test_impossible_nvml_values_lose_only_their_field() -> None:
    rec = json.loads((NVML_DIR / "h200.json").read_text())
    good, _ = query_gpus(FakeNvml(rec))
    bad = {**good[0], "utilization_percent": 255, "temperature_c": float("nan")}
    notes: list[str] = []
    (gpu,) = nvidia.gpus_from_records([bad], notes)
    assert gpu.utilization_percent is None and gpu.temperature_c is None
    assert gpu.memory_total_bytes == good[0]["memory_total_bytes"]
    assert gpu.name == good[0]["name"]
    assert notes == [
        "GPU 0: malformed NVML fields left null: temperature_c=nan, utilization_percent=255"
    ]


def test_nvlink_counts_only_enabled_links() -> None:
    rec = json.loads((NVML_DIR / "h200.json").read_text())
    rec["devices"][0]["nvlink_states"] = [1, 0, 1, 1]
    gpus, _ = query_gpus(FakeNvml(rec))
    assert gpus[0]["nvlink_active_links"] == 3


def test_pcie_falls_back_to_max_when_current_fails() -> None:
    rec = json.loads((NVML_DIR / "h200.json").read_text())
    rec["devices"][0].update(
        pcie_gen_current={"error": "Unknown"}, pcie_width_current={"error": "Unknown"}
    )
    gpus, _ = query_gpus(FakeNvml(rec))
    assert (gpus[0]["pcie_generation"], gpus[0]["pcie_width"]) == (5, 16)
    assert "pcie_generation" not in gpus[0]["errors"]


def test_handle_refused_keeps_the_gpu_with_unknown_facts() -> None:
    rec = json.loads((NVML_DIR / "h200.json").read_text())
    rec["devices"].append({"handle": {"error": "NoPermission"}})
    gpus, notes = query_gpus(FakeNvml(rec))
    assert [g["index"] for g in gpus] == [0, 1]
    assert "name" not in gpus[1]
    assert any("GPU 1: no handle (NoPermission)" in n for n in notes)


@pytest.mark.parametrize(
    ("value", "text"), [(12040, "12.4"), (11020, "11.2"), (13000, "13.0"), (0, None), (None, None)]
)
def test_cuda_version_text(value: int | None, text: str | None) -> None:
    assert cuda_version_text(value) == text


@given(st.integers(0, 0xFFFF), st.integers(0, 0xFF), st.integers(0, 0x1F), st.integers(0, 7))
def test_bus_id_normalises_to_sysfs_form(domain: int, bus: int, dev: int, fn: int) -> None:
    nvml_form = f"{domain:08X}:{bus:02X}:{dev:02X}.{fn}"
    assert normalise_bus_id(nvml_form.encode()) == f"{domain:04x}:{bus:02x}:{dev:02x}.{fn}"


@given(st.text())
def test_bus_id_never_raises(text: str) -> None:
    out = normalise_bus_id(text)
    assert out is None or isinstance(out, str)


def test_child_that_will_not_end_after_the_kill_is_abandoned_with_a_bound() -> None:
    # Stands for a child stuck in the kernel: a holder in its own session keeps the output
    # pipe open, so the reap after SIGKILL can never see the end of the output. The child
    # starts the holder (in its session before Popen returns), then names it in its line.
    code = (
        "import subprocess, sys, time\n"
        "h = subprocess.Popen([sys.executable, '-I', '-S', '-c', 'import time; time.sleep(30)'],"
        " start_new_session=True)\n"
        'print(\'{"gpu": {"index": 0, "holder": %d}}\' % h.pid, flush=True)\n'
        "time.sleep(30)\n"
    )
    started = time.monotonic()
    result = nvml_process.run_child(
        0.5, dict(os.environ), argv=[sys.executable, "-I", "-S", "-c", code], reap_timeout=0.2
    )
    waited = time.monotonic() - started
    holders = [g.get("holder") for g in result.gpus]
    for pid in holders:  # the test's own clean-up: nothing else would ever end the holder
        with contextlib.suppress(ProcessLookupError, TypeError):
            os.kill(pid, signal.SIGKILL)
        # The test process adopts orphans (tests/conftest.py), so it reaps the holder.
        with contextlib.suppress(ChildProcessError, TypeError):
            os.waitpid(pid, 0)
    assert result.timed_out and result.abandoned
    assert [g["index"] for g in result.gpus] == [0] and isinstance(holders[0], int)
    # The deadline plus the bounded reap, not the child's or the holder's sleep.
    assert waited < 0.5 + 0.2 + 2
