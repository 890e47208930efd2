"""Container limits from cgroup v1 and v2: CPU quota and memory limit.

Command-line equivalents: ``cat /proc/self/cgroup``, then ``cat /sys/fs/cgroup/cpu.max``
(v2) or ``cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us`` (v1), and ``memory.max`` (v2) or
``memory.limit_in_bytes`` (v1). A limit set on a parent cgroup binds its children, so
the process's cgroup and each ancestor up to the mount root are read and the tightest
limit wins. When the path in ``/proc/self/cgroup`` does not exist under the mount (a
container that sees the host's cgroup names but has its own cgroup mounted as root),
the mount root is what applies.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.probe.seams import HostFS

CGROUP_ROOT = "/sys/fs/cgroup"
#: v1 prints "no limit" as the largest page-aligned signed 64-bit value (about 2^63);
#: anything this large is no limit at all.
UNLIMITED_BYTES = 1 << 60
#: A quota worth more cores than this is no limit (no machine has 65,536 cores).
UNLIMITED_CORES = float(1 << 16)


@dataclass(frozen=True)
class CgroupPlace:
    """Where one controller's files live: version and folders, the process's first."""

    version: int
    dirs: tuple[str, ...]


@dataclass(frozen=True)
class MemoryLimit:
    """The tightest memory limit and the usage figures of the cgroup that sets it."""

    limit_bytes: int
    usage_bytes: int | None
    inactive_file_bytes: int | None
    source: str


def _membership(fs: HostFS) -> dict[str, str]:
    """Controller (or "" for the v2 unified line) -> path, from ``/proc/self/cgroup``."""
    text = fs.read("/proc/self/cgroup") or ""
    paths: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        for name in controllers.split(",") if controllers else [""]:
            paths.setdefault(name, path or "/")
    return paths


def _chain(mount: str, path: str, fs: HostFS) -> tuple[str, ...]:
    """The existing folders from ``mount + path`` up to ``mount``, deepest first."""
    parts = [p for p in path.split("/") if p and p not in (".", "..")]
    dirs = []
    for depth in range(len(parts), 0, -1):
        candidate = mount + "/" + "/".join(parts[:depth])
        if fs.exists(candidate):
            dirs.append(candidate)
    dirs.append(mount)
    return tuple(dirs)


def _v1_mount(fs: HostFS, controller: str) -> str | None:
    """The v1 mount of ``controller`` (``cpu``, or a co-mount such as ``cpu,cpuacct``)."""
    names = fs.listdir(CGROUP_ROOT)
    for name in sorted(names, key=lambda n: (n != controller, n)):
        if controller in name.split(","):
            return f"{CGROUP_ROOT}/{name}"
    return None


def locate(fs: HostFS, controller: str, probe_file: str) -> CgroupPlace | None:
    """Find the folders holding ``controller``'s files (``probe_file`` tells v1 from v2).

    v1 wins when the process is in a v1 hierarchy for the controller (hybrid systems
    mount an empty v2 tree beside v1); v2 otherwise. None when neither is mounted.
    """
    member = _membership(fs)
    mount = _v1_mount(fs, controller)
    if mount is not None and fs.exists(f"{mount}/{probe_file}"):
        return CgroupPlace(1, _chain(mount, member.get(controller, "/"), fs))
    if fs.exists(f"{CGROUP_ROOT}/cgroup.controllers"):
        return CgroupPlace(2, _chain(CGROUP_ROOT, member.get("", "/"), fs))
    return None


def parse_cpu_max(text: str | None) -> float | None:
    """Cores allowed by a v2 ``cpu.max`` line (``"150000 100000"`` -> 1.5; ``max`` -> None)."""
    if text is None:
        return None
    fields = text.split()
    if not fields or fields[0] == "max":
        return None
    period = fields[1] if len(fields) > 1 else "100000"  # the kernel's default period
    return quota_cores(fields[0], period)


def quota_cores(quota: str | None, period: str | None) -> float | None:
    """Cores of a quota/period pair (v1 ``cfs_quota_us``; ``-1``, 0, garbage -> None)."""
    try:
        q, p = int((quota or "").strip()), int((period or "").strip())
    except ValueError:
        return None
    if q <= 0 or p <= 0:
        return None
    cores = q / p
    return None if cores >= UNLIMITED_CORES else cores


def parse_limit_bytes(text: str | None) -> int | None:
    """A memory limit in bytes (``max``, the v1 sentinel, 0 or garbage -> None)."""
    if text is None:
        return None
    value = text.strip()
    if not (value.isascii() and value.isdigit()):
        return None
    limit = int(value)
    return limit if 0 < limit < UNLIMITED_BYTES else None


def stat_value(text: str | None, *keys: str) -> int | None:
    """The first of ``keys`` found in a ``memory.stat`` text (``key value`` lines)."""
    if text is None:
        return None
    values: dict[str, str] = {}
    for line in text.splitlines():
        key, _, value = line.strip().partition(" ")
        values.setdefault(key, value.strip())
    for key in keys:
        raw = values.get(key, "")
        if raw.isascii() and raw.isdigit():
            return int(raw)
    return None


def cpu_quota(fs: HostFS) -> tuple[CgroupPlace | None, float | None, str | None]:
    """(place, quota in cores or None for no quota, the file that set it)."""
    place = locate(fs, "cpu", "cpu.cfs_quota_us")
    if place is None:
        return None, None, None
    best: tuple[float, str] | None = None
    for d in place.dirs:
        if place.version == 2:
            cores = parse_cpu_max(fs.read_first_line(f"{d}/cpu.max"))
            src = f"{d}/cpu.max"
        else:
            quota = fs.read_first_line(f"{d}/cpu.cfs_quota_us")
            cores = quota_cores(quota, fs.read_first_line(f"{d}/cpu.cfs_period_us"))
            src = f"{d}/cpu.cfs_quota_us"
        if cores is not None and (best is None or cores < best[0]):
            best = (cores, src)
    return place, (best[0] if best else None), (best[1] if best else None)


def memory_limit(fs: HostFS) -> tuple[CgroupPlace | None, MemoryLimit | None]:
    """(place, the tightest memory limit with its cgroup's usage, or None for no limit)."""
    place = locate(fs, "memory", "memory.limit_in_bytes")
    if place is None:
        return None, None
    limit_file, usage_file = (
        ("memory.max", "memory.current")
        if place.version == 2
        else ("memory.limit_in_bytes", "memory.usage_in_bytes")
    )
    best: MemoryLimit | None = None
    for d in place.dirs:
        limit = parse_limit_bytes(fs.read_first_line(f"{d}/{limit_file}"))
        if limit is None or (best is not None and limit >= best.limit_bytes):
            continue
        usage = fs.read_first_line(f"{d}/{usage_file}")
        # v1's total_inactive_file counts the whole subtree, like its usage figure.
        inactive = stat_value(fs.read(f"{d}/memory.stat"), "total_inactive_file", "inactive_file")
        best = MemoryLimit(
            limit_bytes=limit,
            usage_bytes=int(usage) if usage and (usage.isascii() and usage.isdigit()) else None,
            inactive_file_bytes=inactive,
            source=f"{d}/{limit_file}",
        )
    return place, best
