"""The knobs a memory fix turns, below both the activation model and the sum of the parts
(:mod:`.activations`, :mod:`.parts`), which read them."""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.models.workload import Precision


@dataclass(frozen=True)
class MemoryPlan:
    """Knobs the fixes turn: precision, batch, recomputation, 8-bit state, sharding, offload."""

    precision: Precision
    batch: int
    checkpointing: bool = False
    optimizer_8bit: bool = False
    zero_stage: int = 0
    shards: int = 1
    offload: bool = False
