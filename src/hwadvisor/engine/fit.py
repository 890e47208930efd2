"""Whether this machine runs the job as recommended, and the plan the verdict names.

``fits_here`` answers for the job the advice would run (docs/json.md): this machine has the
class of device recommended, the job fits its memory as written or with the fixes and
plan the estimate found (``estimate.<slot>.fits_after_fixes``: activation checkpointing,
a smaller batch with accumulation, mixed precision where it helps, an 8-bit optimizer,
sharding over its GPUs, offload), and, where a time estimate exists, finishes within the deadline
and serves the load. It is null only when that cannot be told: the job's bounds straddle
the memory (the reason then names the options that settle it), the QPS asked lies inside
the throughput's error band, or the machine's memory is unknown. The verdict's plan is this machine's own when it holds the job, else the
comparison's: the fastest single GPU that holds it, or the plan with the fewest GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hwadvisor.engine.context import Context
from hwadvisor.models.advice import DeviceClass, PlanSummary
from hwadvisor.models.workload import Scenario

#: Scenarios where any machine with a CPU "fits" when the job's memory is unknown:
#: prototyping and data pipelines run at whatever size the machine allows (S1, S8).
ANY_CPU_FITS = frozenset({Scenario.PROTOTYPING, Scenario.PREPROCESSING})
_TRAINING = (Scenario.TRAINING, Scenario.DISTRIBUTED)


@dataclass(frozen=True)
class HereFit:
    """Whether this machine runs the job as recommended, why, with which fixes and plan."""

    fits: bool | None
    reasons: list[str]
    fixes: list[str] = field(default_factory=list)
    plan: PlanSummary | None = None


def and3(values: list[bool | None]) -> bool | None:
    """Three-valued AND: any false is false, else any unknown is unknown."""
    if any(v is False for v in values):
        return False
    if any(v is None for v in values):
        return None
    return True


def _memory_reason(what: str, mem: bool | None, why: Any) -> str:
    """``this machine's memory: fits with activation checkpointing (...)``."""
    if why:
        return f"{what}: {why}"
    word = "fits" if mem else "does not fit" if mem is False else "may or may not fit"
    return f"{what}: the job {word}"


def _load_checks(
    ctx: Context, slot: str, scenario: Scenario
) -> tuple[list[bool | None], list[str]]:
    """The deadline (training), the QPS and the latency target there, where asked."""
    checks: list[bool | None] = []
    reasons: list[str] = []
    here = slot == "estimate.here"
    if scenario in _TRAINING:
        within = ctx.get(f"{slot}.within_deadline")
        checks.append(within if here else within if within is not None else True)
        if within is not None:
            reasons.append(
                f"it {'finishes' if within else 'does not finish'} within the deadline there"
            )
        elif here and ctx.get(f"{slot}.total_time_s") is not None:
            reasons.append(
                "the deadline lies inside the training time's error band here; time a "
                "part of the job here to settle it"
            )
        elif here:
            reasons.append("the training time here is unknown")
    if ctx.get("workload.qps") is not None and ctx.get(f"{slot}.throughput_samples_s") is not None:
        serves = ctx.get(f"{slot}.serves_qps")
        checks.append(serves)
        reasons.append(
            "it serves the requested QPS"
            if serves
            else "it cannot serve the requested QPS"
            if serves is False
            else "the requested QPS lies inside the throughput's error band there; "
            "measure the rate there to settle it"
        )
    if here and ctx.get("workload.latency_ms") is not None:
        meets = ctx.get(f"{slot}.meets_latency")
        if meets is not None:
            checks.append(meets)
            reasons.append(
                "it meets the latency target" if meets else "it misses the latency target"
            )
        elif ctx.get(f"{slot}.latency_ms") is not None:
            checks.append(None)
            reasons.append(
                "the latency target lies inside the step time's error band here; measure "
                "the latency here to settle it"
            )
    return checks, reasons


def _cpu(ctx: Context, scenario: Scenario) -> HereFit:
    mem = ctx.get("estimate.here.fits_after_fixes")
    why = ctx.get("estimate.here.planned_reason") or ctx.get("estimate.here.fit_reason")
    fixes = list(ctx.get("estimate.here.planned_fixes") or []) if mem else []
    if mem is None and scenario in ANY_CPU_FITS:
        mem, reasons = True, ["any CPU runs prototyping and data pipelines at a size it can hold"]
    elif mem is None and ctx.get("estimate.here.memory_bytes") is None:
        reasons = ["the job's memory here is unknown"]
    else:
        reasons = [_memory_reason("this machine's memory", mem, why)]
    checks, more = _load_checks(ctx, "estimate.here", scenario)
    return HereFit(and3([mem, *checks]), reasons + more, fixes)


def plan_at(ctx: Context, prefix: str, text_key: str = "plan") -> PlanSummary | None:
    """The plan whose fields are flattened below ``prefix`` (an estimate's ``.plan``)."""
    text = ctx.get(f"{prefix}.{text_key}")
    if not text:
        return None
    return PlanSummary(
        device=ctx.get(f"{prefix}.device"),
        name=ctx.get(f"{prefix}.name"),
        gpus=int(ctx.get(f"{prefix}.gpus") or 1),
        strategy=ctx.get(f"{prefix}.strategy") or "single",
        fixes=list(ctx.get(f"{prefix}.fixes") or []),
        text=str(text),
    )


def slot_plan(ctx: Context, slot: str) -> PlanSummary | None:
    """The plan the job as recommended runs with on ``slot``: as written, or its plan."""
    if not ctx.get(f"{slot}.fits_after_fixes"):
        return None
    name, gpus = ctx.get(f"{slot}.name") or ctx.get(f"{slot}.device"), ctx.get(f"{slot}.gpus") or 1
    plan = plan_at(ctx, f"{slot}.plan")
    if plan is not None and plan.gpus <= gpus and ctx.get(f"{slot}.fits"):
        return plan  # a plan the row runs as written (a language model's sharding)
    if ctx.get(f"{slot}.fits"):
        strategy = "single" if gpus == 1 else "DDP"
        text = f"{gpus} × {name}" + ("" if gpus == 1 else " with DDP")
        return PlanSummary(
            device=ctx.get(f"{slot}.device"), name=name, gpus=gpus, strategy=strategy, text=text
        )
    return plan if plan is not None and plan.gpus <= gpus else None


def _local(ctx: Context, slot: str, scenario: Scenario) -> HereFit:
    name = ctx.get(f"{slot}.name")
    gpus = ctx.get(f"{slot}.gpus") or 1
    what = f"this machine's {name}" if gpus == 1 else f"this machine's {gpus} × {name}"
    mem = ctx.get(f"{slot}.fits_after_fixes")
    why = ctx.get(f"{slot}.planned_reason") or ctx.get(f"{slot}.fit_reason")
    fixes = list(ctx.get(f"{slot}.planned_fixes") or []) if mem else []
    checks, more = _load_checks(ctx, slot, scenario)
    reasons = [_memory_reason(what, mem, why), *more]
    return HereFit(and3([mem, *checks]), reasons, fixes, slot_plan(ctx, slot))


def _unpriced(ctx: Context, need: int, scenario: Scenario) -> HereFit:
    """This machine's GPU is not in the catalog: its memory against the job's need."""
    count = ctx.get("gpu.count") or 0
    slot = "estimate.best_multi_gpu" if need > 1 else "estimate.best_gpu"
    job = ctx.get(f"{slot}.memory_after_fixes_bytes") or ctx.get(f"{slot}.memory_bytes")
    biggest = ctx.get("gpu.max_memory_bytes")
    if job is None or biggest is None:
        return HereFit(None, ["the job's GPU memory need or this GPU's memory is unknown"])
    fits = job <= biggest
    if not fits and need > 1 and ctx.get(f"{slot}.needs_sharding"):
        # Sharded (FSDP/ZeRO-3) the job's state spreads over the GPUs this machine has.
        fits = job / count <= biggest
    return HereFit(
        fits, [f"the job {'fits' if fits else 'does not fit'} in this machine's GPU memory"]
    )


def _gpu(ctx: Context, need: int, scenario: Scenario) -> HereFit:
    count = ctx.get("gpu.count") or 0
    if count == 0:
        return HereFit(
            False, [f"this machine has no GPU; the job needs {'several' if need > 1 else 'one'}"]
        )
    one = "estimate.local_gpu" if ctx.get("estimate.local_gpu.name") is not None else None
    many = "estimate.local_gpus" if ctx.get("estimate.local_gpus.name") is not None else None
    if need > 1 and many is not None:
        return _local(ctx, many, scenario)
    if one is None:
        return _unpriced(ctx, need, scenario)
    alone = _local(ctx, one, scenario)
    if need > 1 and ctx.get(f"{one}.fits_after_fixes") is False:
        more = (
            "this machine has one GPU; the job needs several"
            if count == 1
            else "this machine's other GPUs are of other types"
        )
        return HereFit(False, [*alone.reasons, more])
    return alone


def fits_here(device: DeviceClass, ctx: Context, scenario: Scenario) -> HereFit:
    """Whether this machine runs the job as recommended on ``device`` (``fits_here``)."""
    if device is DeviceClass.CPU:
        return _cpu(ctx, scenario)
    return _gpu(ctx, 2 if device is DeviceClass.MULTI_GPU else 1, scenario)


def recommended_plan(device: DeviceClass, ctx: Context, here: HereFit) -> PlanSummary | None:
    """The plan the verdict names: this machine's when it runs the job, else the
    comparison's (the best single GPU's, the fewest-GPU plan, or the multi-GPU row's)."""
    if device is DeviceClass.CPU:
        return None
    several = device is DeviceClass.MULTI_GPU
    if here.fits and here.plan is not None and (here.plan.gpus > 1) == several:
        return here.plan
    if not several:
        plan = slot_plan(ctx, "estimate.best_gpu")
        return plan if plan is not None and plan.gpus == 1 else None
    return plan_at(ctx, "estimate.multi_gpu_plan") or slot_plan(ctx, "estimate.best_multi_gpu")
