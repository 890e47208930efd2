"""Multi-GPU fit as a plan: for a GPU, the smallest count that holds the job, and how.

Per GPU of ``n`` (the batch is per GPU, as everywhere in the estimate), following the
ZeRO paper's per-stage memory (Rajbhandari et al. 2020, arXiv:1910.02054, §5, Fig. 1;
model states (2 + 2 + K)·Ψ for mixed-precision Adam, K = 12):

- DDP replicates everything: per GPU it holds what one GPU would, so it never makes a
  job fit (it only speeds it up);
- ZeRO-1 divides the optimizer state by n (2Ψ + 2Ψ + KΨ/n), ZeRO-2 the gradients too
  (2Ψ + (2 + K)Ψ/n), ZeRO-3 / FSDP the weights as well ((2 + 2 + K)Ψ/n), plus the
  gathered parameters of the layers running;
- inference is split by tensor parallelism: weights and KV cache divided by n.

The fixes are tried in the order practitioners reach for them (SPEC section 6), each
added to the ones before (:func:`fix_levels`): activation checkpointing, a smaller batch
per GPU with gradient accumulation (the effective batch kept), mixed precision for a job
given in fp32, an 8-bit optimizer, sharding over GPUs, and last offloading the optimizer
to the host (ZeRO-Offload, Ren et al. 2021, arXiv:2101.06840); for inference 16-bit
weights, int8 weights, then one sample per pass. The plan is the smallest count over the
fixes up to the 8-bit optimizer (fewer fixes on a tie, then the simplest strategy), each
level sharded before any offload; offload only when nothing else fits within the count
limit. Each candidate fits only when its bounds or its estimate say so
(:func:`estimate.memory.decide_fit`). These are pure functions of the workload, the
device's memory and the count limit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown, decide_fit, is_inference
from hwadvisor.models.estimate import MemoryBreakdown, MultiGpuPlan
from hwadvisor.models.memory import MemoryCounts
from hwadvisor.models.workload import Optimizer, Precision, Workload

#: GPU counts tried: one node of 8 and multiples of it, up to ``max_gpus``.
COUNTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
#: The most GPUs a plan may use by default (a frontier training cluster's order).
MAX_GPUS = COUNTS[-1]
_STAGES = ((1, "ZeRO-1"), (2, "ZeRO-2"), (3, "FSDP (ZeRO-3)"))
#: The fixes by the names plans carry (what the plan's time reads).
CHECKPOINTING = "activation checkpointing"
MIXED_PRECISION = "mixed precision (bf16)"
OFFLOAD = "optimizer offload to the host"


@dataclass(frozen=True)
class Gpu:
    """What a plan needs of a GPU: its id, its name and its memory."""

    id: str
    name: str
    memory_bytes: int
    #: Runs CUDA (or ROCm) kernels: the 8-bit optimizer (bitsandbytes) and the offload
    #: (DeepSpeed's ZeRO-Offload) need them; an Apple GPU (MPS) does not.
    cuda: bool = True


@dataclass(frozen=True)
class _Candidate:
    gpus: int
    level: int
    stage: int
    strategy: str
    fixes: tuple[str, ...]
    plan: MemoryPlan


def and_list(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def fix_levels(
    wl: Workload,
    *,
    cuda: bool = True,
    gpu: bool = True,
    counts: MemoryCounts | None = None,
) -> list[tuple[tuple[str, ...], MemoryPlan]]:
    """The cumulative fixes for ``wl``, in order, with the memory plan each leads to.

    Training, in the order practitioners use them (SPEC section 6): activation
    checkpointing; a batch of 1 per device with gradient accumulation (the effective
    batch kept); an 8-bit optimizer; then, in a multi-GPU plan, sharding (:func:`plan_for`,
    :func:`.fixes.fix_steps`) before offloading the optimizer to the host. Mixed
    precision is the job's precision, not a fix, except for a job given in fp32: there
    it is a fix, placed where it changes the job least, after the two that leave its
    arithmetic as it is (checkpointing and the micro-batch) and before the 8-bit
    optimizer, and offered only where it lowers the memory (``gpu`` and ``counts`` as
    :func:`.parts.breakdown` takes them): autocast keeps 16-bit copies of the weights,
    2 bytes a parameter, more than halving small activations saves. LoRA and QLoRA
    change a language model's fine-tuning (:mod:`hwadvisor.estimate.llm.finetune`),
    never a training job. Without ``cuda`` neither the 8-bit optimizer nor the offload
    (CUDA-only libraries).
    """
    plan = MemoryPlan(precision=wl.precision, batch=wl.batch_size)
    out: list[tuple[tuple[str, ...], MemoryPlan]] = [((), plan)]
    fixes: tuple[str, ...] = ()
    if is_inference(wl.task):
        if plan.precision in (Precision.FP32, Precision.AMP):
            plan, fixes = replace(plan, precision=Precision.BF16), (*fixes, "16-bit weights")
            out.append((fixes, plan))
        if plan.precision is not Precision.INT8:
            plan, fixes = replace(plan, precision=Precision.INT8), (*fixes, "int8 weights")
            out.append((fixes, plan))
        if plan.batch > 1:
            # Fewer samples per pass: less activation and KV-cache memory, less throughput.
            fixes = (*fixes, f"batch 1 per pass instead of {plan.batch}")
            plan = replace(plan, batch=1)
            out.append((fixes, plan))
        return out
    plan, fixes = replace(plan, checkpointing=True), (*fixes, CHECKPOINTING)
    out.append((fixes, plan))
    if plan.batch > 1:
        accum = plan.batch
        plan = replace(plan, batch=1)
        fixes = (*fixes, f"batch 1 per device with {accum} steps of gradient accumulation")
        out.append((fixes, plan))
    if plan.precision is Precision.FP32:
        mixed = replace(plan, precision=Precision.AMP)
        if _lowers(wl, plan, mixed, gpu=gpu, counts=counts):
            plan, fixes = mixed, (*fixes, MIXED_PRECISION)
            out.append((fixes, plan))
    if not cuda:
        return out
    if wl.optimizer is Optimizer.ADAMW:
        plan, fixes = replace(plan, optimizer_8bit=True), (*fixes, "an 8-bit optimizer")
        out.append((fixes, plan))
    plan, fixes = replace(plan, offload=True), (*fixes, OFFLOAD)
    out.append((fixes, plan))
    return out


def _lowers(
    wl: Workload, before: MemoryPlan, after: MemoryPlan, *, gpu: bool, counts: MemoryCounts | None
) -> bool:
    """Whether ``after`` needs less memory than ``before`` (the estimated peak)."""
    was = breakdown(wl, before, gpu=gpu, counts=counts)
    now = breakdown(wl, after, gpu=gpu, counts=counts)
    if was is None or now is None or was.total_bytes is None or now.total_bytes is None:
        return True
    return now.total_bytes < was.total_bytes


class _Breakdowns:
    """The breakdowns of the workload last planned, by plan. The memory a plan needs per
    GPU does not depend on which GPU, and a fleet's search and an advice try the same
    plans on many GPUs. It holds the workload and counts it is for, so a new one (even
    at a freed one's address) starts it afresh."""

    def __init__(self) -> None:
        self.owner: tuple[Workload, MemoryCounts | None] | None = None
        self.memo: dict[MemoryPlan, MemoryBreakdown | None] = {}

    def get(
        self, wl: Workload, plan: MemoryPlan, counts: MemoryCounts | None
    ) -> MemoryBreakdown | None:
        if self.owner is None or self.owner[0] is not wl or self.owner[1] is not counts:
            self.owner, self.memo = (wl, counts), {}
        if plan not in self.memo:
            self.memo[plan] = breakdown(wl, plan, gpu=True, counts=counts)
        return self.memo[plan]


_BREAKDOWNS = _Breakdowns()


def _fits(wl: Workload, plan: MemoryPlan, gpu: Gpu, counts: MemoryCounts | None) -> bool:
    mb = _BREAKDOWNS.get(wl, plan, counts)
    return decide_fit(mb, gpu.memory_bytes).fits is True


def _smallest(
    wl: Workload,
    level: int,
    fixes: tuple[str, ...],
    plan: MemoryPlan,
    gpu: Gpu,
    counts: MemoryCounts | None,
    max_gpus: int,
) -> _Candidate | None:
    """The fewest GPUs of ``COUNTS`` (up to ``max_gpus``) that hold the job at ``plan``,
    and the first strategy that does at that count.

    Each strategy's memory per GPU is a fixed part plus parts divided by the count (the
    module's ZeRO formulas), so it never grows with the count, and the fewest GPUs a
    strategy needs is found by bisection: about 4 breakdowns a strategy, not one per
    count (``tests/estimate/test_plan.py`` holds it to the count-by-count search).
    """
    if _fits(wl, plan, gpu, counts):
        return _Candidate(1, level, 0, "single", fixes, plan)
    stages = ((3, "tensor parallel"),) if is_inference(wl.task) else _STAGES
    tried = [c for c in COUNTS if 1 < c <= max_gpus]
    best: _Candidate | None = None
    for stage, strategy in stages:
        lo, hi = 0, len(tried)  # the fewest that fits is in tried[lo:hi], or none
        if best is not None:  # a later strategy is chosen only with fewer GPUs
            hi = tried.index(best.gpus)
        fitting: MemoryPlan | None = None
        while lo < hi:
            mid = (lo + hi) // 2
            sharded = replace(plan, zero_stage=stage, shards=tried[mid])
            if _fits(wl, sharded, gpu, counts):
                hi, fitting = mid, sharded
            else:
                lo = mid + 1
        if fitting is not None:
            best = _Candidate(fitting.shards, level, stage, strategy, fixes, fitting)
    return best


def plan_for(
    wl: Workload,
    gpu: Gpu,
    *,
    counts: MemoryCounts | None = None,
    max_gpus: int = MAX_GPUS,
    fewest: Literal["gpus", "fixes"] = "gpus",
) -> MultiGpuPlan | None:
    """The smallest plan on ``gpu`` that holds ``wl``, or None when none does.

    ``fewest="fixes"`` prefers fewer fixes to fewer GPUs (GPUs a machine already has:
    sharding over them costs less than slowing the job), offload still last.
    """
    if wl.params is None:
        return None
    levels = fix_levels(wl, cuda=gpu.cuda, counts=counts)
    offload = [lv for lv in levels if OFFLOAD in lv[0]]
    plain = [lv for lv in levels if lv not in offload]
    # Each level of fixes adds to the last, so a later level is chosen only with fewer
    # GPUs than the best so far (fewest="gpus"), or never once one fits (fewest="fixes"):
    # its search stops below that count.
    found: list[_Candidate] = []
    bound = max_gpus
    for i, (fixes, plan) in enumerate(plain):
        c = _smallest(wl, i, fixes, plan, gpu, counts, bound)
        if c is None:
            continue
        found.append(c)
        if fewest == "fixes" or c.gpus == 1:
            break
        bound = c.gpus - 1
    if not found and offload:
        fixes, plan = offload[0]
        c = _smallest(wl, len(plain), fixes, plan, gpu, counts, max_gpus)
        found = [c] if c is not None else []
    if not found:
        return None
    first = (lambda c: c.level) if fewest == "fixes" else (lambda c: c.gpus)
    best = min(found, key=lambda c: (first(c), c.gpus, c.level, c.stage))
    return _to_plan(wl, gpu, best, counts)


def _to_plan(wl: Workload, gpu: Gpu, c: _Candidate, counts: MemoryCounts | None) -> MultiGpuPlan:
    mb = breakdown(wl, c.plan, gpu=True, counts=counts)
    assert mb is not None
    parts = [] if c.strategy == "single" else [c.strategy]
    parts += list(c.fixes)
    text = f"{c.gpus} × {gpu.name}" + (f" with {and_list(parts)}" if parts else "")
    notes = [decide_fit(mb, gpu.memory_bytes).reason]
    if c.plan.offload and wl.params:
        host = wl.params * (12 if wl.optimizer is Optimizer.ADAMW else 8)
        notes.append(
            f"offload keeps fp32 master weights and state on the host: "
            f"about {host / (1 << 30):.0f} GiB of host memory"
        )
    return MultiGpuPlan(
        device=gpu.id,
        name=gpu.name,
        gpus=c.gpus,
        strategy=c.strategy,
        fixes=list(c.fixes),
        memory=mb,
        fits=True,
        plan=text,
        precision=c.plan.precision.value,
        batch_per_gpu=c.plan.batch,
        notes=notes,
    )
