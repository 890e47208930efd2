"""CPU topology, caches, NUMA nodes and clocks from sysfs.

Command-line equivalents: ``lscpu -e`` (``/sys/devices/system/cpu/cpuN/topology``),
``lscpu -C`` (``cpuN/cache/indexK``), ``numactl -H`` (``/sys/devices/system/node``) and
``cpupower frequency-info`` (``cpufreq/policyN``). Every reader returns None when sysfs
lacks the files (containers sometimes mask them, and other systems have none), so the
caller can fall back to ``/proc/cpuinfo``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hwadvisor.probe.cpuinfo_parse import parse_cpulist, parse_int, parse_size
from hwadvisor.probe.seams import HostFS

CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"
_NODE = re.compile(r"^node[0-9]+$")
_POLICY = re.compile(r"^policy[0-9]+$")


@dataclass(frozen=True)
class Caches:
    """L2 of one core and L3 summed over its distinct instances."""

    l2_bytes: int | None
    l3_bytes: int | None


def online_cpus(fs: HostFS) -> frozenset[int] | None:
    """Ids of the online logical CPUs (``/sys/devices/system/cpu/online``)."""
    cpus = parse_cpulist(fs.read_first_line(f"{CPU_DIR}/online"))
    return cpus or None


def sockets_and_cores(fs: HostFS, cpus: frozenset[int]) -> tuple[int, int] | None:
    """(sockets, physical cores) from each CPU's package id and SMT sibling list.

    A physical core is one distinct sibling set (``core_cpus_list``, called
    ``thread_siblings_list`` before Linux 5.x); counting sets rather than ``core_id``
    values stays right on parts whose core ids repeat per die.
    """
    packages: set[int] = set()
    cores: set[frozenset[int]] = set()
    for cpu in sorted(cpus):
        topo = f"{CPU_DIR}/cpu{cpu}/topology"
        pkg = parse_int(fs.read_first_line(f"{topo}/physical_package_id"))
        siblings = parse_cpulist(fs.read_first_line(f"{topo}/core_cpus_list"))
        if siblings is None:
            siblings = parse_cpulist(fs.read_first_line(f"{topo}/thread_siblings_list"))
        if pkg is None or not siblings:
            return None
        packages.add(pkg)
        cores.add(siblings)
    return (len(packages), len(cores)) if cores else None


def caches(fs: HostFS, cpus: frozenset[int]) -> Caches:
    """L2 per core (of the first CPU) and L3 total over distinct ``shared_cpu_list`` sets.

    CPUs already covered by a seen L3 instance are skipped, so a large machine reads a
    handful of cache folders rather than every CPU's.
    """
    l2: int | None = None
    l3_total = 0
    l3_seen: set[frozenset[int]] = set()
    covered: set[int] = set()
    for cpu in sorted(cpus):
        if cpu in covered and l2 is not None:
            continue
        base = f"{CPU_DIR}/cpu{cpu}/cache"
        for index in fs.listdir(base):
            if not index.startswith("index"):
                continue
            level = fs.read_first_line(f"{base}/{index}/level")
            kind = fs.read_first_line(f"{base}/{index}/type")
            if kind == "Instruction":
                continue
            size = parse_size(fs.read_first_line(f"{base}/{index}/size"))
            if level == "2" and l2 is None:
                l2 = size
            elif level == "3" and size is not None:
                shared = parse_cpulist(fs.read_first_line(f"{base}/{index}/shared_cpu_list"))
                key = shared or frozenset({cpu})
                if key not in l3_seen:
                    l3_seen.add(key)
                    l3_total += size
                    covered.update(key)
    return Caches(l2_bytes=l2, l3_bytes=l3_total or None)


def numa_nodes(fs: HostFS) -> int | None:
    """Number of NUMA nodes (``nodeN`` folders), or None without the sysfs folder."""
    count = sum(1 for name in fs.listdir(NODE_DIR) if _NODE.match(name))
    return count or None


def _khz_to_mhz(text: str | None) -> float | None:
    khz = parse_int(text)
    return khz / 1000.0 if khz and khz > 0 else None


def clocks(fs: HostFS, cpus: frozenset[int] | None) -> tuple[float | None, float | None]:
    """(base MHz, max MHz) from cpufreq; the fastest policy wins on hybrid parts.

    ``base_frequency`` is written by intel_pstate; ``cpuinfo_max_freq`` by every driver.
    """
    folders = [
        f"{CPU_DIR}/cpufreq/{p}" for p in fs.listdir(f"{CPU_DIR}/cpufreq") if _POLICY.match(p)
    ]
    if not folders and cpus:
        folders = [f"{CPU_DIR}/cpu{min(cpus)}/cpufreq"]
    base: float | None = None
    top: float | None = None
    for folder in folders:
        b = _khz_to_mhz(fs.read_first_line(f"{folder}/base_frequency"))
        m = _khz_to_mhz(fs.read_first_line(f"{folder}/cpuinfo_max_freq"))
        if b is not None and (base is None or b > base):
            base = b
        if m is not None and (top is None or m > top):
            top = m
    return base, top
