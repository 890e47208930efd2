"""Estimating a workload on several devices: the :class:`EstimateReport`.

Per device: memory with its bounds, fit, fixes and multi-GPU plan (:mod:`.memory`), time
per step with its error band and data-parallel scaling (:mod:`.timing`); a language
model's serving or fine-tuning through :mod:`.llm`."""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwadvisor.catalog import lookup_device
from hwadvisor.catalog.schema import DeviceEntry, DeviceKind
from hwadvisor.errors import UsageError
from hwadvisor.estimate.llm.bridge import llm_estimate
from hwadvisor.estimate.llm.target import catalog_target, here_target
from hwadvisor.estimate.memory.fixes import memory_fixes
from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown, decide_fit
from hwadvisor.estimate.memory.plan import Gpu, plan_for
from hwadvisor.estimate.timing.bands import band_class, with_bands
from hwadvisor.estimate.timing.catalog import device_model
from hwadvisor.estimate.timing.cpu import here_model
from hwadvisor.estimate.timing.device import DeviceModel
from hwadvisor.estimate.timing.plan_time import timed_plan
from hwadvisor.estimate.timing.scaling import efficiency, total_time
from hwadvisor.estimate.timing.step import step_time
from hwadvisor.estimate.workload.defaults import precision_defaulted
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.estimate import DeviceEstimate, EstimateReport, MemoryFix
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Precision, Workload

#: ``--on`` when none is given: this machine and a spread of GPUs, small to large.
DEFAULT_DEVICES = ["here", "t4", "l4", "a10", "rtx-4090", "a100-80gb", "h100-sxm"]


def estimate_workload(
    workload: Workload,
    *,
    facts: Facts | None,
    bench: BenchReport | None,
    on: list[str] | None = None,
    gpus: int = 1,
    extra_catalogs: list[Path] | None = None,
) -> EstimateReport:
    """Time and memory of ``workload`` on each device of ``on`` ("here" or catalog ids).

    ``None`` means "here" plus a spread of GPUs. Unknown ids raise CatalogError with a
    did-you-mean; unknown figures stay null with the reason in ``assumptions``.
    """
    if gpus < 1:
        raise UsageError(f"--gpus must be at least 1, got {gpus}")
    ids = list(dict.fromkeys(d.lower() for d in (on or DEFAULT_DEVICES)))
    # Resolve every id first, so a typo fails before any work is done; a family name
    # ("h100") or a prefix resolves with a note, stated in that device's assumptions.
    found = {d: lookup_device(d, extra_catalogs) for d in ids if d != "here"}
    estimates = []
    for dev in ids:
        if dev == "here":
            here = _here(workload, facts, bench)
            if gpus > 1:
                note = "--gpus applies to catalog GPUs; 'here' is priced as this machine's CPU"
                here = here.model_copy(update={"assumptions": [*here.assumptions, note]})
            estimates.append(here)
        else:
            entry = found[dev].entry
            est = estimate_on_entry(workload, entry, gpus=gpus, time_plans=True)
            notes = [*found[dev].notes, *est.assumptions]
            if gpus > 1 and entry.kind is not DeviceKind.GPU:
                notes.append(f"{dev} is not a GPU: --gpus ignored")
            estimates.append(est.model_copy(update={"assumptions": notes}))
    return EstimateReport(workload=workload, estimates=estimates)


def _here(wl: Workload, facts: Facts | None, bench: BenchReport | None) -> DeviceEstimate:
    if wl.priced_by_llm:
        est = llm_estimate(wl, here_target(facts, bench))
    else:
        est = _estimate(wl, here_model(facts, bench, wl.precision), gpus=1, gpu=False)
        est = _faster_in_fp32(wl, est, facts, bench)
    extra = []
    if facts is not None and facts.gpus:
        extra.append(
            "'here' is priced on this machine's CPU; name the GPU's catalog id with --on for its estimate"
        )
    update: dict[str, Any] = {}
    if facts is None:
        extra.append("machine facts unknown: memory fit here unknown")
        if est.memory is not None and est.device_memory_bytes is None and not wl.priced_by_llm:
            update["fit_reason"] = (
                "this machine's memory is unknown: give --facts FILE (hwadvisor check --json)"
            )
    return est.model_copy(update={**update, "assumptions": [*est.assumptions, *extra]})


def _faster_in_fp32(
    wl: Workload, est: DeviceEstimate, facts: Facts | None, bench: BenchReport | None
) -> DeviceEstimate:
    """This CPU's estimate in fp32 where the job's bf16 (or amp) was only a default and
    fp32 is faster here and fits as well: what a practitioner runs on a CPU without a
    native bf16 dot product, where bf16 is converted to fp32 and back (the bench's bf16
    matmul figure says how much slower). A precision the user gave is kept; the catalog
    GPUs keep the default."""
    if wl.precision not in (Precision.BF16, Precision.AMP) or not precision_defaulted(
        wl.assumptions
    ):
        return est
    fp32 = _estimate(
        wl.model_copy(update={"precision": Precision.FP32}),
        here_model(facts, bench, Precision.FP32),
        gpus=1,
        gpu=False,
    )
    if est.step_time_s is None or fp32.step_time_s is None:
        return est
    fits_as_well = bool(fp32.fits_planned) or not est.fits_planned
    if fp32.step_time_s >= est.step_time_s or not fits_as_well:
        return est
    note = (
        f"here: priced in fp32, not the default {wl.precision.value}: this CPU runs the step "
        f"{est.step_time_s / fp32.step_time_s:.1f}x faster in fp32 (no native bf16 math "
        "here, or too little to pay); give --precision to price another"
    )
    return fp32.model_copy(update={"assumptions": [*fp32.assumptions, note]})


def _estimate(
    wl: Workload,
    rates: DeviceModel,
    *,
    gpus: int,
    gpu: bool,
    plannable: bool = False,
    rates_at: Callable[[Precision], DeviceModel] | None = None,
) -> DeviceEstimate:
    """Time and memory on one device; ``plannable``: a GPU a multi-GPU plan may use;
    ``rates_at``: the device's rates at another precision, to time the plan."""
    notes = list(wl.assumptions) + list(rates.assumptions)
    st = step_time(wl, rates)
    notes += st.notes
    step = st.total
    parts = dict(st.parts)
    if step is not None and gpus > 1:
        eff, text = efficiency(wl, rates, step, gpus)
        notes.append(text)
        parts["comm"] = step / eff - step
        step = step / eff
    throughput = wl.batch_size * gpus / step if step else None
    total = total_time(wl, step, wl.batch_size * gpus)
    if wl.dataset_size is None:
        notes.append("dataset size unknown: total time unknown (give --dataset-size)")
    memory = _memory(wl, rates, gpus=gpus, gpu=gpu, plannable=plannable, notes=notes)
    if memory["plan"] is not None and rates_at is not None:
        memory["plan"] = timed_plan(wl, memory["plan"], rates_at)
    est = DeviceEstimate(
        device=rates.device,
        name=rates.name,
        gpus=gpus,
        step_time_s=step,
        total_time_s=total,
        throughput_samples_s=throughput,
        **memory,
        basis=rates.basis,
        assumptions=notes,
        time_breakdown_s=parts,
    )
    # How far estimates of this class were from measurement (catalog/data/error_bands.yaml).
    return with_bands(est, band_class(rates, gpus, parts))


def _memory(
    wl: Workload, rates: DeviceModel, *, gpus: int, gpu: bool, plannable: bool, notes: list[str]
) -> dict[str, Any]:
    """The memory fields of a device estimate (notes appended to ``notes``).

    The peak and its bounds (from the workload's counted peaks when it has them), the fit
    decided from the bounds with its reason, the fixes when the job does not fit, and on a
    GPU a multi-GPU plan may use, the smallest plan that holds it.
    """
    counts = wl.memory_counts
    mem = breakdown(
        wl, MemoryPlan(precision=wl.precision, batch=wl.batch_size), gpu=gpu, counts=counts
    )
    total_mem = mem.total_bytes if mem else None
    if mem is None:
        notes.append("parameter count unknown: memory unknown")
    elif total_mem is None:
        notes.append("activation memory unknown for this model: total memory unknown")
    device_mem = rates.memory_bytes
    decision = decide_fit(mem, device_mem)
    fit = decision.fits
    fixes: list[MemoryFix] = []
    plan = None
    if fit is False and device_mem:
        # A GPU a plan may use is a CUDA/ROCm GPU; an Apple SoC's (MPS) is not.
        fixes = memory_fixes(wl, device_mem, gpu=gpu, gpus=gpus, counts=counts, cuda=plannable)
        if plannable:
            gpu_of = Gpu(rates.device, rates.name or rates.device, device_mem)
            plan = plan_for(wl, gpu_of, counts=counts)
    if fit is not None:
        notes.append("fits with 10% headroom" if fit else "does not fit with 10% headroom")
    return {
        "memory_bytes": total_mem,
        "device_memory_bytes": device_mem,
        "fits": fit,
        "fit_reason": decision.reason,
        "memory": mem,
        "fixes": fixes,
        "plan": plan,
    }


def estimate_on_entry(
    workload: Workload, entry: DeviceEntry, *, gpus: int = 1, time_plans: bool = False
) -> DeviceEstimate:
    """Time and memory of ``workload`` on a device entry that need not be in the catalog.

    For a catalog device, and for the devices a cloud instance runs a job on
    (:func:`hwadvisor.catalog.instances.instance_device`): its GPUs, or its vCPUs' share of
    the processor, an entry derived in memory. ``gpus`` counts GPUs and is ignored for a
    CPU; ``time_plans``: a multi-GPU plan is timed too.
    """
    if gpus < 1:
        raise UsageError(f"--gpus must be at least 1, got {gpus}")
    is_gpu = entry.kind is DeviceKind.GPU
    n = gpus if is_gpu else 1
    if workload.priced_by_llm:
        return llm_estimate(workload, catalog_target(entry, n))
    return _estimate(
        workload,
        device_model(entry, workload.precision),
        gpus=n,
        gpu=entry.kind is not DeviceKind.CPU,
        plannable=is_gpu,
        rates_at=functools.partial(device_model, entry) if time_plans else None,
    )
