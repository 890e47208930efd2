"""One device as the LLM physics takes it (:class:`~hwadvisor.llm.DeviceSpec` figures):
this machine measured, or a catalog entry."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

from hwadvisor.catalog.schema import DeviceEntry, DeviceKind
from hwadvisor.errors import UsageError
from hwadvisor.estimate.timing.bands import band_class
from hwadvisor.estimate.timing.cpu import here_model
from hwadvisor.llm import DeviceSpec
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Precision


@dataclass(frozen=True)
class LlmDevice:
    """One device as the LLM physics takes it; ``spec`` None: its speed is unknown."""

    device: str
    name: str | None
    kind: str  # gpu, cpu, soc
    gpus: int
    spec: DeviceSpec | None
    memory: DeviceSpec | None  # the figures the memory fit reads (memory size only)
    device_memory_bytes: int | None
    basis: str
    notes: list[str] = field(default_factory=list)
    #: The error band class of its tokens/s (None: no validated band for this kind).
    band_class: str | None = None

    @property
    def gpu(self) -> bool:
        """A GPU (not a CPU or an Apple chip's unified memory)."""
        return self.kind == "gpu"


def _memory_only(name: str, kind: str, memory: float, fraction: float = 1.0) -> DeviceSpec:
    """A device whose memory size is known and nothing else: the memory fit reads only that.

    Its bandwidth and peak are placeholders (1 byte/s, 1 FLOP/s) that no speed is ever
    computed from.
    """
    return DeviceSpec(
        name=name,
        kind=kind,
        memory_bytes=memory,
        bandwidth_bytes_s=1.0,
        peak_flops={"fp32": 1.0},
        usable_memory_fraction=fraction,
    )


def here_target(facts: Facts | None, bench: BenchReport | None) -> LlmDevice:
    """This machine's CPU: its bandwidth, usable cores and matmul rate, measured by the
    bench or, without its figures, theoretical (the peak at an assumed efficiency and the
    bandwidth of the catalog's entry or the CPU class's memory:
    :func:`hwadvisor.estimate.timing.cpu.here_model`, band class ``cpu_theoretical``); unknown
    only without the cores or the memory. The memory fit uses the machine's memory (the
    cgroup limit when there is one)."""
    rates = here_model(facts, bench, Precision.FP32)
    notes = list(rates.assumptions)
    mem = rates.memory_bytes
    threads = facts.cpu.usable_cores if facts is not None else None
    rate = max((r for _, r in rates.gemm_points), default=None)
    spec = None
    band: str | None = None
    if rates.bandwidth and rate and threads and mem:
        measured = rates.basis.startswith("measured")
        make = (
            DeviceSpec.measured_cpu
            if measured
            else functools.partial(DeviceSpec.theoretical_cpu, source=rates.basis)
        )
        spec = make(
            name="here",
            bandwidth_bytes_s=rates.bandwidth,
            threads=threads,
            flops_per_thread=rate / threads,
            memory_bytes=float(mem),
        )
        band = None if measured else band_class(rates, 1, {})
        how = "measured" if measured else "theoretical"
        notes.append(
            f"here: llama.cpp-style CPU serving at the {how} {rates.bandwidth / 1e9:.1f} GB/s "
            f"and {rate / 1e9:.0f} GFLOP/s over {threads} threads"
        )
    else:
        notes.append(
            "here: this machine's cores or memory are unknown: tokens/s here unknown; "
            "give --facts FILE (hwadvisor check --json)"
        )
    memory = _memory_only("here", "cpu", float(mem)) if mem else None
    return LlmDevice("here", rates.name, "cpu", 1, spec, memory, mem, rates.basis, notes, band)


def catalog_target(entry: DeviceEntry, gpus: int) -> LlmDevice:
    """A catalog device: datasheet peaks and bandwidth x its achieved fractions."""
    kind = entry.kind.value
    notes: list[str] = []
    try:
        spec: DeviceSpec | None = DeviceSpec.from_catalog(entry)
    except UsageError as exc:
        spec = None
        notes.append(f"{entry.id}: {exc.message}: tokens/s unknown")
    fraction = getattr(entry, "gpu_memory_fraction", None) or 1.0
    memory = spec or _memory_only(entry.id, kind, float(entry.memory_bytes), fraction)
    basis = (
        f"catalog {entry.bandwidth_gb_s:g} GB/s x {entry.achieved.memory:g} and peak x "
        f"{entry.achieved.gemm:g} ({entry.source})"
    )
    n = gpus if entry.kind is DeviceKind.GPU else 1
    return LlmDevice(entry.id, entry.name, kind, n, spec, memory, entry.memory_bytes, basis, notes)
