"""The real pynvml path against a stand-in libnvidia-ml.so.1 built from C in the test.

The stand-in (tests/data/nvml/standin/libnvidia-ml.c) hangs, segfaults, reports a
driver/library mismatch, or answers for one GPU with most functions missing, as
``STANDIN_NVML_MODE`` says; ``LD_LIBRARY_PATH`` makes the child's pynvml load it.
``HWADVISOR_NVML=force`` runs the child on a machine without /dev/nvidia*, and every test
reads the stand-in's log (``STANDIN_NVML_LOG``) to show that the library was entered in
the mode asked for: a probe that stopped earlier (at "no device") fails the test.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from hwadvisor.models.facts import Gpu, ProbeRecord
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe import nvidia
from hwadvisor.probe.nvml_process import REAP_TIMEOUT_S
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo


def _probe(
    standin_nvml: Path, mode: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, timeout: float
) -> tuple[list[Gpu], ProbeRecord]:
    monkeypatch.setenv("LD_LIBRARY_PATH", str(standin_nvml))
    monkeypatch.setenv("STANDIN_NVML_MODE", mode)
    calls = tmp_path / "nvml.log"
    monkeypatch.setenv("STANDIN_NVML_LOG", str(calls))
    monkeypatch.delenv("HWADVISOR_FAKE_NVML", raising=False)
    # An empty host folder: no /dev/nvidia* there, only the forced mode runs the child.
    seams = Seams(fs=HostFS(tmp_path), system=SystemInfo(env={"HWADVISOR_NVML": "force"}))
    log = ProbeLog()
    gpus = nvidia.probe_nvidia(seams, log, timeout=timeout)
    said = calls.read_text() if calls.exists() else ""
    if f"init {mode} " not in said:
        if mode == "hang":
            pytest.skip(
                f"the NVML child did not reach nvmlInit within {timeout:g} s on this "
                "machine: the hang was not exercised"
            )
        pytest.fail(f"the stand-in NVML library was never entered (log: {said!r})")
    return gpus, log.records[0]


def test_one_gpu_with_most_functions_missing(
    standin_nvml: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gpus, rec = _probe(standin_nvml, "one", monkeypatch, tmp_path, timeout=30)
    assert rec.status is ProbeStatus.OK
    assert len(gpus) == 1
    gpu = gpus[0]
    assert (gpu.name, gpu.pci_bus_id, gpu.compute_capability, gpu.architecture) == (
        "Stand-in GPU",
        "0000:3b:00.0",
        "9.0",
        "Hopper",
    )
    assert (gpu.memory_total_bytes, gpu.driver_version, gpu.cuda_driver_version) == (
        150754820096,
        "999.99.99",
        "12.8",
    )
    assert gpu.temperature_c is None and gpu.power_limit_watts is None
    assert "FunctionNotFound" in (rec.error or "")


def test_version_mismatch_is_an_error(
    standin_nvml: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gpus, rec = _probe(standin_nvml, "mismatch", monkeypatch, tmp_path, timeout=30)
    assert gpus == []
    assert rec.status is ProbeStatus.ERROR and "version mismatch" in (rec.error or "")


def test_segfault_in_nvml_init_is_an_error_naming_the_signal(
    standin_nvml: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    gpus, rec = _probe(standin_nvml, "segv", monkeypatch, tmp_path, timeout=30)
    assert gpus == []
    assert rec.status is ProbeStatus.ERROR and "SIGSEGV" in (rec.error or "")


def test_nvml_init_that_never_returns_times_out(
    standin_nvml: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Nothing is expected before the hang, so the deadline can be short: wherever the
    child is when it expires (starting, or hung in nvmlInit), it is killed."""
    started = time.monotonic()
    gpus, rec = _probe(standin_nvml, "hang", monkeypatch, tmp_path, timeout=1.0)
    assert gpus == []
    assert rec.status is ProbeStatus.TIMEOUT
    assert "within 1 s (killed)" in (rec.error or "")
    assert time.monotonic() - started < 1.0 + REAP_TIMEOUT_S + 2
