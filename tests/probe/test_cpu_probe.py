"""The CPU probe end to end: the real machine, missing and unreadable files, other systems."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from hwadvisor.models.common import ProbeStatus
from hwadvisor.probe import cpu
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo


class DeniedFS(HostFS):
    """A HostFS that refuses to read some paths, as a hardened container may."""

    def __init__(self, root: Path, denied: set[str]) -> None:
        super().__init__(root)
        self.denied = denied

    def read(self, path: str) -> str | None:
        if path in self.denied:
            raise PermissionError(13, "Permission denied", path)
        return super().read(path)


def linux(fs: HostFS, affinity: frozenset[int] | None = None) -> Seams:
    """Seams of a Linux x86 machine whose files are ``fs``."""
    system = SystemInfo(system="Linux", machine="x86_64", env={}, affinity=affinity, is_real=False)
    return Seams(fs=fs, system=system, site_paths=())


def statuses(log: ProbeLog) -> dict[str, ProbeStatus]:
    """Probe step name -> status."""
    return {r.name: r.status for r in log.records}


def test_real_machine_usable_cores_match_affinity() -> None:
    if not Path("/proc/cpuinfo").exists():
        pytest.skip("not Linux")
    import os

    facts = cpu.probe_cpu(Seams(), ProbeLog())
    assert facts.usable_cores is not None and facts.usable_cores >= 1
    assert facts.affinity_cores == len(os.sched_getaffinity(0))
    assert facts.usable_cores <= facts.affinity_cores
    assert facts.flags, "no flags read from /proc/cpuinfo"


def test_nothing_to_read_gives_nulls_and_absent_records(tmp_path: Path) -> None:
    log = ProbeLog()
    facts = cpu.probe_cpu(linux(HostFS(tmp_path)), log)
    assert facts.logical_cores is None and facts.usable_cores is None and facts.flags == []
    assert facts.peak_gflops.fp32 is None
    assert statuses(log) == {
        "cpu": ProbeStatus.ABSENT,
        "cpu.topology": ProbeStatus.ABSENT,
        "cpu.cgroup": ProbeStatus.ABSENT,
    }


def test_denied_cpuinfo_is_recorded_and_sysfs_still_used(tmp_path: Path) -> None:
    for rel, text in {
        "proc/cpuinfo": "processor : 0\nflags : avx2\n",
        "sys/devices/system/cpu/online": "0-3\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    log = ProbeLog()
    facts = cpu.probe_cpu(linux(DeniedFS(tmp_path, {"/proc/cpuinfo"})), log)
    record = next(r for r in log.records if r.name == "cpu")
    assert record.status is ProbeStatus.DENIED and record.error and "/proc/cpuinfo" in record.error
    assert facts.logical_cores == 4 and facts.usable_cores == 4 and facts.flags == []


def test_affinity_from_system_when_status_lacks_it(tmp_path: Path) -> None:
    (tmp_path / "sys/devices/system/cpu").mkdir(parents=True)
    (tmp_path / "sys/devices/system/cpu/online").write_text("0-7\n")
    facts = cpu.probe_cpu(linux(HostFS(tmp_path), affinity=frozenset({0, 1, 2})), ProbeLog())
    assert facts.affinity_cores == 3 and facts.usable_cores == 3


@pytest.mark.parametrize(
    ("quota", "usable"), [("50000 100000", 1), ("250000 100000", 3), ("max 100000", 4)]
)
def test_usable_is_min_of_affinity_and_ceil_quota(tmp_path: Path, quota: str, usable: int) -> None:
    for rel, text in {
        "sys/devices/system/cpu/online": "0-3\n",
        "proc/self/status": "Cpus_allowed_list:\t0-3\n",
        "proc/self/cgroup": "0::/\n",
        "sys/fs/cgroup/cgroup.controllers": "cpu\n",
        "sys/fs/cgroup/cpu.max": quota + "\n",
    }.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    assert cpu.probe_cpu(linux(HostFS(tmp_path)), ProbeLog()).usable_cores == usable


def test_other_systems_use_py_cpuinfo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # py-cpuinfo takes a second to time the clock; a stand-in module answers instantly.
    fake = types.ModuleType("cpuinfo")
    fake.get_cpu_info = lambda: {  # type: ignore[attr-defined]
        "vendor_id_raw": "GenuineIntel",
        "brand_raw": "Intel(R) Core(TM) i7-1068NG7 CPU @ 2.30GHz",
        "flags": ["avx2", "fma", "sse2", "avx512f"],
        "hz_advertised": (2_300_000_000, 0),
    }
    monkeypatch.setitem(sys.modules, "cpuinfo", fake)
    system = SystemInfo(system="Darwin", machine="x86_64", env={}, affinity=None, is_real=False)
    log = ProbeLog()
    facts = cpu.probe_cpu(Seams(fs=HostFS(tmp_path), system=system, site_paths=()), log)
    assert facts.model and "i7-1068NG7" in facts.model
    assert facts.features.avx512f and facts.features.avx2
    assert facts.base_mhz == 2300.0
    assert facts.logical_cores is not None and facts.usable_cores == facts.logical_cores
    assert statuses(log)["cpu"] is ProbeStatus.OK


def test_other_systems_without_py_cpuinfo(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "cpuinfo", None)  # makes "import cpuinfo" fail
    system = SystemInfo(
        system="Windows", machine="AMD64", env={}, affinity=frozenset({0, 1}), is_real=False
    )
    log = ProbeLog()
    facts = cpu.probe_cpu(Seams(fs=HostFS(tmp_path), system=system, site_paths=()), log)
    assert statuses(log)["cpu"] is ProbeStatus.ABSENT
    assert facts.usable_cores == 2
