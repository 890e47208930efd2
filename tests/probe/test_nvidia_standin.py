"""The real pynvml path against a stand-in libnvidia-ml.so.1 built from C in the test.

The stand-in (tests/data/nvml/standin/libnvidia-ml.c) hangs, segfaults, reports a
driver/library mismatch, or answers for one GPU with most functions missing, as
``STANDIN_NVML_MODE`` says; ``LD_LIBRARY_PATH`` makes the child's pynvml load it.
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
    monkeypatch.delenv("HWADVISOR_FAKE_NVML", raising=False)
    seams = Seams(fs=HostFS(tmp_path), system=SystemInfo(env={"HWADVISOR_NVML": "force"}))
    log = ProbeLog()
    gpus = nvidia.probe_nvidia(seams, log, timeout=timeout)
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
    gpus, rec = _probe(standin_nvml, "hang", monkeypatch, tmp_path, timeout=0.4)
    assert gpus == []
    assert rec.status is ProbeStatus.TIMEOUT
    assert "within 0.4 s (killed)" in (rec.error or "")
    assert time.monotonic() - started < 0.4 + REAP_TIMEOUT_S + 2
