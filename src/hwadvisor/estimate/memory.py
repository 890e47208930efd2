"""Memory of a job: weights + gradients + optimizer states + activations + runtime, summed.

Formulas of REFERENCE.md "Training memory": fp32 AdamW 4+4+8 = 16 bytes/param, mixed
precision AdamW 16 bytes/param plus a 16-bit weight copy, SGD with momentum 12; transformer
activations s·b·h·L·(34 + 5·a·s/h) bytes at 16 bits without recomputation, ~2·s·b·h·L with
full recomputation; CNN activations = measured bytes per sample × batch; inference adds the
KV cache 2·L·kv_heads·head_dim·s·b·bytes for decoders. Reporting the maximum of the stages
instead of their sum would underestimate mixed-precision training by half.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.models.estimate import MemoryBreakdown
from hwadvisor.models.workload import ModelKind, Optimizer, Precision, Task, Workload

#: Fraction of a device's memory a job may plan to use (REFERENCE.md: ~10% headroom).
USABLE_FRACTION = 0.9
#: Runtime context per process: CUDA 0.5-2 GiB (REFERENCE.md); 1 GiB taken. CPU: 0.3 GiB.
GPU_CONTEXT_BYTES = 1 << 30
CPU_CONTEXT_BYTES = 300 << 20

_WEIGHT_BYTES = {
    Precision.FP32: 4,
    Precision.AMP: 4,
    Precision.BF16: 2,
    Precision.FP16: 2,
    Precision.INT8: 1,
}


@dataclass(frozen=True)
class MemoryPlan:
    """Knobs the fixes turn: 8-bit optimizer, recomputation, sharding stage, batch, GPUs."""

    precision: Precision
    batch: int
    checkpointing: bool = False
    optimizer_8bit: bool = False
    zero_stage: int = 0
    shards: int = 1


def _activation_bytes(wl: Workload, plan: MemoryPlan) -> int | None:
    b = plan.batch
    half = plan.precision in (Precision.AMP, Precision.BF16, Precision.FP16)
    if wl.kind in (ModelKind.ENCODER, ModelKind.DECODER) and wl.seq_len and wl.hidden and wl.layers:
        s, h, layers = wl.seq_len, wl.hidden, wl.layers
        heads = wl.heads or max(1, h // 64)
        if plan.checkpointing:
            per = 2.0 * s * b * h * layers
        else:
            per = s * b * h * layers * (34 + 5 * heads * s / h)
        # The formula is for 16-bit activations; fp32 doubles it.
        return int(per * (1 if half else 2))
    if wl.activation_bytes_per_sample is None:
        return None
    per_sample = wl.activation_bytes_per_sample * (0.5 if half else 1.0)
    if plan.checkpointing:
        # Keeping ~1/sqrt(n) segment boundaries: take a third as a round, stated figure.
        per_sample /= 3.0
    return int(per_sample * b)


def breakdown(wl: Workload, plan: MemoryPlan, *, gpu: bool) -> MemoryBreakdown | None:
    """The summed memory of ``wl`` under ``plan`` per device, or None when params are unknown."""
    if wl.params is None:
        return None
    n = wl.params
    runtime = GPU_CONTEXT_BYTES if gpu else CPU_CONTEXT_BYTES
    if wl.task is Task.INFER:
        weights = n * _WEIGHT_BYTES[plan.precision]
        kv = 0
        act: int | None = 0
        elem = (
            1
            if plan.precision is Precision.INT8
            else (4 if plan.precision is Precision.FP32 else 2)
        )
        if wl.kind is ModelKind.DECODER and wl.layers and wl.hidden and wl.seq_len:
            heads = wl.heads or max(1, wl.hidden // 64)
            kv_heads = wl.kv_heads or heads
            kv = 2 * wl.layers * kv_heads * (wl.hidden // heads) * wl.seq_len * plan.batch * elem
        if wl.hidden and wl.seq_len:
            # Only one layer's working set lives at a time when no gradients are kept.
            act = int(plan.batch * wl.seq_len * wl.hidden * 16 * elem)
        elif wl.activation_bytes_per_sample is not None:
            act = int(wl.activation_bytes_per_sample * plan.batch * elem / 4 / 4)
        else:
            act = None
        total = None if act is None else weights + kv + act + runtime
        return MemoryBreakdown(
            weights_bytes=weights,
            activations_bytes=act,
            kv_cache_bytes=kv,
            runtime_bytes=runtime,
            total_bytes=total,
        )
    mixed = plan.precision in (Precision.AMP, Precision.BF16, Precision.FP16)
    # AMP (autocast): fp32 weights and grads plus autocast's cached 16-bit weight copies,
    # 4 + 2 + 4 + 8 = 18 bytes/param. Pure 16-bit with an fp32 master copy:
    # 2 + 4 (master) + 2 + 8 = 16. fp32: 4 + 4 + 8 = 16 (REFERENCE.md: 16-18).
    weights = n * (6 if mixed else 4)
    grads = n * (2 if mixed and plan.precision is not Precision.AMP else 4)
    opt_per = 8 if wl.optimizer is Optimizer.ADAMW else 4
    if plan.optimizer_8bit and wl.optimizer is Optimizer.ADAMW:
        opt_per = 2
    opt = n * opt_per
    if plan.shards > 1:
        if plan.zero_stage >= 1:
            opt //= plan.shards
        if plan.zero_stage >= 2:
            grads //= plan.shards
        if plan.zero_stage >= 3:
            weights //= plan.shards
    act = _activation_bytes(wl, plan)
    total = None if act is None else weights + grads + opt + act + runtime
    return MemoryBreakdown(
        weights_bytes=weights,
        gradients_bytes=grads,
        optimizer_bytes=opt,
        activations_bytes=act,
        runtime_bytes=runtime,
        total_bytes=total,
    )


def fits(total: int | None, device_bytes: int | None) -> bool | None:
    """Whether ``total`` fits in ``device_bytes`` with the headroom; None when unknown."""
    if total is None or device_bytes is None:
        return None
    return total <= device_bytes * USABLE_FRACTION
