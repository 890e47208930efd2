"""The memory probe: /proc/meminfo parsing and the cgroup clamp."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.models.common import ProbeStatus
from hwadvisor.probe import memory
from hwadvisor.probe.cgroup import MemoryLimit
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo

MEMINFO = "MemTotal:       24683656 kB\nMemFree:        23369020 kB\nMemAvailable:   23615776 kB\nHugePages_Total:       0\n"


def linux(fs: HostFS) -> Seams:
    """Seams of a Linux machine whose files are ``fs``."""
    return Seams(fs=fs, system=SystemInfo(system="Linux", is_real=False, env={}), site_paths=())


def test_meminfo_units() -> None:
    values = memory.parse_meminfo(MEMINFO)
    assert values["MemTotal"] == 24683656 * 1024
    assert values["MemAvailable"] == 23615776 * 1024
    assert values["HugePages_Total"] == 0  # unitless counts stay counts


@given(st.text())
def test_meminfo_never_raises(text: str) -> None:
    assert all(v >= 0 for v in memory.parse_meminfo(text).values())


@given(
    st.integers(0, 1 << 40),
    st.integers(1, 1 << 40),
    st.integers(0, 1 << 40),
    st.integers(0, 1 << 40),
)
def test_clamp_is_within_limit_and_system(
    avail: int, limit: int, usage: int, inactive: int
) -> None:
    clamped = memory.clamp_available(avail, MemoryLimit(limit, usage, inactive, "x"))
    assert 0 <= clamped <= min(avail, limit)


def test_clamp_subtracts_working_set_not_page_cache() -> None:
    lim = MemoryLimit(limit_bytes=1000, usage_bytes=600, inactive_file_bytes=200, source="x")
    assert memory.clamp_available(10_000, lim) == 600  # 1000 - (600 - 200)
    assert memory.clamp_available(None, lim) == 600


def test_old_kernel_without_memavailable(tmp_path: Path) -> None:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/meminfo").write_text(
        "MemTotal: 100 kB\nMemFree: 10 kB\nCached: 20 kB\nBuffers: 5 kB\n"
    )
    mem = memory.probe_memory(linux(HostFS(tmp_path)), ProbeLog())
    assert mem.total_bytes == 100 * 1024
    assert mem.available_bytes == 35 * 1024


def test_missing_meminfo_is_absent_not_an_error(tmp_path: Path) -> None:
    log = ProbeLog()
    mem = memory.probe_memory(linux(HostFS(tmp_path)), log)
    assert mem.total_bytes is None and mem.available_bytes is None
    statuses = {r.name: r.status for r in log.records}
    assert statuses == {"memory": ProbeStatus.ABSENT, "memory.cgroup": ProbeStatus.ABSENT}


def test_real_machine_matches_proc_meminfo() -> None:
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        return
    mem = memory.probe_memory(Seams(), ProbeLog())
    total = memory.parse_meminfo(meminfo.read_text())["MemTotal"]
    assert mem.total_bytes is not None
    assert abs(mem.total_bytes - total) <= 0.01 * total
