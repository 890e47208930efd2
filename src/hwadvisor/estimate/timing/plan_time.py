"""The time of a multi-GPU plan: the job as the plan runs it, priced like any step.

A plan (:mod:`hwadvisor.estimate.memory.plan`) changes what runs, and so the time:

- its precision: mixed precision, when the plan turned it on;
- the batch per GPU: gradient accumulation keeps the effective batch, so the samples a
  step processes are the plan's batch per GPU times its GPUs; the optimizer runs once
  per accumulated batch, and so do DDP's and ZeRO-1/2's gradient reductions (ZeRO-3
  gathers its parameters on every micro-step);
- recomputation: activation checkpointing runs each segment's forward again during the
  backward, one forward pass more per step (Chen et al. 2016, "Training Deep Nets with
  Sublinear Memory Cost", arXiv:1604.06174, section 3): a third more compute on a step
  whose forward and backward are three forwards' work;
- sharding: ZeRO-1 and ZeRO-2 move DDP's bytes, ZeRO-3 / FSDP 1.5x as many
  (:data:`hwadvisor.estimate.timing.scaling.ZERO3_VOLUME`), over NVLink within a node and the
  network between nodes (:func:`hwadvisor.estimate.timing.scaling.efficiency`).

An 8-bit optimizer leaves the time as it is (its step is a small share of a step).
Offloading the optimizer moves its step to the host CPU, whose time this does not
estimate, and tensor-parallel inference plans are not timed either: such plans keep
``step_time_s`` null with a note saying why.
"""

from __future__ import annotations

from collections.abc import Callable

from hwadvisor.estimate.memory.parts import is_inference
from hwadvisor.estimate.memory.plan import CHECKPOINTING, OFFLOAD
from hwadvisor.estimate.timing.device import DeviceModel
from hwadvisor.estimate.timing.scaling import ZERO3_VOLUME, efficiency, total_time
from hwadvisor.estimate.timing.step import StepTime, step_time
from hwadvisor.models.estimate import MultiGpuPlan
from hwadvisor.models.workload import Precision, Workload

#: Parts of a step that are forward or backward work (recomputation repeats a third).
RECOMPUTED = frozenset({"gemm", "conv", "other", "memory", "layout", "compute"})
#: Forward passes' worth of work in a training step (one forward, a backward of two).
TRAIN_FORWARDS = 3.0


def _untimed(plan: MultiGpuPlan, why: str) -> MultiGpuPlan:
    return plan.model_copy(update={"notes": [*plan.notes, f"time not estimated: {why}"]})


def timed_plan(
    wl: Workload, plan: MultiGpuPlan, rates_at: Callable[[Precision], DeviceModel]
) -> MultiGpuPlan:
    """``plan`` with its step time, total time and throughput (see the module)."""
    if is_inference(wl.task):
        return _untimed(plan, "tensor-parallel inference is not timed")
    if OFFLOAD in plan.fixes:
        return _untimed(plan, "the offloaded optimizer step runs on the host CPU")
    precision = Precision(plan.precision) if plan.precision else wl.precision
    batch = plan.batch_per_gpu or wl.batch_size
    job = wl.model_copy(update={"precision": precision, "batch_size": batch})
    rates = rates_at(precision)
    st = step_time(job, rates)
    if st.total is None:
        return _untimed(plan, st.notes[-1] if st.notes else "the step's time is unknown")
    accum = max(1, wl.batch_size // batch)
    notes: list[str] = []
    step = _micro_step(st, accum, CHECKPOINTING in plan.fixes, notes)
    zero3 = "ZeRO-3" in plan.strategy
    per = 1 if zero3 else accum  # micro-steps per gradient reduction
    eff, text = efficiency(job, rates, step * per, plan.gpus, volume=ZERO3_VOLUME if zero3 else 1.0)
    step /= eff
    notes += [text] if text else []
    return plan.model_copy(
        update={
            "step_time_s": step,
            "total_time_s": total_time(wl, step, batch * plan.gpus),
            "throughput_samples_s": batch * plan.gpus / step,
            "notes": [*plan.notes, *notes],
        }
    )


def _micro_step(st: StepTime, accum: int, checkpointing: bool, notes: list[str]) -> float:
    """One micro-step on one GPU: the optimizer once per ``accum`` of them (gradient
    accumulation), and the forward once more under activation checkpointing."""
    step = st.total or 0.0
    if accum > 1:
        saved = st.parts.get("optimizer", 0.0) * (1.0 - 1.0 / accum)
        step -= saved
        notes.append(
            f"gradient accumulation over {accum} micro-steps: the optimizer once per "
            f"{accum} (-{saved * 1e3:.3g} ms a micro-step)"
        )
    if checkpointing:
        extra = sum(v for k, v in st.parts.items() if k in RECOMPUTED) / TRAIN_FORWARDS
        step += extra
        notes.append(
            f"activation checkpointing recomputes the forward: +{extra * 1e3:.3g} ms a step"
        )
    return step
