"""Time per step: each operator class priced at the device's rate for it, then summed.

A training step is the forward pass, a backward pass of twice its products at the same
sizes (grad-input and grad-weight: Kaplan et al., arXiv:2001.08361, §2.1, C ≈ 6N per
token against 2N forward) and twice its memory-bound traffic, and the optimizer step.

On a CPU every part runs in line, one after the other:

- products at the device's matmul curve for their effective size, convolutions at its
  convolution rate (lowered along the curve for a product smaller than the measured one);
- memory-bound operators' counted bytes over the streaming bandwidth;
- the optimizer's passes over parameters, gradients and state as bytes, and its for-loop
  (torch.optim's path for CPU tensors) as operators per parameter tensor;
- every eager operator's host cost (dispatch, autograd recording).

A catalog GPU prices a counted model per operator on its roofline, with eager PyTorch's
host cost overlapping the device's work (:mod:`hwadvisor.estimate.timing.gpu`); a model
known only by its FLOPs takes the catalog's published end-to-end fraction of its class.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hwadvisor.estimate.timing.device import DeviceModel
from hwadvisor.estimate.timing.gpu import (
    eager_host_s,
    gpu_step,
    host_note,
    launch_count,
    memory_traffic,
)
from hwadvisor.models.workload import ModelKind, OpProfile, Optimizer, Task, Workload

#: Bytes per parameter one optimizer step reads and writes in torch's implementations,
#: counted from their passes (fp32): AdamW = weight decay (p: 8) + lerp of the first
#: moment (m, g -> m: 12) + the second moment's mul and addcmul (8 + 16) + sqrt, divide
#: and add eps of the denominator (3 x 8) + addcdiv into p (16) = 84; SGD with momentum =
#: mul and add into the buffer (8 + 12) + add into p (12) = 32.
OPTIMIZER_BYTES_PER_PARAM = {Optimizer.ADAMW: 84.0, Optimizer.SGD: 32.0}
#: The 8-bit and factored optimizers are timed as AdamW's passes (an upper bound: their
#: state is narrower, their kernels fused).
for _opt in (Optimizer.ADAMW8BIT, Optimizer.PAGED_ADAMW8BIT, Optimizer.ADAFACTOR):
    OPTIMIZER_BYTES_PER_PARAM[_opt] = OPTIMIZER_BYTES_PER_PARAM[Optimizer.ADAMW]
#: The aten operators torch.optim's for-loop runs per parameter tensor on a CPU, counted
#: with a dispatch mode on torch 2.13: AdamW's step-count ``add_``, weight decay's
#: ``mul_``, ``lerp_``, ``mul_``, ``addcmul_``, the count's ``item()``, ``sqrt``, ``div``,
#: ``add_``, ``addcdiv_``; SGD's ``mul_``, ``add_``, ``add_``.
FOR_LOOP_OPS = {Optimizer.ADAMW: 10, Optimizer.SGD: 3}
for _opt in (Optimizer.ADAMW8BIT, Optimizer.PAGED_ADAMW8BIT, Optimizer.ADAFACTOR):
    FOR_LOOP_OPS[_opt] = FOR_LOOP_OPS[Optimizer.ADAMW]
#: Host-to-device copy rate for inference inputs: the GPU's PCIe link x16 at ~78% of its
#: rate per direction (PCI-SIG: PCIe 3.0 8 GT/s, 4.0 16 GT/s, 5.0 32 GT/s a lane,
#: 128b/130b encoding; about 16, 32 and 64 GB/s); PCIe 4.0 where the catalog names none.
PCIE_BYTES_S = {"pcie3": 16e9, "pcie4": 32e9, "pcie5": 64e9}
HOST_LINK_EFFICIENCY = 0.78
HOST_LINK_BYTES_S = PCIE_BYTES_S["pcie4"] * HOST_LINK_EFFICIENCY


def host_link_bytes_s(dev: DeviceModel) -> float:
    """Bytes/s a batch crosses from host memory to ``dev`` at: its PCIe generation's rate."""
    kind = dev.links.host_kind
    rate = PCIE_BYTES_S.get(kind or "")
    return rate * HOST_LINK_EFFICIENCY if rate else HOST_LINK_BYTES_S


#: Backward = this many times the forward's products and memory-bound traffic.
BACKWARD_FACTOR = 2.0
#: Size of products whose size is unknown ("other" FLOPs).
OTHER_SIZE = 256.0
#: Decoders on GPUs keep the published end-to-end fraction (MFU) of LLM training, the
#: class those figures were measured on; other counted models go per operator.
_CLASS_PRICED = (ModelKind.DECODER,)


@dataclass
class StepTime:
    """Seconds per step by part; ``total`` None when something needed is unknown."""

    total: float | None
    parts: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class _Unknown(Exception):
    """A rate the step needs is unknown; the message is the estimate's note."""


def _class_key(wl: Workload) -> str | None:
    """The catalog's workload class of ``wl`` (its published end-to-end fraction)."""
    transformer = wl.kind in (ModelKind.ENCODER, ModelKind.DECODER)
    if wl.task is Task.INFER:
        if transformer:
            return "transformer_infer"
        return "inference" if wl.kind is ModelKind.CNN else None
    if wl.kind is ModelKind.CNN:
        return "cnn_train"
    return "transformer_train" if transformer else None


def step_time(wl: Workload, dev: DeviceModel) -> StepTime:
    """Seconds of one step of ``wl`` (one batch) on ``dev``."""
    prof = wl.profile
    if prof is None:
        return StepTime(None, notes=["FLOPs per sample unknown: time unknown"])
    if not dev.known:
        return StepTime(None, notes=list(dev.assumptions[-1:]) or ["device rates unknown"])
    if dev.roofline is not None and prof.op_groups and wl.kind not in _CLASS_PRICED:
        return _gpu_step_time(wl, prof, dev)
    notes: list[str] = []
    train = wl.task is Task.TRAIN
    work = float(wl.batch_size) * (1.0 + (BACKWARD_FACTOR if train else 0.0))
    key = _class_key(wl)
    try:
        if dev.gpu and dev.class_rate and key is not None:
            # The published end-to-end fractions include the memory-bound operators of a
            # typical model of the class, so the class rate alone prices the step.
            parts = {"compute": (wl.flops_per_sample or 0.0) * work / dev.class_rate[key]}
        else:
            parts = _operator_parts(wl, prof, dev, work, notes)
    except _Unknown as exc:
        return StepTime(None, notes=[str(exc)])
    _add_io_and_optimizer(wl, dev, parts, notes)
    if dev.gpu:
        # A GPU's host launches ahead asynchronously: only the host time the GPU's own
        # work does not cover shows.
        host, launches = eager_host_s(wl, prof)
        device = sum(parts.values())
        parts["overhead"] = max(0.0, host - device)
        notes.append(host_note(dev.device, host, launches, device))
    else:
        parts["overhead"] = launch_count(prof, train) * dev.op_overhead_s
    return StepTime(sum(parts.values()), parts, notes)


def _gpu_step_time(wl: Workload, prof: OpProfile, dev: DeviceModel) -> StepTime:
    """A counted model on a catalog GPU: roofline per operator, eager host cost."""
    assert dev.roofline is not None
    step = gpu_step(wl, prof, dev.roofline)
    parts = dict(step.parts)
    notes = [f"{dev.device}: {n}" for n in step.notes]
    _add_io_and_optimizer(wl, dev, parts, notes)
    device = sum(parts.values())
    parts["overhead"] = max(0.0, step.host_s - device)
    notes.append(
        f"{dev.device}: each operator on the roofline (compute at the catalog's GEMM "
        "fraction, memory at its bandwidth fraction)"
    )
    notes.append(host_note(dev.device, step.host_s, step.launches, device))
    return StepTime(sum(parts.values()), parts, notes)


def _add_io_and_optimizer(
    wl: Workload, dev: DeviceModel, parts: dict[str, float], notes: list[str]
) -> None:
    """The input's copy to a GPU for inference, and a training step's optimizer."""
    if (
        dev.gpu
        and wl.task is not Task.TRAIN
        and wl.input_shape
        and wl.kind is not ModelKind.ENCODER
    ):
        # Each batch's input is copied from host memory first (an encoder's token ids: a
        # few bytes a sample, left out).
        parts["input_copy"] = (
            4.0 * math.prod(wl.input_shape) * wl.batch_size / host_link_bytes_s(dev)
        )
    if wl.task is Task.TRAIN and wl.params:
        optimizer = _optimizer_s(wl, dev, notes)
        if optimizer is not None:
            parts["optimizer"] = optimizer


def _optimizer_s(wl: Workload, dev: DeviceModel, notes: list[str]) -> float | None:
    """The optimizer step: its bytes over the bandwidth; on a CPU also its for-loop's
    operators for each parameter tensor, at the per-operator cost."""
    if not dev.bandwidth:
        notes.append("memory bandwidth unknown: optimizer step not priced")
        return None
    seconds = (wl.params or 0) * OPTIMIZER_BYTES_PER_PARAM[wl.optimizer] / dev.bandwidth
    if not dev.gpu and wl.param_tensors:
        ops = FOR_LOOP_OPS[wl.optimizer]
        seconds += wl.param_tensors * ops * dev.op_overhead_s
        notes.append(
            f"{dev.device}: the {wl.optimizer.value} step's for-loop runs {ops} operators for "
            f"each of the {wl.param_tensors} parameter tensors"
        )
    return seconds


def _operator_parts(
    wl: Workload, prof: OpProfile, dev: DeviceModel, work: float, notes: list[str]
) -> dict[str, float]:
    """Products, convolutions, other FLOPs and memory-bound operators, each at its rate."""
    parts = {"gemm": 0.0}
    for bucket in prof.gemm:
        rate = dev.gemm(bucket.size)
        if rate is None:
            raise _Unknown("matmul rate unknown: time unknown")
        parts["gemm"] += bucket.flops * work / rate
    if prof.conv_flops:
        parts["conv"] = _conv_s(wl, prof, dev)
    if prof.other_flops:
        rate = dev.gemm(OTHER_SIZE)
        parts["other"] = prof.other_flops * work / rate if rate else 0.0
    memory = _memory_bytes(wl, prof, weighted=dev.cost_weighted)
    if memory and dev.bandwidth:
        parts["memory"] = memory / dev.bandwidth
    elif memory:
        notes.append("memory bandwidth unknown: memory-bound operators not priced")
    return parts


def _conv_s(wl: Workload, prof: OpProfile, dev: DeviceModel) -> float:
    """Convolutions at the convolution rate (the backward's, two forwards' FLOPs, at the
    measured backward rate where there is one), each bucket lowered along the matmul
    curve where its implicit product is smaller than the measured convolution's: a small
    product reuses less of what it loads."""
    train = wl.task is Task.TRAIN
    seconds = 0.0
    for backward in (False, True) if train else (False,):
        rate = dev.conv_rate(backward=backward)
        if rate is None:
            raise _Unknown("convolution rate unknown: time unknown")
        buckets = [(float(b.size), b.flops) for b in prof.conv] or [(0.0, prof.conv_flops)]
        for size, flops in buckets:
            seconds += (
                flops * (BACKWARD_FACTOR if backward else 1.0) / (rate * _lowering(dev, size))
            )
    return seconds * wl.batch_size


def _lowering(dev: DeviceModel, size: float) -> float:
    """The share of the convolution rate a product of effective ``size`` reaches: the
    matmul curve's kernel rate there over its kernel rate at the measured convolution's
    size (at most 1). A convolution is one call over all its positions, so each square
    product's call cost leaves its rate first (:func:`_kernel_rate`)."""
    if not size or not dev.conv_size:
        return 1.0
    at, ref = _kernel_rate(dev, size), _kernel_rate(dev, dev.conv_size)
    if not at or not ref:
        return 1.0
    return min(1.0, at / ref)


#: The least share of a measured square product's time taken as its kernel's; the rest
#: may be its call's cost.
MIN_KERNEL_SHARE = 0.5


def _kernel_rate(dev: DeviceModel, size: float) -> float | None:
    """FLOP/s of a square product of ``size`` with the per-operator call cost taken out
    of its time (never more than :data:`MIN_KERNEL_SHARE` of it)."""
    rate = dev.gemm(size)
    if not rate:
        return None
    seconds = 2.0 * size**3 / rate
    kernel = max(seconds - dev.op_overhead_s, MIN_KERNEL_SHARE * seconds)
    return 2.0 * size**3 / kernel


def _memory_bytes(wl: Workload, prof: OpProfile, *, weighted: bool) -> float:
    """Bytes the step's memory-bound operators move (both passes in training), at the
    job's element size.

    ``weighted`` (this machine, whose bandwidth the bench measured as a triad): the
    profile's cost-weighted totals, each operator's bytes times how many times slower than
    a triad it runs per byte on a CPU (its per-element work: batch norm's statistics,
    softmax's exponentials, dropout's random numbers;
    :data:`hwadvisor.estimate.workload.counting.MEMORY_OPS`). A catalog CPU, of which
    only the datasheet's streaming bandwidth is known, streams the counted bytes.
    """
    if not weighted and prof.op_groups:
        implicit = wl.task is Task.TRAIN and not any(g.backward for g in prof.op_groups)
        return memory_traffic(wl, prof)[0] * (1.0 + BACKWARD_FACTOR if implicit else 1.0)
    per_sample = prof.memory_bytes
    if wl.task is Task.TRAIN:
        back = prof.backward_memory_bytes
        per_sample += back if back is not None else BACKWARD_FACTOR * prof.memory_bytes
    return per_sample * wl.batch_size * wl.precision.activation_bytes / 4.0
