"""Which devices to measure: parse ``--device``, check torch can reach them, name them."""

from __future__ import annotations

import platform
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.models.facts import Facts

_SPEC = re.compile(r"^(cpu|cuda|mps|xpu|all)(?::(\d+))?$")
CHOICES = "cpu, cuda, cuda:N, mps, xpu, xpu:N or all"


@dataclass(frozen=True)
class Target:
    """One device to measure: its torch name, kind, display name and host threads."""

    device: str
    kind: str
    index: int | None
    name: str | None
    uuid: str | None
    threads: int

    @property
    def accelerator(self) -> bool:
        """Whether this is a GPU-like device (host<->device copies apply)."""
        return self.kind != "cpu"


def parse_device(spec: str) -> tuple[str, int | None]:
    """Split ``cuda:1`` into ``("cuda", 1)``; anything unknown is a UsageError (no torch needed)."""
    m = _SPEC.match(spec.strip().lower())
    if m is None or (m.group(2) is not None and m.group(1) in ("cpu", "mps", "all")):
        raise UsageError(f"unknown device '{spec}': use {CHOICES}")
    return m.group(1), int(m.group(2)) if m.group(2) is not None else None


def _cpu(torch: Any, facts: Facts | None) -> Target:
    name = (
        facts.cpu.model if facts is not None and facts.cpu.model else platform.processor() or None
    )
    # The usable cores (cgroup quota and affinity applied), else torch's own thread count.
    usable = facts.cpu.usable_cores if facts is not None else None
    return Target("cpu", "cpu", None, name, None, int(usable or torch.get_num_threads()))


def _cuda_count(torch: Any) -> int:
    return int(torch.cuda.device_count()) if torch.cuda.is_available() else 0


def _cuda(torch: Any, index: int) -> Target:
    props = torch.cuda.get_device_properties(index)
    raw_uuid = getattr(props, "uuid", None)
    uuid = None
    if raw_uuid is not None:
        text = str(raw_uuid)
        uuid = text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"
    return Target(f"cuda:{index}", "cuda", index, str(props.name), uuid, 1)


def _xpu_count(torch: Any) -> int:
    xpu = getattr(torch, "xpu", None)
    return int(xpu.device_count()) if xpu is not None and xpu.is_available() else 0


def _xpu(torch: Any, index: int) -> Target:
    return Target(f"xpu:{index}", "xpu", index, str(torch.xpu.get_device_name(index)), None, 1)


def _mps_available(torch: Any) -> bool:
    mps = getattr(getattr(torch, "backends", None), "mps", None)
    return bool(mps is not None and mps.is_available())


def _mps(facts: Facts | None) -> Target:
    name = None
    if facts is not None:
        name = next((g.name for g in facts.gpus if g.vendor.lower() == "apple"), None)
    return Target("mps", "mps", None, name or "Apple GPU (MPS)", None, 1)


def _indexed(
    kind: str, index: int | None, count: int, make: Callable[[int], Target]
) -> list[Target]:
    if count == 0:
        raise UsageError(f"no {kind} device is available to torch on this machine")
    if index is None:
        return [make(i) for i in range(count)]
    if index >= count:
        raise UsageError(f"{kind}:{index} does not exist: torch sees {count} {kind} device(s)")
    return [make(index)]


def resolve(torch: Any, spec: str, facts: Facts | None) -> list[Target]:
    """The devices ``spec`` names that torch can use; an absent one is a UsageError."""
    kind, index = parse_device(spec)
    if kind == "cpu":
        return [_cpu(torch, facts)]
    if kind == "cuda":
        return _indexed("cuda", index, _cuda_count(torch), lambda i: _cuda(torch, i))
    if kind == "xpu":
        return _indexed("xpu", index, _xpu_count(torch), lambda i: _xpu(torch, i))
    if kind == "mps":
        if not _mps_available(torch):
            raise UsageError("no mps device: torch.backends.mps.is_available() is False")
        return [_mps(facts)]
    targets = [_cpu(torch, facts)]
    targets += [_cuda(torch, i) for i in range(_cuda_count(torch))]
    targets += [_xpu(torch, i) for i in range(_xpu_count(torch))]
    if _mps_available(torch):
        targets.append(_mps(facts))
    return targets


def synchronizer(torch: Any, target: Target) -> Callable[[], object] | None:
    """A function that waits for ``target``'s queued work, or None for the CPU."""
    if target.kind in ("cuda", "xpu"):
        backend, index = getattr(torch, target.kind), target.index
        return lambda: backend.synchronize(index)
    if target.kind == "mps":
        return lambda: torch.mps.synchronize()
    return None
