"""cgroup v1/v2 parsing and lookup: odd values, nested paths, ancestors' limits."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.probe import cgroup
from hwadvisor.probe.seams import HostFS


def make_fs(root: Path, files: dict[str, str]) -> HostFS:
    """A HostFS over ``root`` holding ``files``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return HostFS(root)


@pytest.mark.parametrize(
    ("text", "cores"),
    [
        ("150000 100000", 1.5),
        ("200000 100000\n", 2.0),
        ("50000", 0.5),  # the period defaults to 100 ms
        ("max 100000", None),
        ("0 100000", None),
        ("100000 0", None),
        ("-1 100000", None),
        ("garbage", None),
        ("", None),
        (f"{1 << 40} 1000", None),  # more cores than any machine: no limit
    ],
)
def test_cpu_max(text: str, cores: float | None) -> None:
    assert cgroup.parse_cpu_max(text) == cores


@pytest.mark.parametrize(
    ("quota", "period", "cores"),
    [
        ("200000", "100000", 2.0),
        ("-1", "100000", None),
        ("0", "100000", None),
        ("x", "1", None),
        (None, None, None),
    ],
)
def test_cfs_quota(quota: str | None, period: str | None, cores: float | None) -> None:
    assert cgroup.quota_cores(quota, period) == cores


@pytest.mark.parametrize(
    ("text", "limit"),
    [
        ("4294967296", 4294967296),
        ("max", None),
        ("9223372036854771712", None),  # the v1 "unlimited" sentinel
        ("0", None),
        ("-5", None),
        ("12 GiB", None),
        (None, None),
    ],
)
def test_memory_limit_values(text: str | None, limit: int | None) -> None:
    assert cgroup.parse_limit_bytes(text) == limit


@given(st.text(), st.text())
def test_cgroup_value_parsers_never_raise(a: str, b: str) -> None:
    cores = cgroup.parse_cpu_max(a)
    assert cores is None or 0 < cores < cgroup.UNLIMITED_CORES
    cgroup.quota_cores(a, b)
    limit = cgroup.parse_limit_bytes(a)
    assert limit is None or 0 < limit < cgroup.UNLIMITED_BYTES
    cgroup.stat_value(a, "inactive_file")


def test_stat_value_prefers_first_key() -> None:
    text = "inactive_file 10\ntotal_inactive_file 99\n"
    assert cgroup.stat_value(text, "total_inactive_file", "inactive_file") == 99
    assert cgroup.stat_value("inactive_file 10\n", "total_inactive_file", "inactive_file") == 10
    assert cgroup.stat_value("inactive_file x\n", "inactive_file") is None


def test_v2_nested_path_and_tightest_ancestor(tmp_path: Path) -> None:
    fs = make_fs(
        tmp_path,
        {
            "proc/self/cgroup": "0::/a/b\n",
            "sys/fs/cgroup/cgroup.controllers": "cpu memory\n",
            "sys/fs/cgroup/a/cpu.max": "300000 100000\n",
            "sys/fs/cgroup/a/b/cpu.max": "max 100000\n",
            "sys/fs/cgroup/a/memory.max": "1000000\n",
            "sys/fs/cgroup/a/memory.current": "400000\n",
            "sys/fs/cgroup/a/memory.stat": "inactive_file 100000\n",
            "sys/fs/cgroup/a/b/memory.max": "2000000\n",
        },
    )
    place, cores, src = cgroup.cpu_quota(fs)
    assert place is not None and place.version == 2
    assert place.dirs == ("/sys/fs/cgroup/a/b", "/sys/fs/cgroup/a", "/sys/fs/cgroup")
    assert cores == 3.0 and src == "/sys/fs/cgroup/a/cpu.max"
    _, limit = cgroup.memory_limit(fs)
    assert limit is not None
    assert limit.limit_bytes == 1000000  # the parent's limit binds the child
    assert (limit.usage_bytes, limit.inactive_file_bytes) == (400000, 100000)


def test_missing_nested_path_falls_back_to_mount_root(tmp_path: Path) -> None:
    fs = make_fs(
        tmp_path,
        {
            "proc/self/cgroup": "4:memory:/docker/abc\n3:cpu,cpuacct:/docker/abc\n",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "50000\n",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            "sys/fs/cgroup/memory/memory.limit_in_bytes": "9223372036854771712\n",
        },
    )
    place, cores, _ = cgroup.cpu_quota(fs)
    assert place is not None and place.version == 1
    assert place.dirs == ("/sys/fs/cgroup/cpu,cpuacct",)
    assert cores == 0.5
    mem_place, limit = cgroup.memory_limit(fs)
    assert mem_place is not None and limit is None


def test_no_cgroup_filesystem(tmp_path: Path) -> None:
    fs = make_fs(tmp_path, {"proc/self/cgroup": "0::/\n"})
    assert cgroup.cpu_quota(fs) == (None, None, None)
    assert cgroup.memory_limit(fs) == (None, None)


def test_hybrid_system_uses_v1_controllers(tmp_path: Path) -> None:
    fs = make_fs(
        tmp_path,
        {
            "proc/self/cgroup": "2:cpu,cpuacct:/\n0::/\n",
            "sys/fs/cgroup/unified/cgroup.controllers": "\n",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "-1\n",
            "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        },
    )
    place, cores, _ = cgroup.cpu_quota(fs)
    assert place is not None and place.version == 1 and cores is None
