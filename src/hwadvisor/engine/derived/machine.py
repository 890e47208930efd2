"""Derived facts about the machine's CPU, memory and software (from the facts document)."""

from __future__ import annotations

import re

from hwadvisor.engine.derive import FactType, Registry
from hwadvisor.models.facts import Facts

MACHINE: Registry[Facts] = Registry("the facts document")

_SERVER_CPU = re.compile(
    r"xeon|epyc|neoverse|graviton|ampere|threadripper pro|grace", re.IGNORECASE
)
#: A CPU with this many cores or more is a server part whatever its name says.
SERVER_CORES = 32


def features_known(facts: Facts) -> bool:
    """Whether the CPU's feature flags were read (else every ``cpu.features.*`` is unknown)."""
    cpu = facts.cpu
    return bool(cpu.flags) or any(cpu.features.model_dump().values())


@MACHINE.fact(
    "cpu.server_class",
    FactType.BOOL,
    "a server CPU: Xeon / EPYC / Neoverse, or several sockets, or 32+ cores",
)
def server_class(facts: Facts) -> bool | None:
    """A server CPU by name, socket count or core count; unknown when nothing was read."""
    cpu = facts.cpu
    text = " ".join(x for x in (cpu.vendor, cpu.model) if x)
    cores = cpu.physical_cores or cpu.logical_cores
    if not (text or cores or cpu.sockets):
        return None
    return bool(_SERVER_CPU.search(text)) or (cpu.sockets or 1) > 1 or (cores or 0) >= SERVER_CORES


MACHINE.fact(
    "cpu.features_known",
    FactType.BOOL,
    "the feature flags were read (false: every cpu.features.* is unknown)",
)(features_known)


@MACHINE.fact("memory.usable_bytes", FactType.NUMBER, "min(total_bytes, cgroup_limit_bytes)")
def usable_memory(facts: Facts) -> int | None:
    """The memory a process here may use: the RAM, or the cgroup's limit when lower."""
    mem = facts.memory
    limits = [v for v in (mem.total_bytes, mem.cgroup_limit_bytes) if v]
    return min(limits) if limits else None


@MACHINE.fact("software.issue_count", FactType.NUMBER, "number of software.issues")
def issue_count(facts: Facts) -> int:
    """How many build/driver problems the probe stated."""
    return len(facts.software.issues)


@MACHINE.fact(
    "software.has_optimized_runtime", FactType.BOOL, "ONNX Runtime or OpenVINO is installed"
)
def has_optimized_runtime(facts: Facts) -> bool:
    """An optimized CPU inference runtime is installed."""
    return bool(facts.software.onnxruntime or facts.software.openvino)
