"""Time per step: each operator class priced at the device's rate for it, then summed.

A training step is the forward pass, a backward pass of twice its products at the same
sizes (grad-input and grad-weight) and twice its memory-bound traffic, and the optimizer
step (bytes over bandwidth). The naive "all FLOPs at the best matmul rate" is 3-4x too
optimistic on a CPU (measured on the project's machine: an MLP, a small CNN and a
transformer encoder ran 3-4x slower than their counted FLOPs at the measured 1024³
matmul rate); the gap is small products, memory-bound operators,
the optimizer and per-operator dispatch, which are priced here one by one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from hwadvisor.bench.sweep import FOR_LOOP_OPS, OPTIMIZER_KERNELS, RNN_LAYER
from hwadvisor.estimate.memory.activations import counts_of
from hwadvisor.estimate.timing.convpath import NATIVE_CONV_BATCH, NATIVE_CONV_INPUT, native_path
from hwadvisor.estimate.timing.gpu import eager_host_s, gpu_step, host_note
from hwadvisor.estimate.timing.levels import MemoryLevels
from hwadvisor.estimate.timing.rates import Rates
from hwadvisor.estimate.workload.counting import STREAMING_FAMILIES, effective_size
from hwadvisor.glibc import always_mapped
from hwadvisor.models.workload import (
    ConvShape,
    GemmBucket,
    ModelKind,
    OpProfile,
    Optimizer,
    Precision,
    Task,
    Workload,
)

#: Bytes per parameter one optimizer step reads and writes in torch's foreach
#: implementations, counted from their passes (fp32): AdamW = weight decay (p: 8) +
#: lerp of the first moment (m, g -> m: 12) + the second moment's mul and addcmul (8 + 16)
#: + sqrt, divide and add eps of the denominator (3 x 8) + addcdiv into p (16) = 84; SGD
#: with momentum = mul and add into the buffer (8 + 12) + add into p (12) = 32. (The
#: development machine measured ~84-94 bytes/param at its triad rate, consistent.)
OPTIMIZER_BYTES_PER_PARAM = {Optimizer.ADAMW: 84.0, Optimizer.SGD: 32.0}
#: What the step keeps in play per parameter: the parameter, its gradient, two moments
#: and the two temporaries of the denominator (6 x 4 bytes), touched again and again by
#: its passes: the working set that decides which cache level the step streams from.
OPTIMIZER_PASS_BYTES_PER_PARAM = 24.0
#: Families of the profile that are products, not memory-bound operators.
COMPUTE_FAMILIES = frozenset({"conv", "gemm", "other"})
#: Families that stream operands other operators wrote: past the private caches they
#: come from DRAM (``estimate.levels``). Normalisation, pooling, softmax and dropout do
#: more work per element: their own curves price them within 2x in a step, and their
#: DRAM figures would over-charge them (softmax's was 4.6x its L3 figure here, most of it
#: page faults of a fresh 32 MiB output, which the sweep no longer times). The masked
#: selections have no DRAM figure (``bench.sweep``): past the private caches they take the
#: slower of their own rate and the element-wise DRAM one.
COLD_FAMILIES = frozenset({"eltwise", "masked_fill", "where", *STREAMING_FAMILIES})
#: Host-to-device copy rate for inference inputs: PCIe 4 x16 at ~80% of its 32 GB/s
#: (PCI-SIG PCIe 4.0: 16 GT/s per lane, 128b/130b encoding); an assumption, stated in the estimate.
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
        if wl.kind in (ModelKind.ENCODER, ModelKind.DECODER):
            return "transformer_infer"
        return "inference" if wl.kind is ModelKind.CNN else None
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
    if rates.roofline is not None and prof.op_groups and wl.kind not in _CLASS_PRICED:
        return _gpu_step_time(wl, prof, rates)
    notes: list[str] = []
    try:
        parts = _compute_parts(wl, prof, rates, notes)
    except _Unknown as exc:
        return StepTime(None, notes=[str(exc)])
    copy = _input_copy_time(wl, rates)
    if copy is not None:
        parts["input_copy"] = copy
    if train and wl.params:
        _optimizer_part(wl, rates, parts, notes)
    # A CPU runs each operator's dispatch in line; a GPU's host launches ahead
    # asynchronously, so only the host time the GPU's own work does not cover shows. The
    # GPU's host cost is eager PyTorch's per operator, the same as the roofline path's.
    if rates.gpu:
        host, launches = eager_host_s(wl, prof)
        device = sum(parts.values())
        parts["overhead"] = max(0.0, host - device)
        notes.append(host_note(rates.device, host, launches, device))
    else:
        parts["overhead"] = _cpu_overhead(prof, train, rates)
    return StepTime(sum(parts.values()), parts, notes)


#: Decoders on GPUs keep the published end-to-end fraction (MFU) of LLM training, the
#: class those figures were measured on. An encoder with counted operators is priced
#: operator by operator, as a CNN is: against NVIDIA's BERT-large figures that halves the
#: device-bound rows' median error (22.7% to 12.5%), because the LLM fraction (40-57%
#: MFU, hidden sizes of thousands) does not transfer to a hidden size of 1,024, whose
#: memory-bound operators weigh more (docs/estimates.md 4b).
_CLASS_PRICED = (ModelKind.DECODER,)


def _gpu_step_time(wl: Workload, prof: OpProfile, rates: Rates) -> StepTime:
    """A counted model on a catalog GPU: roofline per operator, eager host cost (gpu_time)."""
    assert rates.roofline is not None
    step = gpu_step(wl, prof, rates.roofline)
    parts = dict(step.parts)
    notes = [f"{rates.device}: {n}" for n in step.notes]  # layout (gpu_time.layout_notes)
    copy = _input_copy_time(wl, rates)
    if copy is not None:
        parts["input_copy"] = copy
    if wl.task is Task.TRAIN and wl.params:
        _optimizer_part(wl, rates, parts, notes)
    device = sum(parts.values())
    parts["overhead"] = max(0.0, step.host_s - device)
    notes.append(
        f"{rates.device}: each operator on the roofline (compute at the catalog's GEMM "
        "fraction, memory at its bandwidth fraction)"
    )
    notes.append(host_note(rates.device, step.host_s, step.launches, device))
    return StepTime(sum(parts.values()), parts, notes)


def _compute_parts(
    wl: Workload, prof: OpProfile, rates: Rates, notes: list[str]
) -> dict[str, float]:
    """The FLOPs and memory-bound traffic of one step, priced (raises _Unknown)."""
    train = wl.task is Task.TRAIN
    # Samples' worth of forward work: the backward is BACKWARD_FACTOR forwards more.
    work = float(wl.batch_size) * (1.0 + (BACKWARD_FACTOR if train else 0.0))
    key = _class_key(wl)
    if rates.gpu and rates.class_rate and key is not None:
        # A GPU's published end-to-end fractions already include the memory-bound operators
        # of a typical model of the class (the per-operator byte costs are CPU measurements
        # and would overcharge a GPU), so the class rate alone prices the step. A catalog
        # CPU has no published class fraction: it is priced operator by operator, as "here"
        # is, at its catalog rates (rates.catalog_rates).
        return {"compute": (wl.flops_per_sample or 0.0) * work / rates.class_rate[key]}
    return _operator_parts(wl, prof, rates, work, notes)


def _input_copy_time(wl: Workload, rates: Rates) -> float | None:
    """Inference on a GPU copies each batch's input from host memory first (None: no copy)."""
    if not rates.gpu or wl.task is Task.TRAIN or not wl.input_shape:
        return None
    if wl.kind is ModelKind.ENCODER:
        return None  # token ids: a few bytes per sample
    return 4.0 * math.prod(wl.input_shape) * float(wl.batch_size) / HOST_LINK_BYTES_S


def _per_tensor(tensors: int | None, optimizer: Optimizer, rates: Rates, notes: list[str]) -> float:
    """What torch.optim's for-loop (its path for CPU tensors) pays per parameter tensor:
    the bench's ``adamw_step`` / ``sgd_step`` figure, else (unmeasured, unreliable, or a
    catalog CPU) the loop's operators (:data:`FOR_LOOP_OPS`) at the per-operator cost,
    the bench's ``dispatch`` figure or the device's default."""
    assert rates.levels is not None
    if not tensors:
        return 0.0
    each = rates.levels.optimizer_tensor_s.get(optimizer.value)
    kernel = OPTIMIZER_KERNELS[optimizer.value]
    if each:
        source = f"the bench's {kernel} figure"
    else:
        ops = FOR_LOOP_OPS[optimizer.value]
        call = rates.levels.dispatch_s or rates.op_overhead_s
        if not call:
            return 0.0
        each = ops * call
        source = (
            f"no reliable {kernel} figure: its {ops} operators a tensor at "
            f"{call * 1e6:.1f} µs each, the per-operator cost"
        )
    notes.append(
        f"{rates.device}: the {optimizer.value} step's for-loop costs {each * 1e6:.1f} µs "
        f"for each of the {tensors} parameter tensors beyond their bytes ({source})"
    )
    return tensors * each


def _optimizer_part(wl: Workload, rates: Rates, parts: dict[str, float], notes: list[str]) -> None:
    """The optimizer step: its passes over parameters, gradients and state, as bytes, and
    on a CPU with the bench's figure, its for-loop's cost per parameter tensor.

    On a CPU the parameters and moments were last touched by the previous step's
    optimizer, and the whole step's traffic ran through the caches in between: where the
    step's memory-bound operators move more than the sweep's DRAM working set (sized past
    the L3 the threads reach), the state has been evicted, and past the private caches it
    comes from DRAM, as an element-wise operator's cold operands do (``levels``); a step
    that moves less leaves it in the L3, at its working set's hot rate. (Priced hot, a
    VGG-style CNN's AdamW step took 1.8-2.1x its price in the step, its 1.1 M parameters'
    26 MB of state within the L3 but its step moving hundreds of MB.)
    """
    params, optimizer = wl.params or 0, wl.optimizer
    moved = params * OPTIMIZER_BYTES_PER_PARAM[optimizer]
    levels = rates.levels
    if levels is not None:
        ws = params * OPTIMIZER_PASS_BYTES_PER_PARAM
        far = levels.far_bytes
        moves = _step_bytes(wl, wl.profile) if wl.profile is not None else 0.0
        evicted = far is not None and moves > far
        seconds = levels.seconds("eltwise", ws, cold=evicted) if ws else None
        if evicted and far is not None and ws > (levels.private_bytes or 0.0):
            notes.append(
                f"{rates.device}: the optimizer's state ({ws / 2**20:,.0f} MiB) is evicted "
                f"between steps, which move {moves / 2**20:,.0f} MiB (the sweep's DRAM "
                f"working set: {far / 2**20:,.0f} MiB): read at the DRAM figure"
            )
        spb = seconds / ws if seconds is not None else None
        if spb is not None:
            parts["optimizer"] = moved * spb + _per_tensor(
                wl.param_tensors, optimizer, rates, notes
            )
            return
    if rates.bandwidth:
        parts["optimizer"] = moved / rates.bandwidth
    else:
        notes.append("memory bandwidth unknown: optimizer step not priced")


def _step_bytes(wl: Workload, prof: OpProfile) -> float:
    """Bytes the step's memory-bound operators move (both passes in training)."""
    train = wl.task is Task.TRAIN
    scale = _elem_scale(wl.precision)
    return sum(
        g.count * g.bytes * wl.batch_size * scale
        for g in prof.op_groups
        if (train or not g.backward) and g.family not in COMPUTE_FAMILIES
    )


def _operator_parts(
    wl: Workload, prof: OpProfile, rates: Rates, work: float, notes: list[str]
) -> dict[str, float]:
    """Products, convolutions, other FLOPs and memory-bound operators, each at its rate."""
    parts = {"gemm": _gemm_time(prof, rates, work, cold=_cold_weights(wl, prof, rates, notes))}
    if prof.conv_flops:
        native = _native_convs(wl, prof, rates)
        parts["conv"] = _conv_time(prof, rates, wl, native)
        if native:
            notes.append(_native_note(native, wl.batch_size, rates))
        reorders = _reorder_seconds(wl, prof, rates, native)
        if reorders:
            parts["conv"] += reorders
            notes.append(
                f"{rates.device}: {reorders * 1e3:,.1f} ms of oneDNN's layout reorders around "
                "the NCHW convolutions (input, weights and output to its blocked layout and "
                "back; in the backward the gradients too) at the element-wise DRAM rate past "
                "the private caches: the bench's convolution is channels-last and pays none"
            )
    if prof.other_flops:
        rate = rates.gemm(256.0)
        parts["other"] = prof.other_flops * work / rate if rate else 0.0
    memory = _memory_time(wl, prof, rates, notes)
    if memory is not None:
        parts["memory"] = memory
    elif prof.memory_bytes:
        notes.append("memory bandwidth unknown: memory-bound operators not priced")
    touch = _first_touch_time(wl, prof, rates, notes)
    if touch:
        parts["first_touch"] = touch
    return parts


def _first_touch_time(wl: Workload, prof: OpProfile, rates: Rates, notes: list[str]) -> float:
    """The step's page faults at the bench's ``first_touch`` rate. A CPU step only; 0
    without the figure.

    Where the workload's memory was counted, the faults are the count's: its third step
    replayed through glibc's malloc (``MemoryCounts.faults_at``): the heap pages glibc
    trims and the next step faults in again, and the tensors it maps fresh. Otherwise
    only the tensors glibc maps fresh at every call (``glibc.always_mapped``: over
    32 MiB). Measured on a Zen 3 guest: a fresh 33 MiB tensor took 20 ms to fill where a
    31 MiB one took 1.5 ms, as long as a kept one (0.5 ns a byte more: the kernel zeroing
    each page it faults in).
    """
    spb, source = _first_touch_rate(rates)
    if not spb:
        return 0.0
    train = wl.task is Task.TRAIN
    counts = counts_of(wl)
    replayed = counts.faults_at(wl.batch_size, infer=not train) if counts is not None else None
    if replayed is not None and wl.precision is Precision.FP32:
        if replayed:
            what = "training step" if train else "inference pass"
            notes.append(
                f"here: a steady {what} faults in {replayed / 2**20:,.0f} MiB of pages "
                "(the count's third, replayed through glibc's malloc: the heap it trims and "
                f"grows again, the tensors it maps fresh), at {1.0 / spb / 1e9:.2f} GB/s "
                f"({source})"
            )
        return replayed * spb
    if not prof.allocations:
        return 0.0
    scale = float(wl.batch_size) * _elem_scale(wl.precision)
    fresh = [
        (a.count, a.bytes * scale)
        for a in prof.allocations
        if (train or not a.backward) and always_mapped(int(a.bytes * scale))
    ]
    if not fresh:
        return 0.0
    moved = sum(n * b for n, b in fresh)
    notes.append(
        f"here: {sum(n for n, _ in fresh)} tensors a step of over 32 MiB ({moved / 2**20:,.0f} MiB) "
        "are fresh mappings of glibc's malloc at every call: their pages' first touch at "
        f"{1.0 / spb / 1e9:.2f} GB/s ({source})"
    )
    return moved * spb


def _first_touch_rate(rates: Rates) -> tuple[float | None, str]:
    """Seconds per byte of first touch and where it comes from: the bench's reliable
    ``first_touch`` figure, else its unreliable one, said so.

    The faults are a cost every such step pays, and the bench's figure is the one measure
    of this machine's: priced at zero, a step's estimate would be short by all of them
    (ResNet-50 at batch 4 faults in 270 MiB a step, about 0.15 s at 1.9 GB/s). Noise
    only slows a fault, so an unsteady figure errs towards a longer step.
    """
    levels = rates.levels
    if levels is None:
        return None, ""
    if levels.first_touch_s:
        return levels.first_touch_s, "the bench's first_touch figure"
    if levels.first_touch_unsteady is None:
        return None, ""
    spb, spread = levels.first_touch_unsteady
    how = f"spread {spread:.0%}" if spread is not None else "too few runs to know its spread"
    return spb, (
        f"the bench's first_touch figure, marked unreliable ({how}): no steadier measure "
        "of this machine's page faults exists, so they are priced at it"
    )


#: Bytes a parameter's weight occupies at each precision (mixed precision keeps fp32
#: weights and casts them at each call, reading all four bytes).
_WEIGHT_BYTES = {
    Precision.FP32: 4.0,
    Precision.AMP: 4.0,
    Precision.BF16: 2.0,
    Precision.FP16: 2.0,
    Precision.INT8: 1.0,
}


def _cold_weights(wl: Workload, prof: OpProfile, rates: Rates, notes: list[str]) -> bool:
    """Whether an inference pass on this CPU reads each layer's weight from DRAM: its
    weights are larger than the last-level cache its threads reach, and the bench
    measured products of few rows with a weight from DRAM each call.

    A forward pass uses each weight once and then all the others, so past the cache
    every weight is evicted before its next use (a cyclic walk over more than an LRU
    cache holds misses every time). A product of many rows does enough work per weight
    byte to hide the read; one of few rows does not: a one-row product of a 1024-square
    fp32 weight ran at 7.9-9.9 GFLOP/s from DRAM against 22-28 hot on a Zen 4 EPYC guest
    at two threads, 16 rows at 50-66 against 93-99. From 64 rows on the loss was 4-16%
    per call there, within the bench's run-to-run spread, and is not priced. Training
    is left at the hot figures: its backward uses each weight again soon after the
    forward did.
    """
    if (
        rates.gpu
        or wl.task is Task.TRAIN
        or not rates.cold_factors
        or not rates.cache_bytes
        or not wl.params
    ):
        return False
    weights = float(wl.params) * _WEIGHT_BYTES[wl.precision]
    if weights <= rates.cache_bytes:
        return False
    top = rates.rows_points[-1][0] if rates.rows_points else 0.0
    few = [b for b in prof.gemm if b.rows is not None and b.rows < top]
    if few:
        notes.append(
            f"{rates.device}: the weights ({weights / 2**20:,.0f} MiB) are larger than the "
            f"last-level cache the threads reach ({rates.cache_bytes / 2**20:,.0f} MiB): "
            f"products of fewer than {top:.0f} rows priced with a weight from DRAM each "
            "call (the bench's matmul_rows_cold figures)"
        )
    return True


def _gemm_time(prof: OpProfile, rates: Rates, work: float, *, cold: bool = False) -> float:
    """Each bucket of matrix products at the matmul rate for its effective size
    (``cold``: weights from DRAM, :func:`_cold_weights`)."""
    seconds = 0.0
    for bucket in prof.gemm:
        rate = rates.product(bucket.size, bucket.rows, bucket.work_size, cold=cold)
        if rate is None:
            raise _Unknown("matmul rate unknown: time unknown")
        seconds += bucket.flops * work / rate
    return seconds


def _reorder_seconds(wl: Workload, prof: OpProfile, rates: Rates, native: list[ConvShape]) -> float:
    """Seconds of the reorders oneDNN makes around each convolution of an NCHW model on
    this CPU, where the bench measured its convolution rate (channels-last, so without
    them): 0 for a channels-last job, a catalog CPU, a GPU, or without a sweep.

    oneDNN computes a convolution in its own blocked layout. On NCHW tensors each call
    first copies the input and the weights into it and then the output back (with
    ``ONEDNN_VERBOSE=1``, a 3x3 convolution of 64 channels at 32 x 32, batch 16, ran its
    kernel in 4.4 ms between reorders of 1.0 and 1.2 ms on a Xeon guest); its backward
    copies the output's gradient, the input and the weights in and both gradients back.
    Each copy reads and writes every element once, an element-wise pass over what the
    operator before it wrote, priced as such (``MemoryLevels.seconds`` with ``cold``). A
    depthwise convolution of MobileNet ran 3.6-12x its FLOP price: its kernel took 0.07 ms
    of a call of 0.4 ms or more.
    """
    levels = rates.levels
    if (
        rates.gpu
        or wl.channels_last
        or levels is None
        or rates.conv_size is None
        or not levels.measured("eltwise")
    ):
        return 0.0
    batch, scale = float(wl.batch_size), _elem_scale(wl.precision)
    passes = (False, True) if wl.task is Task.TRAIN else (False,)
    return sum(
        c.count * conv_reorder_s(levels, c, batch, scale=scale, backward=backward)
        for c in prof.conv_shapes
        if c not in native and not c.transposed
        for backward in passes
    )


def conv_reorder_s(
    levels: MemoryLevels | None, c: ConvShape, batch: float, *, scale: float = 1.0,
    backward: bool = False,
) -> float:  # fmt: skip
    """Seconds of one oneDNN call of convolution ``c``'s reorders at ``batch``
    (:func:`_reorder_seconds`): its input, weights and output copied in and out; for its
    backward the output's gradient, the input and the weights in and both gradients out
    (0 without an element-wise curve)."""
    if levels is None:
        return 0.0
    x = c.input_elements * batch
    y = c.product[0] * c.groups * c.product[2] * batch
    w = float(c.product[0] * c.groups * c.product[1])
    copies = (y, x, w, x, w) if backward else (x, w, y)
    # Each element read and written once.
    return sum(levels.seconds("eltwise", 8.0 * e * scale, cold=True) or 0.0 for e in copies)


def _conv_time(prof: OpProfile, rates: Rates, wl: Workload, native: list[ConvShape]) -> float:
    """Convolutions at the convolution rate, scaled to the size of their implicit product;
    a training step's backward (two forwards' FLOPs) at the measured backward's rate where
    the bench timed it; those PyTorch runs on its native path (``native``) as per-sample
    products instead."""
    if rates.conv is None:
        raise _Unknown("convolution rate unknown: time unknown")
    batch, nchw = float(wl.batch_size), not wl.channels_last
    onednn = _onednn_seconds(prof, rates, native, batch, backward=False, nchw=nchw) * batch
    work = batch
    if wl.task is Task.TRAIN:
        onednn += (
            _onednn_seconds(prof, rates, native, batch, backward=True, nchw=nchw)
            * batch
            * BACKWARD_FACTOR
        )
        work *= 1.0 + BACKWARD_FACTOR
    return onednn + _native_seconds(native, rates) * work


def _onednn_seconds(
    prof: OpProfile, rates: Rates, native: list[ConvShape], batch: float, *, backward: bool,
    nchw: bool = False,
) -> float:  # fmt: skip
    """Seconds per sample of the convolutions oneDNN runs (a forward's worth of FLOPs)."""
    conv = (rates.conv_backward if backward else None) or rates.conv or 1.0
    buckets = prof.conv or [GemmBucket(size=0, flops=prof.conv_flops)]
    seconds = 0.0
    for bucket in buckets:
        rate = rates.conv_at(bucket.size, backward=backward) if bucket.size else None
        seconds += bucket.flops / (rate or conv)
    # The native ones leave the oneDNN buckets they were counted in (at their bucket's size).
    seconds -= sum(c.flops / (rates.conv_at(c.size, backward=backward) or conv) for c in native)
    seconds += _per_shape_extra(prof, rates, native, batch, backward=backward, nchw=nchw)
    return max(seconds, 0.0)


def _per_shape_extra(
    prof: OpProfile, rates: Rates, native: list[ConvShape], batch: float, *, backward: bool,
    nchw: bool = False,
) -> float:  # fmt: skip
    """What convolutions cost per sample beyond their bucket's convolution rate
    (:func:`onednn_conv_rate`): 1x1 ones, strided ones' backward, and NCHW ones."""
    extra = 0.0
    conv = (rates.conv_backward if backward else None) or rates.conv or 1.0
    for c in prof.conv_shapes:
        if c in native:
            continue
        bucket = rates.conv_at(c.size, backward=backward) or conv
        rate = onednn_conv_rate(c, rates, batch, backward=backward, nchw=nchw) or bucket
        extra += c.flops * (1.0 / rate - 1.0 / bucket)
    return extra


def onednn_conv_rate(
    c: ConvShape, rates: Rates, batch: float, *, backward: bool = False, nchw: bool = False
) -> float | None:
    """FLOP/s of convolutions of shape ``c`` on oneDNN at ``batch`` (None: no rate), on
    channels-last tensors (``nchw``: on plain ones, at :meth:`Rates.nchw_factor` of that;
    their reorders are priced on their own, :func:`conv_reorder_s`).

    The measured convolution rate read at the shape's size (:meth:`Rates.conv_at`), and
    for a 1x1 convolution no faster than the matmul curve. A 1x1 convolution reuses no
    input across a kernel window: it is the matrix product [batch x positions, in] @
    [in, out], so it runs as that product does, at its effective size at the job's
    batch. The bench's convolution, a 3x3 one, reads each input nine times per output
    channel and runs faster than a product of the same size. Measured in ResNet-50 at
    batch 4 (``benchmarks/conv_shapes.py``): its 3x3 convolutions of stride 1 ran at
    0.96-1.24x their convolution-rate price and its 1x1 ones at 1.15-1.8x.
    """
    conv = (rates.conv_backward if backward else None) or rates.conv
    rate = rates.conv_at(c.size, backward=backward) or conv
    if rate is None:
        return rate
    factor = strided_backward_factor(c, rates) if backward else 1.0
    if nchw and c.groups == 1 and not c.transposed:
        factor *= rates.nchw_factor(conv_channels(c), backward=backward)
    if c.groups != 1 or c.transposed or any(k != 1 for k in c.kernel):
        return rate * factor
    out, inner, positions = c.product
    square = rates.gemm(float(effective_size(batch * positions, out, inner)))
    return (min(rate, square) if square else rate) * factor


def conv_channels(c: ConvShape) -> float:
    """The channel count of convolution ``c`` that its NCHW factor is read at: the
    geometric mean of its input and output channels per group."""
    taps = math.prod(c.kernel) or 1
    return math.sqrt(max(1.0, c.product[0]) * max(1.0, c.product[1] / taps))


def strided_backward_factor(c: ConvShape, rates: Rates) -> float:
    """What a strided convolution's backward runs at, as a share of its unstrided price:
    the bench's measured ``conv2d_backward_strided`` figure of the same kernel side over
    the price this estimate gives an unstrided convolution of that figure's shape (1.0:
    unstrided, grouped, transposed, another kernel, or not measured)."""
    if c.groups != 1 or c.transposed or len(c.kernel) != 2 or all(s == 1 for s in c.stride):
        return 1.0
    side = c.kernel[0]
    if c.kernel[1] != side:
        return 1.0
    return rates.strided_backward.get(side, 1.0)


def native_conv(conv: ConvShape, batch: int, threads: int) -> bool:
    """Whether PyTorch runs this fp32 CPU convolution on its native path, not oneDNN
    (:func:`hwadvisor.estimate.timing.convpath.native_path`)."""
    return native_path(
        kernel=conv.kernel,
        stride=conv.stride,
        dilation=conv.dilation,
        groups=conv.groups,
        batch=batch,
        input_elements=conv.input_elements,
        threads=threads,
        transposed=conv.transposed,
    )


def _native_convs(wl: Workload, prof: OpProfile, rates: Rates) -> list[ConvShape]:
    """The convolutions of ``prof`` that run on PyTorch's native path on this CPU."""
    if rates.gpu or not rates.threads or wl.precision is not Precision.FP32:
        return []  # bf16/fp16 inputs go to oneDNN whatever their shape (use_mkldnn)
    return [c for c in prof.conv_shapes if native_conv(c, wl.batch_size, rates.threads)]


def _native_seconds(native: list[ConvShape], rates: Rates) -> float:
    """Seconds per unit of work of the native convolutions' per-sample products.

    The forward of a 1x1 convolution is, per sample and group, (M x K) @ (K x N): M out
    channels, K in channels, N output positions. The backward's input gradient (K x M) @
    (M x N) and weight gradient (M x N) @ (N x K) have the same three sides, so the same
    effective size and the measured matmul rate at it; each does the forward's FLOPs.
    """
    seconds = 0.0
    for c in native:
        rate = native_conv_rate(c, rates)
        if rate is None:
            raise _Unknown("matmul rate unknown: time unknown")
        seconds += c.flops / rate
    return seconds


def native_conv_rate(c: ConvShape, rates: Rates) -> float | None:
    """FLOP/s of a convolution on PyTorch's native path: the matmul curve at the size of
    its per-sample, per-group product (:func:`_native_seconds`)."""
    return rates.gemm(float(effective_size(*c.product)))


def _native_note(native: list[ConvShape], batch: int, rates: Rates) -> str:
    """The assumption the native convolutions add to the estimate."""
    n = sum(c.count for c in native)
    how = (
        "PyTorch's native path (ConvParams::use_mkldnn), priced as per-sample products at "
        "the measured matmul rate for their size"
    )
    if all(math.prod(c.kernel) == 1 for c in native) and rates.threads == 1:
        return (
            f"{rates.device}: 1x1 convolutions at batch < {NATIVE_CONV_BATCH} on one thread "
            f"({n} per forward pass at batch {batch}): {how}"
        )
    return (
        f"{rates.device}: {n} convolutions per forward pass at batch {batch} on "
        f"{rates.threads} thread(s) (1x1 ones at batch < {NATIVE_CONV_BATCH} on one thread, "
        f"or any at batch 1 with at most {NATIVE_CONV_INPUT} input elements): {how}"
    )


def _memory_time(wl: Workload, prof: OpProfile, rates: Rates, notes: list[str]) -> float | None:
    """Seconds of the memory-bound operators of both passes (None: unknown).

    With the bench's memory sweep and a per-operator profile, each operator is priced by
    its family at its working set (batch x its bytes per sample); otherwise the
    cost-weighted bytes of all of them go over the streaming bandwidth.
    """
    if rates.levels is not None and prof.op_groups:
        return _memory_by_level(wl, prof, rates, notes)
    per_sample = prof.memory_bytes
    if wl.task is Task.TRAIN:
        back = prof.backward_memory_bytes
        per_sample += back if back is not None else BACKWARD_FACTOR * prof.memory_bytes
    total = per_sample * float(wl.batch_size) * _elem_scale(wl.precision)
    return total / rates.bandwidth if rates.bandwidth else None


def _memory_by_level(wl: Workload, prof: OpProfile, rates: Rates, notes: list[str]) -> float:
    """Each memory-bound operator group at its family's rate for its working set."""
    assert rates.levels is not None
    by_family = memory_by_family(wl, prof, rates)
    unmeasured = sorted(
        f for f in by_family if not rates.levels.measured(f) and f not in STREAMING_FAMILIES
    )
    if unmeasured:
        notes.append(
            f"no sweep figure for {', '.join(unmeasured)}: priced as element-wise streaming"
        )
    return sum(by_family.values())


def memory_by_family(wl: Workload, prof: OpProfile, rates: Rates) -> dict[str, float]:
    """Seconds of the memory-bound operators of one step by family, from the memory sweep
    (empty without one)."""
    if rates.levels is None:
        return {}
    train = wl.task is Task.TRAIN
    scale = _elem_scale(wl.precision)
    # A profile without backward groups: the backward is BACKWARD_FACTOR forwards.
    repeat = 1.0 + BACKWARD_FACTOR if train and not any(g.backward for g in prof.op_groups) else 1.0
    out: dict[str, float] = {}
    for g in prof.op_groups:
        if g.family in COMPUTE_FAMILIES or (g.backward and not train) or not g.bytes:
            continue
        ws = g.bytes * wl.batch_size * scale
        cold = g.family in COLD_FAMILIES
        seconds = rates.levels.seconds(g.family, ws, g.count, cold=cold) or 0.0
        out[g.family] = out.get(g.family, 0.0) + repeat * seconds
    return out


def _cpu_overhead(prof: OpProfile, train: bool, rates: Rates) -> float:
    """Per-operator cost of one step on a CPU: the forward's operators at the dispatch
    figure, the backward's at the measured backward figure (autograd's engine) where the
    bench has one, else at the dispatch figure; and each recurrent layer's call at the
    bench's ``rnn_layer`` figure, less the dispatch already counted for it."""
    forward = prof.kernels * rates.op_overhead_s + _rnn_layer_calls(prof, False, rates)
    if not train:
        return forward
    back = _launches(prof, train) - prof.kernels
    per = (rates.levels.backward_dispatch_s if rates.levels else None) or rates.op_overhead_s
    return forward + back * per + _rnn_layer_calls(prof, True, rates)


def _rnn_layer_calls(prof: OpProfile, backward: bool, rates: Rates) -> float:
    """Seconds of the recurrent layers' calls of one pass beyond their work and dispatch.

    PyTorch runs each LSTM or GRU layer on a CPU as one oneDNN primitive, which reorders
    its weights at every call: a one-step, 8-feature layer took 81 us a call on a Zen 4
    guest at two threads, and a 2-layer LSTM of 64 hidden over 128 steps at batch 1 ran
    in 721 us where its work and dispatch were priced at 415. The backward's call is
    taken at the forward's figure (the bench times the forward alone).
    """
    levels = rates.levels
    if levels is None or not levels.rnn_layer_s:
        return 0.0
    calls = sum(g.count for g in prof.op_groups if g.family == RNN_LAYER and g.backward == backward)
    return calls * max(levels.rnn_layer_s - rates.op_overhead_s, 0.0)


def _launches(prof: OpProfile, train: bool) -> int:
    """Operator launches of one step: the forward's, plus the backward's when training."""
    if not train:
        return prof.kernels
    back = prof.backward_kernels
    return prof.kernels + (back if back is not None else int(BACKWARD_FACTOR * prof.kernels))
