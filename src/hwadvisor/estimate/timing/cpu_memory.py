"""This machine's memory bandwidth where no bench measured it, and where the figure comes from.

The streaming bandwidth a CPU job sees is the smaller of two things:

- what the memory delivers: the DDR wire rate (channels x MT/s x bus width) at the share
  streaming reaches (:data:`STREAM_FRACTION`, or the catalog entry's own);
- what the cores used can draw: each core keeps a bounded number of cache-line misses in
  flight (Little's law), so a few cores of a large socket draw far less than the socket
  delivers (:data:`PER_CORE_DRAW`).

The wire rate comes, in this order, from

1. the catalog, for a known processor: a CPU entry whose model number the facts' CPU
   name carries (``Xeon Platinum 8480+`` is ``xeon-8480``), or the Apple chip whose name it
   is (``Apple M2`` is ``apple-m2``, its unified memory);
2. a default for the CPU's class (:class:`CpuClass`): the class's channel count and bus
   width at the memory speed of its microarchitecture's platform (:data:`MEMORY_MT_S`),
   else the class's usual speed.

The facts document carries no memory channel count or DIMM speed (the DMI tables that
``dmidecode -t memory`` reads need root), so no figure comes from the machine's own DIMMs.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.match import match_gpu
from hwadvisor.cost.fleet import match_cpu

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.models.facts import Facts


class CpuClass(str, Enum):
    """The kinds of machine a CPU's default memory is taken for."""

    LAPTOP = "laptop"
    DESKTOP = "desktop"
    WORKSTATION = "workstation"
    SERVER = "server"
    ARM_BOARD = "arm_board"
    APPLE = "apple"


#: The share of the DDR wire rate a streaming kernel reaches: 70-80% (STREAM results on
#: DDR4 and DDR5 servers and desktops; the catalog's CPU entries carry 0.7-0.75).
STREAM_FRACTION = 0.75
#: Bytes/s one core draws when it streams alone: the project's own bench measured a triad
#: of 28.7 GB/s on 2 vCPUs of a Sapphire/Emerald Rapids KVM guest (14.4 GB/s a core,
#: tests/data/bench/recorded-xeon-amx-kvm.json), rounded down.
PER_CORE_DRAW = 14e9


@dataclass(frozen=True)
class ClassMemory:
    """A class's default memory: channels of ``bus_bytes`` at ``mt_s`` unless the
    microarchitecture's platform says otherwise."""

    channels: int
    bus_bytes: int
    mt_s: int
    source: str


#: Each class's default memory, per socket.
CLASS_MEMORY: dict[CpuClass, ClassMemory] = {
    CpuClass.LAPTOP: ClassMemory(2, 8, 3200, "two 64-bit channels (dual-channel SO-DIMM or LPDDR)"),
    CpuClass.DESKTOP: ClassMemory(2, 8, 3200, "two 64-bit channels (dual-channel DIMMs)"),
    CpuClass.WORKSTATION: ClassMemory(4, 8, 3200, "four 64-bit channels (AMD Threadripper TRX40/sTRX4, Intel Xeon W-2000)"),
    CpuClass.SERVER: ClassMemory(8, 8, 3200, "eight 64-bit channels a socket (Xeon Ice Lake-SP and Sapphire Rapids, EPYC Rome and Milan)"),
    CpuClass.ARM_BOARD: ClassMemory(1, 4, 3200, "one 32-bit LPDDR4 channel (Raspberry Pi 4 Model B: LPDDR4-3200)"),
    CpuClass.APPLE: ClassMemory(1, 16, 6400, "Apple M2/M3: 128-bit LPDDR5-6400, 100 GB/s (Apple's tech specs)"),
}  # fmt: skip

#: The memory speed (MT/s) the platform of each microarchitecture supports, as the
#: vendors' product pages state it for its mainstream parts (Intel ARK "Memory Types",
#: AMD product pages, Raspberry Pi product briefs).
MEMORY_MT_S: dict[str, int] = {
    "sandybridge": 1333, "ivybridge": 1600, "haswell": 1600, "broadwell": 1600,
    "skylake": 2400, "cannonlake": 2400, "icelake": 3200, "tigerlake": 3200,
    "alderlake": 4800, "raptorlake": 4800, "meteorlake": 5600, "arrowlake": 6400,
    "lunarlake": 8533,
    "skylake_avx512": 2666, "cascadelake": 2933, "cooperlake": 3200,
    "icelake_server": 3200, "sapphirerapids": 4800, "emeraldrapids": 5600,
    "graniterapids": 6400,
    "zen": 2666, "zen2": 3200, "zen3": 3200, "zen4": 4800, "zen5": 5600,
    "cortex_a72": 3200, "cortex_a76": 4267,
    "neoverse_n1": 3200, "neoverse_v1": 4800, "neoverse_n2": 4800, "neoverse_v2": 5600,
}  # fmt: skip

_SERVER_NAMES = re.compile(
    r"xeon|epyc|opteron|neoverse|graviton|ampere|thunderx|kunpeng|a64fx", re.I
)
_WORKSTATION_NAMES = re.compile(r"threadripper(?!.*\bpro\b)|xeon.*\bw-?2\d{3}", re.I)
#: Intel's N-series (N95, N100, N200, N305): one memory channel (Intel ARK, "Max # of
#: Memory Channels: 1").
_ONE_CHANNEL_NAMES = re.compile(r"\bn(95|97|1\d\d|2\d\d|3\d\d)\b", re.I)
#: Intel and AMD mobile parts: a model number with a U, H, HQ, HK, HS, HX, Y, P, G1-G7 or
#: M suffix (i7-8550U, i5-1135G7, Ryzen 7 5800H), Core Ultra, and the N-series.
_LAPTOP_NAMES = re.compile(
    r"\b\d{3,5}(u|h|hq|hk|hs|hx|y|p|m|g\d)\b|core\(tm\) ultra|core ultra|\bn\d{2,3}\b", re.I
)  # fmt: skip


def cpu_class(facts: Facts) -> CpuClass:
    """The class of this machine's CPU, from its name, vendor, architecture and sockets."""
    cpu = facts.cpu
    name = cpu.model or ""
    arm = (cpu.architecture or "").lower() in {"aarch64", "arm64"} or (cpu.architecture or "").startswith("arm")  # fmt: skip
    if (cpu.vendor or "").lower() == "apple" or name.lower().startswith("apple"):
        return CpuClass.APPLE
    if _WORKSTATION_NAMES.search(name):
        return CpuClass.WORKSTATION
    if (cpu.sockets or 1) > 1 or _SERVER_NAMES.search(name):
        return CpuClass.SERVER
    if arm:
        core = cpu.microarchitecture or ""
        return CpuClass.ARM_BOARD if core.startswith("cortex") or not core else CpuClass.SERVER
    if _LAPTOP_NAMES.search(name):
        return CpuClass.LAPTOP
    # A guest of a hypervisor whose name gives nothing away is a cloud server's share.
    return CpuClass.SERVER if facts.host.virtualization else CpuClass.DESKTOP


@dataclass(frozen=True)
class Bandwidth:
    """The streaming bandwidth a job on ``cores`` cores sees, and how it was found."""

    bytes_s: float
    wire_bytes_s: float
    how: str  # "catalog" or "class default"
    cpu_class: CpuClass
    text: str


def catalog_memory(facts: Facts) -> DeviceEntry | None:
    """The catalog entry of this machine's processor: a CPU entry by model number, or the
    Apple chip of that name (its unified memory); None when the catalog lacks it."""
    devices = load_devices()
    entry = match_cpu(facts.cpu.model, devices)
    if entry is not None:
        return entry
    name = facts.cpu.model or ""
    if name.lower().startswith("apple"):
        ident = match_gpu(name)
        return devices.get(ident) if ident else None
    return None


def _cores(facts: Facts) -> int | None:
    """The cores the job runs on: the usable ones, at most the physical ones (SMT
    siblings share their core's misses in flight)."""
    cores = facts.cpu.usable_cores
    if cores and facts.cpu.physical_cores:
        cores = min(cores, facts.cpu.physical_cores)
    return cores


def stated_memory_bandwidth(facts: Facts, cores: int | None = None) -> Bandwidth | None:
    """The bandwidth of this machine without a bench: the catalog's or its class's wire
    rate at the streaming share, at most what its cores (``cores``, else the usable
    physical ones) draw; None without the cores."""
    cores = min(cores, _cores(facts) or cores) if cores else _cores(facts)
    if not cores:
        return None
    klass = cpu_class(facts)
    sockets = facts.cpu.sockets or 1
    entry = catalog_memory(facts)
    if entry is not None:
        wire = entry.bandwidth_gb_s * 1e9 * (sockets if entry.kind.value == "cpu" else 1)
        fraction = entry.achieved.memory
        where = f"catalog {entry.id}: {entry.bandwidth_gb_s:g} GB/s" + (
            f" a socket x {sockets}" if sockets > 1 and entry.kind.value == "cpu" else ""
        )
        how = "catalog"
    else:
        mem = CLASS_MEMORY[klass]
        mt_s = MEMORY_MT_S.get(facts.cpu.microarchitecture or "", mem.mt_s)
        if klass is CpuClass.APPLE:
            mt_s = mem.mt_s
        channels = 1 if _ONE_CHANNEL_NAMES.search(facts.cpu.model or "") else mem.channels
        wire = channels * mem.bus_bytes * mt_s * 1e6 * sockets
        fraction = STREAM_FRACTION
        speed = (
            f"{mt_s} MT/s, the platform's of {facts.cpu.microarchitecture}"
            if (facts.cpu.microarchitecture or "") in MEMORY_MT_S and klass is not CpuClass.APPLE
            else f"{mt_s} MT/s"
        )
        layout = mem.source if channels == mem.channels else "one 64-bit channel (Intel N-series)"
        where = f"{klass.value} default: {layout} at {speed} = {wire / 1e9:.1f} GB/s" + (
            f" over {sockets} sockets" if sockets > 1 else ""
        )
        how = "class default"
    delivered = wire * fraction
    drawn = cores * PER_CORE_DRAW
    bandwidth = min(delivered, drawn)
    limit = (
        f"{fraction:.0%} of it streamed"
        if delivered <= drawn
        else f"at most {cores} cores x {PER_CORE_DRAW / 1e9:.0f} GB/s a core draws"
    )
    text = f"theoretical {bandwidth / 1e9:.1f} GB/s: {where}; {limit}"
    return Bandwidth(bandwidth, wire, how, klass, text)
