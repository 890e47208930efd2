"""Record THIS machine's CPU, memory and host files into a recorded-host folder.

Copies what the probes read (``/proc/cpuinfo``, ``/proc/meminfo``, ``/proc/self/status``,
``/proc/self/cgroup``, sysfs topology/caches/nodes/cpufreq, the cgroup files on the path
of this process) and writes ``host.json`` from the running system. ``expected.json`` is
kept when it exists: it is written by hand from what the machine is known to be.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import socket
from pathlib import Path

_PROC = ["proc/cpuinfo", "proc/meminfo", "proc/self/status", "proc/self/cgroup", "proc/1/cgroup",
         "proc/sys/kernel/osrelease", "etc/os-release", ".dockerenv", "run/.containerenv",
         "sys/devices/system/cpu/online", "sys/devices/system/cpu/possible",
         "sys/devices/system/cpu/present",
         "sys/devices/system/clocksource/clocksource0/available_clocksource",
         "sys/class/dmi/id/sys_vendor", "sys/class/dmi/id/product_name", "sys/hypervisor/type"]  # fmt: skip
_CGROUP_FILES = ["cpu.max", "cpu.cfs_quota_us", "cpu.cfs_period_us", "memory.max", "memory.current",
                 "memory.limit_in_bytes", "memory.usage_in_bytes", "memory.stat", "cgroup.controllers"]  # fmt: skip


def _copy(root: Path, rel: str) -> None:
    src = Path("/") / rel
    if not src.is_file():
        return
    dst = root / rel
    dst.parent.mkdir(parents=True, exist_ok=True)
    # /proc and /sys files report size 0, so read them rather than copyfile; a file the
    # kernel refuses to read is simply not recorded.
    with contextlib.suppress(OSError):
        dst.write_bytes(src.read_bytes())


def _cgroup_paths() -> list[str]:
    """Cgroup folders of this process and their ancestors, relative to /."""
    rels: set[str] = set()
    base = Path("/sys/fs/cgroup")
    mounts = [p for p in base.iterdir() if p.is_dir()] if base.is_dir() else []
    own = Path("/proc/self/cgroup").read_text().splitlines()
    for line in own:
        _, controllers, path = line.split(":", 2)
        names = controllers.split(",") if controllers else []
        parts = [p for p in path.split("/") if p]
        for mount in [base, *mounts]:
            if names and not set(mount.name.split(",")) & set(names) and mount != base:
                continue
            for depth in range(len(parts) + 1):
                rels.add(str((mount / "/".join(parts[:depth])).relative_to("/")))
    return sorted(rels)


def record_real(root: Path) -> None:
    """Copy this machine's probe inputs into ``root`` (keeping ``expected.json``)."""
    expected = (root / "expected.json").read_text() if (root / "expected.json").exists() else None
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    for rel in _PROC:
        _copy(root, rel)
    cpu_dir = Path("/sys/devices/system/cpu")
    for cpu in sorted(cpu_dir.glob("cpu[0-9]*")):
        for f in (cpu / "topology").glob("*"):
            _copy(root, str(f.relative_to("/")))
        for index in (cpu / "cache").glob("index*"):
            for name in ("level", "type", "size", "shared_cpu_list"):
                _copy(root, str((index / name).relative_to("/")))
        for name in ("base_frequency", "cpuinfo_max_freq"):
            _copy(root, str((cpu / "cpufreq" / name).relative_to("/")))
    for node in Path("/sys/devices/system/node").glob("node[0-9]*"):
        _copy(root, str((node / "cpulist").relative_to("/")))
    for rel in _cgroup_paths():
        (root / rel).mkdir(parents=True, exist_ok=True)
        for name in _CGROUP_FILES:
            _copy(root, f"{rel}/{name}")
    st = os.statvfs("/dev/shm")
    host = {
        "system": platform.system(), "machine": platform.machine(), "release": platform.release(),
        "hostname": socket.gethostname(), "python": platform.python_version(), "env": {},
        "affinity": sorted(os.sched_getaffinity(0)), "shm_bytes": st.f_frsize * st.f_blocks,
    }  # fmt: skip
    (root / "host.json").write_text(json.dumps(host, indent=1) + "\n")
    if expected is not None:
        (root / "expected.json").write_text(expected)
