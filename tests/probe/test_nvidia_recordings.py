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
from hwadvisor.probe.nvml_fake import FakeNvml
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


def test_hung_driver_is_killed_at_the_deadline_and_keeps_gpus_read_before() -> None:
    path = NVML_DIR / "hang_in_device.json"
    log = ProbeLog()
    started = time.monotonic()
    gpus = nvidia.probe_nvidia(_seams_with_fake(path), log, timeout=3)
    waited = time.monotonic() - started
    _check(_load(path)["expected"], gpus, log.records[0])
    assert "within 3 s" in (log.records[0].error or "")
    # The deadline plus the bounded reap, not the child's hour-long sleep.
    assert waited < 3 + 1 + 2


def test_every_recording_names_its_source_and_expectations() -> None:
    assert len(RECORDINGS) >= 10
    for path in RECORDINGS:
        rec = _load(path)
        assert rec.get("source") and rec.get("description"), path.name
        assert rec["expected"]["status"] in {"ok", "absent", "error", "timeout", "denied"}, (
            path.name
        )
