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
from hwadvisor.models.workload import GemmBucket, ModelKind, Optimizer, Precision, Task, Workload

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


def step_time(wl: Workload, rates: Rates) -> StepTime:
    """Seconds of one step of ``wl`` (one batch) on the device of ``rates``."""
    prof = wl.profile
    if prof is None:
        return StepTime(None, notes=["FLOPs per sample unknown: time unknown"])
    if not rates.gemm_points and not rates.class_rate:
        return StepTime(None, notes=rates.assumptions[-1:] or ["device rates unknown"])
    train = wl.task is Task.TRAIN
    mult = 1.0 + (BACKWARD_FACTOR if train else 0.0)
    b = float(wl.batch_size)
    parts: dict[str, float] = {}
    notes: list[str] = []
    mem_per_sample = prof.memory_bytes
    if train:
        back = prof.backward_memory_bytes
        mem_per_sample += back if back is not None else BACKWARD_FACTOR * prof.memory_bytes
    mem_bytes = mem_per_sample * b * _elem_scale(wl.precision)
    mem_time = mem_bytes / rates.bandwidth if rates.bandwidth else None
    key = _class_key(wl)
    if rates.class_rate and key is not None:
        # Published end-to-end fractions already include the memory-bound operators of a
        # typical model of the class (the per-operator byte costs are CPU measurements and
        # would overcharge a GPU), so the class rate alone prices the step.
        flops = (wl.flops_per_sample or 0.0) * b * mult
        parts["compute"] = flops / rates.class_rate[key]
    else:
        gemm_t = 0.0
        for bucket in prof.gemm:
            rate = rates.gemm(bucket.size)
            if rate is None:
                return StepTime(None, notes=["matmul rate unknown: time unknown"])
            gemm_t += bucket.flops * b * mult / rate
        parts["gemm"] = gemm_t
        if prof.conv_flops:
            if rates.conv is None:
                return StepTime(None, notes=["convolution rate unknown: time unknown"])
            buckets = prof.conv or [GemmBucket(size=0, flops=prof.conv_flops)]
            conv_t = 0.0
            for bucket in buckets:
                rate = rates.conv_at(bucket.size) if bucket.size else rates.conv
                conv_t += bucket.flops * b * mult / (rate or rates.conv)
            parts["conv"] = conv_t
        if prof.other_flops:
            rate = rates.gemm(256.0)
            parts["other"] = prof.other_flops * b * mult / rate if rate else 0.0
        if mem_time is not None:
            parts["memory"] = mem_time
        elif prof.memory_bytes:
            notes.append("memory bandwidth unknown: memory-bound operators not priced")
    if rates.gpu and not train and wl.input_shape and wl.kind is not ModelKind.ENCODER:
        # Inference copies each batch's input from host memory to the device first.
        parts["input_copy"] = 4.0 * math.prod(wl.input_shape) * b / HOST_LINK_BYTES_S
    kernels = prof.kernels
    if train:
        kernels += (
            prof.backward_kernels
            if prof.backward_kernels is not None
            else int(BACKWARD_FACTOR * prof.kernels)
        )
    parts["overhead"] = kernels * rates.op_overhead_s
    if train and wl.params:
        if rates.bandwidth:
            parts["optimizer"] = (
                wl.params * OPTIMIZER_BYTES_PER_PARAM[wl.optimizer] / rates.bandwidth
            )
        else:
            notes.append("memory bandwidth unknown: optimizer step not priced")
    return StepTime(sum(parts.values()), parts, notes)
