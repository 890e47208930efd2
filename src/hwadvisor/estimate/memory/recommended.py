"""The job as recommended on one device: as written, or with the fixes or plan that make it fit.

``recommend`` answers for the job it would run, not only the job as first written: when
activation checkpointing, a smaller batch with accumulation, mixed precision (an fp32
job's), an 8-bit optimizer, sharding over the device's GPUs or, last, offload make a job
fit (in that order, :func:`estimate.plan.fix_levels`), the fit is for the fixed job and
names the fixes. This module decides that fit for one estimate row from
the same bounds as the row's own fit (:func:`estimate.memory.decide_fit`):

- a CPU (``here``): the fixes that can apply on it (:func:`estimate.fixes.fix_steps`);
- a GPU: the smallest plan (:func:`estimate.plan.plan_for`) within the GPUs the row may
  use (one for a single GPU, the row's count for several, as many as this machine has
  for its own), and for a catalog GPU the plan of any size (up to
  :data:`estimate.plan.MAX_GPUS`) that the comparison names.

``fits_planned`` is true when some step surely fits, false when no step can (its bounds
or its estimate say so), and null only when the best step is open: its bounds straddle
the memory, and the reason names the options that would settle it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

from hwadvisor.estimate.memory.fixes import fix_steps, memory_fixes
from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown, decide_fit, is_inference
from hwadvisor.estimate.memory.plan import COUNTS, OFFLOAD, Gpu, and_list, fix_levels, plan_for
from hwadvisor.models.estimate import DeviceEstimate, MultiGpuPlan
from hwadvisor.models.workload import Workload


@dataclass(frozen=True)
class Placement:
    """Where the job would run: a GPU or a CPU, how many, and how large a plan may grow.

    ``plan_gpus`` is the most GPUs a named plan may use (0: none is named, a CPU);
    ``device_bytes`` the memory of one device, when it differs from the estimate's (this
    machine's own GPU, whose probed memory is the truth), else None; ``own``: GPUs this
    machine has, where the plan takes the fewest fixes (sharding over all of them
    first), not the fewest GPUs; ``cuda``: a GPU that runs CUDA (or ROCm) kernels, which
    the 8-bit optimizer and the offload need (false for an Apple GPU).
    """

    gpu: bool
    gpus: int = 1
    plan_gpus: int = 0
    device_bytes: int | None = None
    own: bool = False
    cuda: bool = True


def _detail(reason: str) -> str:
    """``fits: even the upper bound ...`` -> ``even the upper bound ...``."""
    return reason.split(": ", 1)[1] if ": " in reason else reason


def _refit(wl: Workload, est: DeviceEstimate, t: Placement) -> DeviceEstimate:
    """The row's own fit on ``t.device_bytes`` (this machine's probed memory)."""
    if t.device_bytes is None or t.device_bytes == est.device_memory_bytes or est.memory is None:
        return est
    decision = decide_fit(est.memory, t.device_bytes)
    fixes = (
        memory_fixes(wl, t.device_bytes, gpu=t.gpu, gpus=t.gpus, cuda=t.cuda)
        if decision.fits is not True
        else []
    )
    note = f"memory of this machine's device as probed: {t.device_bytes / (1 << 30):.1f} GiB"
    return est.model_copy(
        update={
            "device_memory_bytes": t.device_bytes,
            "fits": decision.fits,
            "fit_reason": decision.reason,
            "fixes": fixes,
            "plan": None,
            "assumptions": [*est.assumptions, note],
        }
    )


def _gpu_candidates(
    wl: Workload, n: int, *, offload: bool, cuda: bool = True
) -> Iterator[tuple[tuple[str, ...], int, MemoryPlan]]:
    """Every (fixes, count, plan) within ``n`` GPUs, fewest fixes and GPUs first;
    offload only when ``offload`` (no plan without it exists at any count)."""
    # Sharded as estimate.plan shards: ZeRO stages for training, tensor parallel for inference.
    stages = (3,) if is_inference(wl.task) else (1, 2, 3)
    for fixes, mp in fix_levels(wl, cuda=cuda):
        if mp.offload and not offload:
            continue
        yield fixes, 1, mp
        for count in (c for c in COUNTS if 1 < c <= n):
            for stage in stages:
                yield fixes, count, replace(mp, zero_stage=stage, shards=count)


def _cpu_candidates(wl: Workload) -> Iterator[tuple[tuple[str, ...], int, MemoryPlan]]:
    yield (), 1, MemoryPlan(precision=wl.precision, batch=wl.batch_size)
    done: tuple[str, ...] = ()
    for text, mp in fix_steps(wl, gpu=False):
        done = (*done, text)
        yield done, 1, mp


def _scan(
    wl: Workload, t: Placement, device_bytes: int, *, offload: bool = True
) -> tuple[bool | None, str]:
    """The first step that surely fits, else the first open one, else the most relieved."""
    cands = (
        _gpu_candidates(wl, t.gpus, offload=offload, cuda=t.cuda) if t.gpu else _cpu_candidates(wl)
    )
    found: tuple[bool | None, str] | None = None
    last = (False, "")
    for fixes, count, mp in cands:
        d = decide_fit(breakdown(wl, mp, gpu=t.gpu), device_bytes)
        what = list(fixes) + ([f"sharding across {count} GPUs"] if count > 1 else [])
        words = f"with {and_list(what)}" if what else "as written"
        if d.fits is True:
            return True, f"fits {words} ({_detail(d.reason)})"
        if d.fits is None and found is None:
            found = (None, f"open {words}: {_detail(d.reason)}")
        last = (False, f"does not fit, even {words}: {_detail(d.reason)}")
    return found if found is not None else last


def _decide(wl: Workload, est: DeviceEstimate, t: Placement) -> dict[str, object]:
    device_bytes = est.device_memory_bytes
    if est.memory is None or device_bytes is None:
        return {"fits_planned": None, "planned_reason": est.fit_reason}
    plan: MultiGpuPlan | None = est.plan
    if t.gpu and est.fits is not True and (plan is None or t.own):
        gpu = Gpu(est.device, est.name or est.device, device_bytes, cuda=t.cuda)
        most = max(t.gpus, t.plan_gpus)
        plan = plan_for(wl, gpu, max_gpus=most, fewest="fixes" if t.own else "gpus")
    out: dict[str, object] = {"plan": plan}
    if est.fits is True:
        why = est.fit_reason or decide_fit(est.memory, device_bytes).reason
        return {**out, "fits_planned": True, "planned_reason": why}
    if plan is not None and plan.gpus <= t.gpus:
        why = _detail(plan.notes[0]) if plan.notes else ""
        return {**out, "fits_planned": True, "planned_reason": f"fits as {plan.plan} ({why})"}
    # Offload is the last resort: not below the count a plan without it needs.
    offload = plan is None or OFFLOAD in plan.fixes
    fits, reason = _scan(wl, t, device_bytes, offload=offload)
    return {**out, "fits_planned": fits, "planned_reason": reason}


def as_recommended(wl: Workload, est: DeviceEstimate, t: Placement) -> DeviceEstimate:
    """``est`` with the fit of the job as recommended (``fits_planned``, ``planned_reason``)
    and, on a GPU that does not hold it as written, its plan; on ``t.device_bytes`` when
    given (the row's own fit recomputed there first)."""
    if wl.priced_by_llm:
        return est  # a language model's serving and fine-tuning fit is hwadvisor.llm's
    est = _refit(wl, est, t)
    return est.model_copy(update=_decide(wl, est, t))
