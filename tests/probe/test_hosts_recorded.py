"""Every recorded host with an ``expected.json`` gives the CPU, memory and host facts it says.

Adding a machine is adding a folder under ``tests/data/hosts/``; GPU fixtures in the same
folders (``nvml.json``) are ignored here: only the ``cpu``, ``memory`` and ``host`` parts
of ``expected.json`` are compared.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.models.plain import ProbeStatus, to_json_value
from hwadvisor.probe import cpu, host, memory
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams

HOSTS = Path(__file__).resolve().parents[1] / "data" / "hosts"
RECORDED = sorted(p.parent for p in HOSTS.glob("*/expected.json"))


def _mismatches(expected: Any, actual: Any, path: str) -> list[str]:
    """Differences between a partial expected tree and the actual one."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out: list[str] = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing")
            else:
                out += _mismatches(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, float) and isinstance(actual, (int, float)):
        ok = actual == pytest.approx(expected, rel=1e-6, abs=0.051)
        return [] if ok else [f"{path}: expected {expected}, got {actual}"]
    return [] if expected == actual else [f"{path}: expected {expected!r}, got {actual!r}"]


@pytest.fixture(params=RECORDED, ids=lambda p: p.name)
def recorded(request: pytest.FixtureRequest) -> Path:
    """One recorded host folder."""
    return Path(request.param)


def test_there_are_recorded_hosts() -> None:
    names = {p.name for p in RECORDED}
    assert {"epyc-milan-kvm", "spr-amx-kvm", "container-cgv1", "container-cgv2-1.5cpu"} <= names


def test_recorded_host_gives_expected_facts(recorded: Path) -> None:
    expected = json.loads((recorded / "expected.json").read_text(encoding="utf-8"))
    seams = Seams.recorded(recorded)
    log = ProbeLog()
    actual = {
        "host": to_json_value(host.probe_host(seams, log)),
        "cpu": to_json_value(cpu.probe_cpu(seams, log)),
        "memory": to_json_value(memory.probe_memory(seams, log)),
    }
    wanted = {k: v for k, v in expected.items() if k in actual}
    assert wanted, "expected.json has no cpu/memory/host part"
    problems = _mismatches(wanted, actual, recorded.name)
    assert not problems, "\n".join(problems)
    # A recorded host never produces an error record: missing parts are absent, not bugs.
    errors = [r for r in log.records if r.status is ProbeStatus.ERROR]
    assert not errors, errors


def test_recorded_host_records_each_step(recorded: Path) -> None:
    """Each probe step leaves one record; the cgroup steps are ok or absent, never missing."""
    seams = Seams.recorded(recorded)
    log = ProbeLog()
    cpu.probe_cpu(seams, log)
    memory.probe_memory(seams, log)
    host.probe_host(seams, log)
    by_name = {r.name: r for r in log.records}
    assert list(by_name) == [r.name for r in log.records], "a step recorded twice"
    assert {"cpu", "cpu.topology", "cpu.cgroup", "memory", "memory.cgroup", "host"} <= set(by_name)
    assert by_name["cpu"].status is ProbeStatus.OK
    assert by_name["memory"].status is ProbeStatus.OK
    has_cgroup = (recorded / "sys/fs/cgroup").is_dir()
    expected_cgroup = ProbeStatus.OK if has_cgroup else ProbeStatus.ABSENT
    assert by_name["cpu.cgroup"].status is expected_cgroup
    assert by_name["memory.cgroup"].status is expected_cgroup
