"""Every recorded NVML machine in tests/data/nvml gives the facts its ``expected`` section names.

In process through ``probe_in_process(FakeNvml(...))`` for all recordings but the ones that
hang or crash; through the real child process (``HWADVISOR_FAKE_NVML``) for a sample and
for the faults.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.models.facts import Gpu, ProbeRecord
from hwadvisor.models.plain import to_json_value
from hwadvisor.probe import nvidia
from hwadvisor.probe.nvml_fake import READY_ENV, FakeNvml
from hwadvisor.probe.nvml_process import REAP_TIMEOUT_S
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams, SystemInfo

NVML_DIR = Path(__file__).parents[1] / "data" / "nvml"
RECORDINGS = sorted(NVML_DIR.glob("*.json"))


def _load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _check(expected: dict[str, Any], gpus: list[Gpu], record: ProbeRecord) -> None:
    assert record.name == "gpu.nvidia"
    assert record.status.value == expected["status"], record.error
    for text in expected.get("error_contains", []):
        assert record.error is not None and text.lower() in record.error.lower(), record.error
    want = expected.get("gpus", [])
    assert len(gpus) == expected.get("count", len(want))
    dumped = [to_json_value(g) for g in gpus]
    for got in dumped:
        for key, value in expected.get("all", {}).items():
            assert got[key] == value, (got["index"], key)
    for got, fields in zip(dumped, want, strict=False):  # "gpus" may name only the first few
        for key, value in fields.items():
            assert got[key] == value, (got["index"], key)


@pytest.mark.parametrize(
    "path", [p for p in RECORDINGS if not _load(p).get("child_only")], ids=lambda p: p.stem
)
def test_recording_in_process(path: Path) -> None:
    rec = _load(path)
    log = ProbeLog()
    gpus = nvidia.probe_in_process(FakeNvml(rec), log)
    _check(rec["expected"], gpus, log.records[0])


def _seams_with_fake(path: Path) -> Seams:
    return Seams(system=SystemInfo(env={"HWADVISOR_FAKE_NVML": str(path)}))


@pytest.mark.parametrize(
    "name",
    ["h100_sxm_8x_nvlink", "library_missing", "crash_in_device", "gpu_lost"],
)
def test_recording_through_child_process(name: str) -> None:
    path = NVML_DIR / f"{name}.json"
    log = ProbeLog()
    gpus = nvidia.probe_nvidia(_seams_with_fake(path), log, timeout=30)
    _check(_load(path)["expected"], gpus, log.records[0])


def test_hung_driver_is_killed_at_the_deadline_and_keeps_gpus_read_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The child prints GPU 0, then hangs on GPU 1. Its ready file (written as the hang
    begins) says whether it got there before the deadline; if it was still starting (a
    busy machine), the deadline doubles and the probe runs again, so a short deadline
    never makes the test depend on the machine's load."""
    path = NVML_DIR / "hang_in_device.json"
    for deadline in (0.5, 1.0, 2.0, 4.0, 8.0):
        ready = tmp_path / f"ready-{deadline:g}"
        monkeypatch.setenv(READY_ENV, str(ready))
        log = ProbeLog()
        started = time.monotonic()
        gpus = nvidia.probe_nvidia(_seams_with_fake(path), log, timeout=deadline)
        waited = time.monotonic() - started
        if ready.exists():
            break
    else:
        pytest.fail("the NVML child never reached the hang, even with 8 s")
    _check(_load(path)["expected"], gpus, log.records[0])
    assert f"within {deadline:g} s (killed)" in (log.records[0].error or "")
    # The deadline plus the bounded reap, not the child's minute-long sleep.
    assert waited < deadline + REAP_TIMEOUT_S + 2
    pid = int(ready.read_text())
    assert (
        not Path(f"/proc/{pid}").exists() or "State:\tZ" in Path(f"/proc/{pid}/status").read_text()
    )


def test_every_recording_names_its_source_and_expectations() -> None:
    assert len(RECORDINGS) >= 10
    for path in RECORDINGS:
        rec = _load(path)
        assert rec.get("source") and rec.get("description"), path.name
        assert rec["expected"]["status"] in {"ok", "absent", "error", "timeout", "denied"}, (
            path.name
        )
