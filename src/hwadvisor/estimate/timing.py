"""Time per step: each operator class priced at the device's rate for it, then summed.

A training step is the forward pass, a backward pass of twice its products at the same
sizes (grad-input and grad-weight) and twice its memory-bound traffic, and the optimizer
step (bytes over bandwidth). The naive "all FLOPs at the best matmul rate" is 3-4x too
optimistic on a CPU (REFERENCE.md); the gap is small products, memory-bound operators,
the optimizer and per-operator dispatch, which are priced here one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hwadvisor.estimate.rates import Rates
from hwadvisor.models.workload import (
    GemmBucket,
    ModelKind,
    OpProfile,
    Optimizer,
    Precision,
    Task,
    Workload,
)

#: Triad-equivalent bytes per parameter of one optimizer step of torch's foreach
#: implementations (several passes over param, grad and state). AdamW measured on the
#: development machine: 1.9 M params in 12 ms and 5.2 M in 30 ms at one thread with a
#: 14.5 GB/s triad, i.e. ~84-94 bytes/param; SGD with momentum scaled by its passes.
OPTIMIZER_BYTES_PER_PARAM = {Optimizer.ADAMW: 88.0, Optimizer.SGD: 32.0}
#: Host-to-device copy rate for inference inputs: PCIe 4 x16 at ~80% of its 32 GB/s
#: (REFERENCE.md streaming figures); an assumption, stated in the estimate.
HOST_LINK_BYTES_S = 25e9
#: Backward = this many times the forward's products and memory-bound traffic.
BACKWARD_FACTOR = 2.0


@dataclass
class StepTime:
    """Seconds per step by part; ``total`` None when something needed is unknown."""

    total: float | None
    parts: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _elem_scale(precision: Precision) -> float:
    """Memory-bound bytes relative to fp32."""
    return {
        Precision.FP32: 1.0,
        Precision.AMP: 0.75,
        Precision.BF16: 0.5,
        Precision.FP16: 0.5,
        Precision.INT8: 0.25,
    }[precision]


def _class_key(wl: Workload) -> str | None:
    if wl.task is Task.INFER:
        return (
            "inference"
            if wl.kind in (ModelKind.CNN, ModelKind.ENCODER, ModelKind.DECODER)
            else None
        )
    if wl.kind is ModelKind.CNN:
        return "cnn_train"
    if wl.kind in (ModelKind.ENCODER, ModelKind.DECODER):
        return "transformer_train"
    return None


class _Unknown(Exception):
    """A rate the step needs is unknown; the message is the estimate's note."""


def step_time(wl: Workload, rates: Rates) -> StepTime:
    """Seconds of one step of ``wl`` (one batch) on the device of ``rates``."""
    prof = wl.profile
    if prof is None:
        return StepTime(None, notes=["FLOPs per sample unknown: time unknown"])
    if not rates.gemm_points and not rates.class_rate:
        return StepTime(None, notes=rates.assumptions[-1:] or ["device rates unknown"])
    train = wl.task is Task.TRAIN
    notes: list[str] = []
    try:
        parts = _compute_parts(wl, prof, rates, notes)
    except _Unknown as exc:
        return StepTime(None, notes=[str(exc)])
    copy = _input_copy_time(wl, rates)
    if copy is not None:
        parts["input_copy"] = copy
    parts["overhead"] = _launches(prof, train) * rates.op_overhead_s
    if train and wl.params:
        _optimizer_part(wl.params, wl.optimizer, rates, parts, notes)
    return StepTime(sum(parts.values()), parts, notes)


def _compute_parts(
    wl: Workload, prof: OpProfile, rates: Rates, notes: list[str]
) -> dict[str, float]:
    """The FLOPs and memory-bound traffic of one step, priced (raises _Unknown)."""
    train = wl.task is Task.TRAIN
    # Samples' worth of forward work: the backward is BACKWARD_FACTOR forwards more.
    work = float(wl.batch_size) * (1.0 + (BACKWARD_FACTOR if train else 0.0))
    key = _class_key(wl)
    if rates.class_rate and key is not None:
        # Published end-to-end fractions already include the memory-bound operators of a
        # typical model of the class (the per-operator byte costs are CPU measurements and
        # would overcharge a GPU), so the class rate alone prices the step.
        return {"compute": (wl.flops_per_sample or 0.0) * work / rates.class_rate[key]}
    return _operator_parts(wl, prof, rates, work, notes)


def _input_copy_time(wl: Workload, rates: Rates) -> float | None:
    """Inference on a GPU copies each batch's input from host memory first (None: no copy)."""
    if not rates.gpu or wl.task is Task.TRAIN or not wl.input_shape:
        return None
    if wl.kind is ModelKind.ENCODER:
        return None  # token ids: a few bytes per sample
    return 4.0 * math.prod(wl.input_shape) * float(wl.batch_size) / HOST_LINK_BYTES_S


def _optimizer_part(
    params: int, optimizer: Optimizer, rates: Rates, parts: dict[str, float], notes: list[str]
) -> None:
    """The optimizer step: its passes over parameters, gradients and state, as bytes."""
    if rates.bandwidth:
        parts["optimizer"] = params * OPTIMIZER_BYTES_PER_PARAM[optimizer] / rates.bandwidth
    else:
        notes.append("memory bandwidth unknown: optimizer step not priced")


def _operator_parts(
    wl: Workload, prof: OpProfile, rates: Rates, work: float, notes: list[str]
) -> dict[str, float]:
    """Products, convolutions, other FLOPs and memory-bound operators, each at its rate."""
    parts = {"gemm": _gemm_time(prof, rates, work)}
    if prof.conv_flops:
        parts["conv"] = _conv_time(prof, rates, work)
    if prof.other_flops:
        rate = rates.gemm(256.0)
        parts["other"] = prof.other_flops * work / rate if rate else 0.0
    memory = _memory_time(wl, prof, rates)
    if memory is not None:
        parts["memory"] = memory
    elif prof.memory_bytes:
        notes.append("memory bandwidth unknown: memory-bound operators not priced")
    return parts


def _gemm_time(prof: OpProfile, rates: Rates, work: float) -> float:
    """Each bucket of matrix products at the matmul rate for its effective size."""
    seconds = 0.0
    for bucket in prof.gemm:
        rate = rates.gemm(bucket.size)
        if rate is None:
            raise _Unknown("matmul rate unknown: time unknown")
        seconds += bucket.flops * work / rate
    return seconds


def _conv_time(prof: OpProfile, rates: Rates, work: float) -> float:
    """Convolutions at the convolution rate, scaled to the size of their implicit product."""
    if rates.conv is None:
        raise _Unknown("convolution rate unknown: time unknown")
    buckets = prof.conv or [GemmBucket(size=0, flops=prof.conv_flops)]
    seconds = 0.0
    for bucket in buckets:
        rate = rates.conv_at(bucket.size) if bucket.size else rates.conv
        seconds += bucket.flops * work / (rate or rates.conv)
    return seconds


def _memory_time(wl: Workload, prof: OpProfile, rates: Rates) -> float | None:
    """Bytes of the memory-bound operators of both passes over the bandwidth (None: unknown)."""
    per_sample = prof.memory_bytes
    if wl.task is Task.TRAIN:
        back = prof.backward_memory_bytes
        per_sample += back if back is not None else BACKWARD_FACTOR * prof.memory_bytes
    total = per_sample * float(wl.batch_size) * _elem_scale(wl.precision)
    return total / rates.bandwidth if rates.bandwidth else None


def _launches(prof: OpProfile, train: bool) -> int:
    """Operator launches of one step: the forward's, plus the backward's when training."""
    if not train:
        return prof.kernels
    back = prof.backward_kernels
    return prof.kernels + (back if back is not None else int(BACKWARD_FACTOR * prof.kernels))
