"""When a job does not fit: the fixes in order, each with its effect (SPEC §6)."""

from __future__ import annotations

from dataclasses import replace

from hwadvisor.estimate.memory import MemoryPlan, breakdown, fits
from hwadvisor.models.estimate import MemoryFix
from hwadvisor.models.workload import Precision, Task, Workload


def _total(wl: Workload, plan: MemoryPlan, gpu: bool) -> int | None:
    mb = breakdown(wl, plan, gpu=gpu)
    return mb.total_bytes if mb else None


def _fix(
    wl: Workload, plan: MemoryPlan, text: str, device_bytes: int, gpu: bool
) -> MemoryFix | None:
    total = _total(wl, plan, gpu)
    if total is None:
        return None
    return MemoryFix(fix=text, memory_bytes=total, fits=bool(fits(total, device_bytes)))


def memory_fixes(wl: Workload, device_bytes: int, *, gpu: bool, gpus: int = 1) -> list[MemoryFix]:
    """Cumulative fixes, stopping at the first that fits; empty when nothing is known."""
    plan = MemoryPlan(precision=wl.precision, batch=wl.batch_size)
    steps: list[tuple[str, MemoryPlan]] = []
    if wl.task is Task.INFER:
        if plan.precision in (Precision.FP32, Precision.AMP):
            plan = replace(plan, precision=Precision.BF16)
            steps.append(("16-bit weights (bf16/fp16)", plan))
        if plan.precision is not Precision.INT8:
            plan = replace(plan, precision=Precision.INT8)
            steps.append(("int8 weight quantization", plan))
    elif plan.precision is Precision.FP32:
        plan = replace(plan, precision=Precision.BF16)
        steps.append(("mixed precision (bf16, or fp16 with loss scaling)", plan))
    batch = plan.batch
    while batch > 1:
        batch = max(1, batch // 2)
        accum = -(-wl.batch_size // batch)
        text = (
            f"batch {batch} with {accum} steps of gradient accumulation"
            if wl.task is Task.TRAIN
            else f"batch {batch}"
        )
        steps.append((text, replace(plan, batch=batch)))
        if fits(_total(wl, replace(plan, batch=batch), gpu), device_bytes):
            break
    plan = replace(plan, batch=batch)
    if wl.task is Task.TRAIN:
        plan = replace(plan, checkpointing=True)
        steps.append(("activation checkpointing", plan))
    if wl.task is Task.TRAIN:
        plan = replace(plan, optimizer_8bit=True)
        steps.append(("8-bit optimizer states", plan))
        for n in sorted({max(gpus, 2), 4, 8}):
            if n < 2:
                continue
            steps.append(
                (
                    f"ZeRO-3 / FSDP full sharding across {n} GPUs",
                    replace(plan, zero_stage=3, shards=n),
                )
            )
    out: list[MemoryFix] = []
    for text, p in steps:
        fix = _fix(wl, p, text, device_bytes, gpu)
        if fix is None:
            break
        out.append(fix)
        if fix.fits:
            break
    return out
