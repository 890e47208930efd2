"""Memory of a job per device: the estimated peak, a lower and an upper bound, and the fit.

Training (one device, the job's batch per device):

- weights, gradients and optimizer state, in bytes per parameter: fp32 AdamW 4 + 4 + 8;
  amp (autocast) 4 + 4 + 8 plus the 16-bit weight copies autocast keeps for backward;
  bf16/fp16 with fp32 master weights 2 + 4, 2, 8 (the ZeRO paper's mixed-precision
  accounting, Rajbhandari et al. 2020, arXiv:1910.02054, §3.1: 16 bytes per parameter);
  SGD with momentum 4 of state; 8-bit AdamW 2 (Dettmers et al. 2022, arXiv:2110.02861);
- the peak of forward and backward holds weights + state + activations (+ the gradients
  made so far); the optimizer step holds weights + gradients + state + its temporaries
  (PyTorch's foreach AdamW on a GPU keeps one fp32 list of the denominators, 4 bytes
  per parameter; the for-loop form on a CPU two of the largest parameter). The estimate
  is the larger: a sum of what is live at the same moment, never the maximum of stages;
- activations: counted on fake tensors (:mod:`hwadvisor.estimate.workload.memtrack`, per
  precision), else the transformer formula s·b·h·L·(34 + 5·a·s/h) bytes at 16 bits
  (Korthikanti et al. 2022, arXiv:2205.05198, §4, no recomputation; doubled for fp32)
  from the model's shape, or from a shape inferred from the parameter count
  (:mod:`hwadvisor.estimate.workload.shape`);
- runtime: the CUDA context per GPU process, 0.3 GiB on a CPU.

The lower bound is weights + gradients + optimizer + runtime: no job is smaller. The
upper bound adds activations at the stated batch and sequence without recomputation
(with the narrowest published shape when the shape was inferred), the optimizer
temporaries, and allocator fragmentation. Inference: weights at the dtype's size, the
KV cache 2·L·kv_heads·head_dim·s·b·bytes for decoders, and one pass's working set;
split by tensor parallelism over n GPUs, the weights are divided by n and the KV cache
keeps ceil(kv_heads / n) heads per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.estimate.memory.activations import Activations, activations_for
from hwadvisor.estimate.memory.knobs import MemoryPlan
from hwadvisor.llm.device import runtime_bytes
from hwadvisor.models.estimate import MemoryBreakdown
from hwadvisor.models.memory import MemoryCounts
from hwadvisor.models.workload import Optimizer, Precision, Task, Workload

#: Fraction of a device's memory a job may plan to use (~10% headroom).
USABLE_FRACTION = 0.9
#: The runtime reserve of one process, the same for every estimate
#: (:data:`hwadvisor.llm.device.RUNTIME_BYTES`).
GPU_CONTEXT_BYTES = runtime_bytes("gpu")
CPU_CONTEXT_BYTES = runtime_bytes("cpu")
#: Allocator fragmentation in the upper bound: the ZeRO paper (arXiv:1910.02054, §6.3)
#: saw jobs run out of memory "with over 30% of memory still available" from
#: fragmentation of the caching allocator's blocks.
FRAGMENTATION = 0.30
#: What a CPU process holds resident beyond the live tensors counted: the allocator's
#: freed chunks it keeps and splits (glibc's malloc returns memory to the system only
#: from the top of a heap, malloc_trim(3)) and the kernels' scratch buffers. The figure
#: is the caching allocator's headroom the GPU estimate plans with (1 - USABLE_FRACTION,
#: its own ~10% of a device) doubled for malloc, which unlike a caching allocator
#: neither rounds blocks nor reuses them by size; the band runs from the live bytes
#: alone (no overhead) to FRAGMENTATION's 30%.
CPU_ALLOCATOR_OVERHEAD = 2 * (1 - USABLE_FRACTION)

_HALF = (Precision.AMP, Precision.BF16, Precision.FP16)


def _runtime(gpu: bool) -> int:
    return GPU_CONTEXT_BYTES if gpu else CPU_CONTEXT_BYTES


@dataclass(frozen=True)
class _States:
    weights: int
    gradients: int
    optimizer: int
    temporaries: int
    gather: int = 0


def _states(wl: Workload, plan: MemoryPlan, act: Activations, *, gpu: bool) -> _States:
    """Weights, gradients, optimizer state and step temporaries per device under ``plan``."""
    n = wl.params or 0
    half = plan.precision in _HALF
    pure16 = plan.precision in (Precision.BF16, Precision.FP16)
    copies = plan.precision is Precision.AMP and act.counts is None
    weights = n * (2 if pure16 else 4) + (2 * n if copies else 0)
    master = 4 * n if pure16 else 0
    grads = n * (2 if pure16 else 4)
    # Bytes of state per parameter: two fp32 moments, two 1-byte moments (8-bit AdamW;
    # paged: on the host), one (SGD momentum), or factored rows and columns (Adafactor).
    per = {
        Optimizer.ADAMW: 8,
        Optimizer.ADAMW8BIT: 2,
        Optimizer.PAGED_ADAMW8BIT: 0,
        Optimizer.SGD: 4,
        Optimizer.ADAFACTOR: 0,
    }[wl.optimizer]
    if plan.optimizer_8bit and wl.optimizer is Optimizer.ADAMW:
        per = 2
    opt = n * per
    if plan.offload:
        # ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840): state and fp32 master on the host.
        opt, master = 0, 0
    temps = _step_temporaries(wl, plan, act, gpu=gpu)
    gather = 0
    shards = max(1, plan.shards)
    if shards > 1 and plan.zero_stage >= 1:
        opt, master, temps = opt // shards, master // shards, temps // shards
    if shards > 1 and plan.zero_stage >= 2:
        grads //= shards
    if shards > 1 and plan.zero_stage >= 3:
        weights //= shards
        # FSDP / ZeRO-3 gathers a layer's full parameters while it runs, and prefetches
        # the next (Zhao et al. 2023, arXiv:2304.11277, §3): two layers' worth.
        gather = 2 * (n // max(1, act.layers or 1)) * (2 if half else 4)
    return _States(weights + master, grads, opt, temps, gather)


def _step_temporaries(wl: Workload, plan: MemoryPlan, act: Activations, *, gpu: bool) -> int:
    n = wl.params or 0
    if plan.offload or wl.optimizer is not Optimizer.ADAMW or plan.optimizer_8bit:
        return 0
    if gpu:
        return 4 * n
    peak = act.counted(plan.precision)
    if peak is not None:
        return int(peak.step_temporaries)
    return 2 * 4 * act.largest_matrix()


def _train(
    wl: Workload, plan: MemoryPlan, act: Activations, *, gpu: bool, upper: bool
) -> MemoryBreakdown:
    st = _states(wl, plan, act, gpu=gpu)
    runtime = _runtime(gpu)
    a, grads_at_peak = act.train_bytes(plan, st.gradients, upper=upper)
    fb = st.weights + st.gather + st.optimizer + grads_at_peak + a
    step = st.weights + st.gradients + st.optimizer + st.temporaries
    if upper:  # everything at once, and the allocator's fragmentation
        parts = (st.weights + st.gather, st.gradients, st.optimizer, a, st.temporaries)
    elif fb >= step:
        parts = (st.weights + st.gather, grads_at_peak, st.optimizer, a, 0)
    else:
        parts = (st.weights, st.gradients, st.optimizer, 0, st.temporaries)
    total = int(sum(parts) * (1 + FRAGMENTATION)) if upper else sum(parts)
    return MemoryBreakdown(
        weights_bytes=parts[0],
        gradients_bytes=parts[1],
        optimizer_bytes=parts[2],
        activations_bytes=parts[3],
        temporaries_bytes=parts[4],
        runtime_bytes=runtime,
        total_bytes=total + runtime,
    )


def _infer(
    wl: Workload, plan: MemoryPlan, act: Activations, *, gpu: bool, upper: bool
) -> MemoryBreakdown:
    runtime = _runtime(gpu)
    shards = max(1, plan.shards) if plan.zero_stage >= 3 else 1
    weights = (wl.params or 0) * int(plan.precision.weight_bytes) // shards
    kv = _kv_per_shard(act, act.kv_cache_bytes(plan), shards)
    a = act.infer_bytes(plan, upper=upper)
    total = weights + kv + a
    if upper:
        total = int(total * (1 + FRAGMENTATION))
    return MemoryBreakdown(
        weights_bytes=weights,
        activations_bytes=a,
        kv_cache_bytes=kv,
        runtime_bytes=runtime,
        total_bytes=total + runtime,
    )


def _kv_per_shard(act: Activations, kv: int, shards: int) -> int:
    """One GPU's share of the KV cache under tensor parallelism over ``shards`` GPUs: the
    attention heads split across them, each GPU keeping ``ceil(kv_heads / shards)`` KV
    heads (a KV head is not split: with fewer KV heads than GPUs they are replicated, as
    Megatron-LM's and vLLM's grouped-query attention do)."""
    heads = act.kv_heads or (act.shape.heads if act.shape is not None else 0)
    if shards <= 1 or not kv or not heads:
        return kv
    return kv * -(-heads // shards) // heads


def _lower(wl: Workload, plan: MemoryPlan, act: Activations, *, gpu: bool) -> int:
    if is_inference(wl.task):
        mb = _infer(wl, plan, act, gpu=gpu, upper=False)
        return mb.weights_bytes + mb.kv_cache_bytes + _runtime(gpu)
    st = _states(wl, plan, act, gpu=gpu)
    return st.weights + st.gradients + st.optimizer + _runtime(gpu)


def is_inference(task: Task) -> bool:
    """Inference or serving (a language model's own estimate lives in hwadvisor.llm)."""
    return task.value in ("infer", "serve")


def breakdown(
    wl: Workload,
    plan: MemoryPlan,
    *,
    gpu: bool,
    counts: MemoryCounts | None = None,
) -> MemoryBreakdown | None:
    """The memory of ``wl`` under ``plan`` per device, with its bounds; None without params.

    ``counts`` are the model's counted peaks (a catalog entry's are found by its id when
    not given). On a CPU, counted live bytes are resident with
    :data:`CPU_ALLOCATOR_OVERHEAD` more (the upper bound allows :data:`FRAGMENTATION`).
    """
    if wl.params is None:
        return None
    act = activations_for(wl, counts)
    run = _infer if is_inference(wl.task) else _train
    est = run(wl, plan, act, gpu=gpu, upper=False)
    up = run(wl, plan, act, gpu=gpu, upper=True)
    total = est.total_bytes or 0
    if act.counts is not None and not gpu:
        total = int((total - est.runtime_bytes) * (1 + CPU_ALLOCATOR_OVERHEAD)) + est.runtime_bytes
    lower = _lower(wl, plan, act, gpu=gpu)
    upper = max(up.total_bytes or 0, total)
    return est.model_copy(
        update={
            "total_bytes": total,
            "lower_bytes": min(lower, total),
            "upper_bytes": upper,
            "basis": act.text,
            "settle": list(act.missing),
        }
    )


def fits(total: int | None, device_bytes: int | None) -> bool | None:
    """Whether ``total`` fits in ``device_bytes`` with the headroom; None when unknown."""
    if total is None or device_bytes is None:
        return None
    return total <= device_bytes * USABLE_FRACTION


@dataclass(frozen=True)
class FitDecision:
    """Whether a job fits a device, decided from its bounds, and why."""

    fits: bool | None
    reason: str


def decide_fit(mb: MemoryBreakdown | None, device_bytes: int | None) -> FitDecision:
    """The lower bound alone decides "does not fit", an upper bound that fits decides
    "fits"; between them the estimate decides when nothing was assumed, else the fit is
    open and the reason names the options that would settle it."""
    if mb is None:
        return FitDecision(None, "parameter count unknown: give --params or --model")
    if device_bytes is None:
        return FitDecision(None, "device memory unknown")
    usable = device_bytes * USABLE_FRACTION
    gib = 1 << 30
    lower, upper = mb.lower_bytes or 0, mb.upper_bytes or 0
    if lower > usable:
        return FitDecision(
            False,
            f"does not fit: weights, gradients, optimizer and runtime alone are "
            f"{lower / gib:.1f} GiB, over {usable / gib:.1f} GiB usable",
        )
    if upper <= usable:
        return FitDecision(
            True,
            f"fits: even the upper bound {upper / gib:.1f} GiB is within "
            f"{usable / gib:.1f} GiB usable",
        )
    total = mb.total_bytes or 0
    if not mb.settle:
        verdict = total <= usable
        word = "fits" if verdict else "does not fit"
        return FitDecision(
            verdict,
            f"{word}: estimated peak {total / gib:.1f} GiB against {usable / gib:.1f} GiB usable",
        )
    return FitDecision(
        None,
        f"open: {lower / gib:.1f}-{upper / gib:.1f} GiB straddles {usable / gib:.1f} GiB "
        f"usable; give {' and '.join(mb.settle)} to settle it",
    )
