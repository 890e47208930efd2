"""Broken ``/proc``, ``/sys`` and cgroup files, through the whole ``check`` command.

tests/probe/ checks each parser and probe on its own; here a recorded container (cgroup
v1 and v2) is copied and damaged, the probe is pointed at the copy through its seam
(:meth:`Seams.recorded`), and the real command runs: exit 0, a facts document valid
against the schema, and the damaged source marked in ``probes`` instead of a crash.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.schemas import schema_for
from hwadvisor.probe.seams import HostFS, Seams

HOSTS = Path(__file__).parents[1] / "data" / "hosts"
V1 = "container-cgv1"
V2 = "container-cgv2-1.5cpu"
V1_CPU = "sys/fs/cgroup/cpu,cpuacct"
V1_MEM = "sys/fs/cgroup/memory"


@cache
def _validator(name: str) -> Any:
    """A compiled validator: ``jsonschema.validate`` re-checks the schema itself on every
    call, about 0.2 s here, which would dominate these tests."""
    schema = schema_for(name)
    return jsonschema.validators.validator_for(schema)(schema)


class DeniedFS(HostFS):
    """A root that refuses some files, as an unprivileged container refuses /sys files
    (root in this test machine reads anything, so chmod cannot show it)."""

    def __init__(self, root: Path, denied: set[str]) -> None:
        super().__init__(root)
        self.denied = denied

    def read(self, path: str) -> str | None:
        if path.lstrip("/") in self.denied:
            raise PermissionError(13, "Permission denied", path)
        return super().read(path)


#: name -> (host, {relative path: new content, or None to delete, or "<dir>"}, denied paths)
DAMAGE: dict[str, tuple[str, dict[str, str | None], set[str]]] = {
    "no-cpuinfo": (V1, {"proc/cpuinfo": None}, set()),
    "no-meminfo": (V1, {"proc/meminfo": None}, set()),
    "no-sys-at-all": (V2, {"sys": None}, set()),
    "no-proc-at-all": (V2, {"proc": None}, set()),
    "cpuinfo-binary": (V1, {"proc/cpuinfo": "\x00\xff\xfe" * 1000}, set()),
    "cpuinfo-empty": (V1, {"proc/cpuinfo": ""}, set()),
    "cpuinfo-is-a-folder": (V1, {"proc/cpuinfo": "<dir>"}, set()),
    "meminfo-garbage": (V1, {"proc/meminfo": "MemTotal: lots kB\nMemAvailable: -5 kB\n"}, set()),
    "meminfo-huge": (V1, {"proc/meminfo": f"MemTotal: {10**30} kB\nMemAvailable: {10**30} kB\n"}, set()),
    "v1-quota-max": (V1, {f"{V1_CPU}/cpu.cfs_quota_us": "max\n"}, set()),
    "v1-quota-zero": (V1, {f"{V1_CPU}/cpu.cfs_quota_us": "0\n"}, set()),
    "v1-period-zero": (V1, {f"{V1_CPU}/cpu.cfs_period_us": "0\n"}, set()),
    "v1-quota-huge": (V1, {f"{V1_CPU}/cpu.cfs_quota_us": f"{10**40}\n"}, set()),
    "v1-memory-limit-zero": (V1, {f"{V1_MEM}/memory.limit_in_bytes": "0\n"}, set()),
    "v1-memory-limit-huge": (V1, {f"{V1_MEM}/memory.limit_in_bytes": f"{10**40}\n"}, set()),
    "v1-memory-limit-garbage": (V1, {f"{V1_MEM}/memory.limit_in_bytes": "unlimited\n"}, set()),
    "v1-cpuset-garbage": (V1, {"sys/fs/cgroup/cpuset/cpuset.cpus": "0-\n"}, set()),
    "v1-cpuset-out-of-range": (V1, {"sys/fs/cgroup/cpuset/cpuset.cpus": "0-99999999999\n"}, set()),
    "v2-cpu-max-max": (V2, {"sys/fs/cgroup/cpu.max": "max 100000\n"}, set()),
    "v2-cpu-max-zero": (V2, {"sys/fs/cgroup/cpu.max": "0 0\n"}, set()),
    "v2-cpu-max-garbage": (V2, {"sys/fs/cgroup/cpu.max": "lots\n"}, set()),
    "v2-memory-max-zero": (V2, {"sys/fs/cgroup/memory.max": "0\n"}, set()),
    "v2-memory-max-huge": (V2, {"sys/fs/cgroup/memory.max": f"{10**40}\n"}, set()),
    "v2-proc-self-cgroup-garbage": (V2, {"proc/self/cgroup": "\x00::\n::/../../..\n"}, set()),
    "online-cpus-garbage": (V2, {"sys/devices/system/cpu/online": "all of them\n"}, set()),
    "os-release-binary": (V2, {"etc/os-release": "\xff\xfe=\x00\n"}, set()),
    "denied-cpuinfo": (V1, {}, {"proc/cpuinfo"}),
    "denied-meminfo-and-cgroup": (V1, {}, {"proc/meminfo", f"{V1_MEM}/memory.limit_in_bytes"}),
    "denied-cpu-max": (V2, {}, {"sys/fs/cgroup/cpu.max"}),
}  # fmt: skip


def _damaged_root(tmp_path: Path, host: str, edits: dict[str, str | None]) -> Path:
    root = tmp_path / host
    shutil.copytree(HOSTS / host, root)
    for rel, content in edits.items():
        target = root / rel
        if target.is_dir():
            shutil.rmtree(target)
        elif target.exists():
            target.unlink()
        if content == "<dir>":
            target.mkdir(parents=True)
        elif content is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content.encode("utf-8", errors="surrogateescape"))
    return root


@pytest.mark.parametrize("case", sorted(DAMAGE))
def test_check_on_a_damaged_host(
    case: str, tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    host, edits, denied = DAMAGE[case]
    root = _damaged_root(tmp_path, host, edits)
    recorded = Seams.recorded(root)
    seams = Seams(fs=DeniedFS(root, denied), system=recorded.system, site_paths=())
    monkeypatch.setattr("hwadvisor.probe.Seams", lambda: seams)
    result = cli("check", "--json")
    assert result.code == 0, result.err
    assert result.err == ""
    doc = json.loads(result.out)
    _validator("facts").validate(doc)
    statuses = {p["name"]: p["status"] for p in doc["probes"]}
    assert set(statuses) >= {"host", "cpu", "memory"}
    if denied:
        assert "denied" in statuses.values() or any(
            "denied" in (p["error"] or "").lower() for p in doc["probes"]
        ), doc["probes"]
    usable = doc["cpu"]["usable_cores"]
    assert usable is None or usable >= 1  # never zero or negative cores from a bad quota
    limit = doc["memory"]["cgroup_limit_bytes"]
    assert limit is None or limit > 0
    # The damaged machine can still be advised on: the facts round-trip into recommend.
    saved = tmp_path / "facts.json"
    saved.write_text(result.out)
    advice = cli(
        "recommend", "--json", "--no-bench", "--scenario", "training", "--facts", str(saved)
    )
    assert advice.code == 0, advice.err
    _validator("advice").validate(json.loads(advice.out))
