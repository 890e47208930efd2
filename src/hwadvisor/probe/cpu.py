"""The CPU probe: what ``lscpu`` and ``cat /proc/cpuinfo`` tell, plus container limits.

On Linux everything comes from ``/proc`` and ``/sys`` through the seams (milliseconds);
other systems go through py-cpuinfo and psutil (:mod:`hwadvisor.probe.cpu_other`); both
end in :func:`~hwadvisor.probe.cpu_build.finish_cpu`.
Three probe records: ``cpu`` (``/proc/cpuinfo`` and the affinity mask),
``cpu.topology`` (sysfs) and ``cpu.cgroup`` (the CPU quota).
"""

from __future__ import annotations

import math
from typing import Any

from hwadvisor.models.facts import Cpu
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe import cgroup, cpu_topology
from hwadvisor.probe.cpu_build import finish_cpu
from hwadvisor.probe.cpu_features import is_arm
from hwadvisor.probe.cpuinfo_parse import (
    first_value,
    flag_set,
    ghz_in_model_name,
    parse_cpuinfo,
    parse_cpulist,
    parse_float,
    parse_int,
    processor_blocks,
)
from hwadvisor.probe.microarch import arm_core, arm_vendor, x86_microarch, x86_vendor
from hwadvisor.probe.runner import ProbeLog, ProbeSkip
from hwadvisor.probe.seams import Seams


def _identity(blocks: list[dict[str, str]], architecture: str | None) -> dict[str, Any]:
    """Vendor, model name, architecture and microarchitecture from cpuinfo blocks."""
    vendor_id = first_value(blocks, "vendor_id")
    implementer = parse_int(first_value(blocks, "CPU implementer"), 0)
    arch = architecture or (
        "x86_64" if vendor_id else "aarch64" if implementer is not None else None
    )
    out: dict[str, Any] = {"architecture": arch}
    if is_arm(arch):
        core = arm_core(implementer, parse_int(first_value(blocks, "CPU part"), 0))
        out["vendor"] = arm_vendor(implementer)
        out["microarchitecture"] = core[0] if core else None
        out["model"] = first_value(blocks, "model name") or (core[1] if core else None)
    else:
        out["vendor"] = x86_vendor(vendor_id)
        out["microarchitecture"] = x86_microarch(
            vendor_id,
            parse_int(first_value(blocks, "cpu family")),
            parse_int(first_value(blocks, "model")),
            parse_int(first_value(blocks, "stepping")),
        )
        # POWER prints "cpu : POWER9, altivec supported"; RISC-V "uarch : sifive,u74-mc".
        out["model"] = first_value(blocks, "model name") or first_value(blocks, "cpu", "uarch")
    return out


def _cpuinfo_counts(procs: list[dict[str, str]]) -> dict[str, Any]:
    """Sockets and physical cores from x86 cpuinfo ids, for when sysfs lacks topology."""
    ids = {(b.get("physical id"), b.get("core id")) for b in procs}
    if not procs or (None, None) in ids:
        return {}
    return {"sockets": len({pkg for pkg, _ in ids}), "physical_cores": len(ids)}


def _cpuinfo_mhz(blocks: list[dict[str, str]]) -> float | None:
    """The clock cpuinfo prints: x86 ``cpu MHz`` or POWER ``clock : 2061.000000MHz``."""
    value = first_value(blocks, "cpu MHz")
    if value is None:
        value = (first_value(blocks, "clock") or "").lower().removesuffix("mhz")
    mhz = parse_float(value)
    return mhz if mhz and mhz > 0 else None


def _affinity(seams: Seams, online: frozenset[int] | None) -> int | None:
    """CPUs this process may run on: ``Cpus_allowed_list`` (Linux), else the system's."""
    allowed: frozenset[int] | None = None
    for line in (seams.fs.read("/proc/self/status") or "").splitlines():
        if line.startswith("Cpus_allowed_list:"):
            allowed = parse_cpulist(line.partition(":")[2])
            break
    if allowed is None:
        allowed = seams.system.affinity
    if allowed is None:
        return None
    # The mask may name possible-but-absent CPUs; only online ones can run the process.
    count = len(allowed & online) if online else len(allowed)
    return count or None


def _usable(affinity: int | None, logical: int | None, quota: float | None) -> int | None:
    cores = affinity or logical
    if quota is not None:
        limit = max(1, math.ceil(quota))
        cores = min(cores, limit) if cores else limit
    return cores


def probe_cpu(seams: Seams, log: ProbeLog) -> Cpu:
    """Probe the CPU; never raises: a missing source leaves its fields null and a record."""
    if seams.system.system != "Linux":
        from hwadvisor.probe.cpu_other import probe_cpu_other

        return probe_cpu_other(seams, log)
    f: dict[str, Any] = {"architecture": seams.system.machine or None}
    blocks: list[dict[str, str]] = []
    online: frozenset[int] | None = None
    quota: float | None = None
    with log.step("cpu", source="/proc/cpuinfo") as st:
        text = seams.fs.read("/proc/cpuinfo")
        if text is None:
            raise ProbeSkip(ProbeStatus.ABSENT, "/proc/cpuinfo not found")
        blocks = parse_cpuinfo(text)
        procs = processor_blocks(blocks)
        f.update(_identity(blocks, f["architecture"]))
        f["flags"] = flag_set(blocks)
        f["logical_cores"] = len(procs) or None
        f.update(_cpuinfo_counts(procs))
        f["base_mhz"] = ghz_in_model_name(f.get("model")) or _cpuinfo_mhz(blocks)
    with log.step("cpu.topology", source=cpu_topology.CPU_DIR) as st:
        online = cpu_topology.online_cpus(seams.fs)
        if online is None:
            raise ProbeSkip(ProbeStatus.ABSENT, "no sysfs CPU topology")
        f["logical_cores"] = len(online)
        counts = cpu_topology.sockets_and_cores(seams.fs, online)
        if counts is not None:
            f["sockets"], f["physical_cores"] = counts
        caches = cpu_topology.caches(seams.fs, online)
        f["l2_bytes"], f["l3_bytes"] = caches.l2_bytes, caches.l3_bytes
        f["numa_nodes"] = cpu_topology.numa_nodes(seams.fs)
        base, top = cpu_topology.clocks(seams.fs, online)
        f["base_mhz"] = base or f.get("base_mhz")
        f["max_mhz"] = top
    f["affinity_cores"] = _affinity(seams, online)
    with log.step("cpu.cgroup") as st:
        place, quota, src = cgroup.cpu_quota(seams.fs)
        if place is None:
            raise ProbeSkip(ProbeStatus.ABSENT, "no cgroup cpu controller mounted")
        st.source = src or place.dirs[0]
    f["cgroup_quota_cores"] = quota
    f["usable_cores"] = _usable(f["affinity_cores"], f.get("logical_cores"), quota)
    return finish_cpu(f)
