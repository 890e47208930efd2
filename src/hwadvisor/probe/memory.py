"""The memory probe: ``free -b`` from ``/proc/meminfo``, clamped by the container's limit.

A process in a container with a memory limit can use no more than the limit, minus what
the cgroup already holds that the kernel cannot drop (usage less the inactive file cache:
``memory.stat``'s ``inactive_file`` in the kernel's cgroup v2 documentation,
Documentation/admin-guide/cgroup-v2.rst, which ``docker stats`` also subtracts). Two probe
records: ``memory`` and ``memory.cgroup``.
"""

from __future__ import annotations

from hwadvisor.models.facts import Memory
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe import cgroup
from hwadvisor.probe.runner import ProbeLog, ProbeSkip
from hwadvisor.probe.seams import Seams

_UNITS = {"kb": 1024, "mb": 1024**2, "gb": 1024**3, "b": 1, "": 1}


def parse_meminfo(text: str) -> dict[str, int]:
    """``{key: bytes}`` of ``/proc/meminfo`` (``MemTotal: 24683656 kB``); bad lines skipped."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        fields = rest.split()
        if not fields or not (fields[0].isascii() and fields[0].isdigit()):
            continue
        unit = _UNITS.get(fields[1].lower() if len(fields) > 1 else "")
        if unit is not None:
            values.setdefault(key.strip(), int(fields[0]) * unit)
    return values


def clamp_available(available: int | None, limit: cgroup.MemoryLimit) -> int:
    """Memory available under a cgroup limit: min(system available, limit - working set)."""
    used = (limit.usage_bytes or 0) - (limit.inactive_file_bytes or 0)
    headroom = max(0, limit.limit_bytes - max(0, used))
    return headroom if available is None else min(available, headroom)


def _probe_other(log: ProbeLog) -> Memory:
    """Total and available through psutil on systems without ``/proc``."""
    with log.step("memory", source="psutil"):
        import psutil

        vm = psutil.virtual_memory()
        return Memory(total_bytes=int(vm.total), available_bytes=int(vm.available))
    return Memory()


def probe_memory(seams: Seams, log: ProbeLog) -> Memory:
    """Probe total, available and the cgroup limit; never raises."""
    if seams.system.system != "Linux":
        return _probe_other(log)
    total: int | None = None
    available: int | None = None
    with log.step("memory", source="/proc/meminfo"):
        text = seams.fs.read("/proc/meminfo")
        if text is None:
            raise ProbeSkip(ProbeStatus.ABSENT, "/proc/meminfo not found")
        info = parse_meminfo(text)
        total = info.get("MemTotal")
        # Kernels before 3.14 lack MemAvailable; free + page cache is the old estimate.
        available = info.get("MemAvailable")
        if available is None and "MemFree" in info:
            available = info["MemFree"] + info.get("Cached", 0) + info.get("Buffers", 0)
    limit: cgroup.MemoryLimit | None = None
    with log.step("memory.cgroup") as st:
        place, limit = cgroup.memory_limit(seams.fs)
        if place is None:
            raise ProbeSkip(ProbeStatus.ABSENT, "no cgroup memory controller mounted")
        st.source = limit.source if limit else place.dirs[0]
    if limit is None:
        return Memory(total_bytes=total, available_bytes=available)
    return Memory(
        total_bytes=total,
        available_bytes=clamp_available(available, limit),
        cgroup_limit_bytes=limit.limit_bytes,
    )
