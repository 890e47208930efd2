"""Derived facts from the estimates: which estimate fills each slot, and its figures.

The estimate report holds one row per device; rules read five *slots*
(``estimate.here``, ``estimate.best_gpu``, ...), each with the estimate's own fields
and the facts derived here (hours, deadline, latency, QPS, memory after fixes).
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.engine.derive import Context, FactSpec, FactType, Registry, flatten
from hwadvisor.models.band import HERE_CLASSES, TimeBand
from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
from hwadvisor.models.workload import Workload

ESTIMATE_SLOTS = {
    "here": "this machine (or the one in --facts)",
    "best_gpu": "the fastest single catalog GPU that fits the job (else the fastest)",
    "best_multi_gpu": "the fastest multi-GPU catalog configuration",
    "local_gpu": "one of this machine's own GPUs (its catalog entry), when the catalog knows it",
    "local_gpus": "all of this machine's GPUs of that type together, when it has several",
}
#: Prefix of the estimate device ids that price this machine's own GPUs.
LOCAL_PREFIX = "local:"
#: Throughput headroom over the requested QPS before a device "serves" it (bursts, jitter).
QPS_HEADROOM = 1.3
#: The most GPUs a plan may use (estimate.plan.MAX_GPUS; not imported: the engine reads
#: documents, and importing the estimator would cost every rules command ~0.2 s).
MAX_PLAN_GPUS = 4096
#: Estimate fields that are not facts a rule reads (lists and breakdowns).
SLOT_EXCLUDED = frozenset({"memory", "fixes", "assumptions", "time_breakdown_s"})


def is_sharding(fix: str) -> bool:
    """A fix that spreads the job over several GPUs does not make one GPU enough."""
    return "shard" in fix.lower() or "zero-3" in fix.lower()


def fix_that_fits(est: DeviceEstimate) -> str | None:
    """The first memory fix, sharding apart, that makes the job fit."""
    return next((f.fix for f in est.fixes if f.fits and not is_sharding(f.fix)), None)


def planned(est: DeviceEstimate) -> bool | None:
    """The job as recommended fits ``est``'s device(s): ``fits_planned`` where ``recommend``
    decided it (as written, or with the fixes or plan that make it fit), else (a language
    model's own fit) fits, or a fix other than sharding that fits."""
    if est.planned_reason is not None:
        return est.fits_planned
    return bool(est.fits or fix_that_fits(est)) if est.fits is not None else None


def planned_fixes(est: DeviceEstimate) -> list[str]:
    """The fixes the job as recommended applies there (empty: as written, or no fit).

    A plan's fixes, with its sharding when it spreads over several GPUs; else the
    cumulative fixes up to the first that fits (sharding apart on one device).
    """
    if est.fits or planned(est) is not True:
        return []
    p = est.plan
    if p is not None and p.gpus <= est.gpus:
        return [*p.fixes, *([f"{p.strategy} across {p.gpus} GPUs"] if p.gpus > 1 else [])]
    out: list[str] = []
    for f in est.fixes:
        if est.gpus == 1 and is_sharding(f.fix):
            break
        out.append(f.fix)
        if f.fits:
            return out
    return []


def _decided(est: DeviceEstimate) -> bool:
    """Whether the fit there was decided, open included (the job's memory is known)."""
    return planned(est) is not None or (est.planned_reason is not None and est.memory is not None)


def pick(
    estimates: list[DeviceEstimate], *, multi: bool, gpu_ids: frozenset[str] | None
) -> DeviceEstimate | None:
    """The best catalog GPU (or multi-GPU) estimate: fits first, then fastest, then largest."""
    pool = [
        e
        for e in estimates
        if e.device != "here"
        and not e.device.startswith(LOCAL_PREFIX)
        and (gpu_ids is None or e.device in gpu_ids)
        and (e.gpus > 1) == multi
    ]

    def rank(e: DeviceEstimate) -> tuple[int, float, int, str]:
        after = planned(e)
        fit = 0 if e.fits else 1 if after else 2 if after is None else 3
        time = e.total_time_s if e.total_time_s is not None else float("inf")
        return fit, time, -(e.device_memory_bytes or 0), e.device

    return min(pool, key=rank, default=None)


@dataclass(frozen=True)
class Slot:
    """One estimate in one slot, with the workload its targets come from."""

    est: DeviceEstimate
    workload: Workload


SLOT: Registry[Slot] = Registry("one estimate slot", relative=True)


@SLOT.fact("total_time_h", FactType.NUMBER, "total_time_s in hours")
def total_time_h(s: Slot) -> float | None:
    """The job's time in hours."""
    t = s.est.total_time_s
    return t / 3600.0 if t is not None else None


def _inside_here_band(band: TimeBand | None, target_s: float) -> bool:
    """Whether a time target lies inside the error band of an estimate of this machine
    (``low <= target < high``): there the estimate cannot say which side it falls on.

    Only this machine's estimates: they rest on its bench, which its load moves from one
    run to the next, so a verdict that turned on the point estimate would flip between
    runs. A catalog device's estimate is the same at every run; its band is printed and
    its point decides."""
    return band is not None and band.band_class in HERE_CLASSES and band.low <= target_s < band.high


@SLOT.fact(
    "within_deadline",
    FactType.BOOL,
    "total_time_s <= workload.deadline_hours; null on this machine's CPU when the "
    "deadline lies inside the total time's error band (total_time_band_s: low <= "
    "deadline < high), so the estimate cannot tell",
)
def within_deadline(s: Slot) -> bool | None:
    """The job finishes within the workload's deadline, all through its error band here."""
    t, deadline = s.est.total_time_s, s.workload.deadline_hours * 3600.0
    if t is None or _inside_here_band(s.est.total_time_band_s, deadline):
        return None
    return t <= deadline


@SLOT.fact(
    "latency_ms",
    FactType.NUMBER,
    "step_time_s in ms (one batch; at batch 1 the per-request latency)",
)
def latency_ms(s: Slot) -> float | None:
    """One step (one batch) in milliseconds."""
    step = s.est.step_time_s
    return step * 1000.0 if step is not None else None


@SLOT.fact(
    "qps_needed",
    FactType.NUMBER,
    "workload.qps x 1.3 headroom: the throughput that serves_qps asks for",
)
def qps_needed(s: Slot) -> float | None:
    """The samples (or requests) per second that serve the QPS asked with headroom."""
    qps = s.workload.qps
    return qps * QPS_HEADROOM if qps is not None else None


@SLOT.fact(
    "serves_qps",
    FactType.BOOL,
    "throughput_samples_s >= qps_needed; null when qps_needed lies inside the "
    "throughput's error band (throughput_band: low < qps_needed <= high), so the "
    "estimate cannot tell",
)
def serves_qps(s: Slot) -> bool | None:
    """The throughput covers the requested QPS with headroom, all through its error band.

    A need inside the band is not decided either way: the project's validation saw
    estimates of this class off by that much, so which side of the need the point
    estimate falls on is noise (a busy bench moves it), and the verdict must not turn
    on it. A measured estimate has no band and is decided by its figure.
    """
    tput, need = s.est.throughput_samples_s, qps_needed(s)
    if tput is None or need is None:
        return None
    band = s.est.throughput_band
    if band is not None and band.low < need <= band.high:
        return None
    return tput >= need


@SLOT.fact(
    "meets_latency",
    FactType.BOOL,
    "latency_ms <= workload.latency_ms; null on this machine's CPU when the target lies "
    "inside the step time's error band (time_band_s: low <= target < high)",
)
def meets_latency(s: Slot) -> bool | None:
    """One step is within the latency target, all through its error band here."""
    latency, target = latency_ms(s), s.workload.latency_ms
    if latency is None or target is None or _inside_here_band(s.est.time_band_s, target / 1e3):
        return None
    return latency <= target


@SLOT.fact(
    "fits_after_fixes",
    FactType.BOOL,
    "the job as recommended fits this device (this row's GPUs): as written, or with the "
    "fixes or plan that make it fit (fits_planned); null only when its bounds straddle the memory",
)
def fits_after_fixes(s: Slot) -> bool | None:
    """The job fits there, as written or as recommended (its fixes, its plan)."""
    return planned(s.est)


@SLOT.fact(
    "first_fitting_fix",
    FactType.STRING,
    "the fixes the job as recommended applies there, in order (null: as written, or no fit)",
)
def first_fitting_fix(s: Slot) -> str | None:
    """The fixes that make it fit, in words."""
    fixes = planned_fixes(s.est)
    return (
        ", ".join(fixes[:-1]) + " and " + fixes[-1] if len(fixes) > 1 else next(iter(fixes), None)
    )


@SLOT.fact("planned_fixes", FactType.LIST, "the fixes of the job as recommended there, in order")
def planned_fixes_fact(s: Slot) -> list[str]:
    """The fixes the job as recommended applies there (empty: as written, or no fit)."""
    return planned_fixes(s.est)


@SLOT.fact(
    "memory_after_fixes_bytes",
    FactType.NUMBER,
    "memory_bytes, or that of the job as recommended (its plan or its fixes) per device",
)
def memory_after_fixes(s: Slot) -> float | None:
    """The memory the job needs as it would run: as written when it fits, else after the fixes."""
    if s.est.fits:
        return s.est.memory_bytes
    if planned(s.est) is not True:
        return None
    p = s.est.plan
    if p is not None and p.gpus <= s.est.gpus:
        return p.memory.total_bytes
    fixes = planned_fixes(s.est)
    return next((f.memory_bytes for f in s.est.fixes if fixes and f.fix == fixes[-1]), None)


@SLOT.fact(
    "needs_sharding",
    FactType.BOOL,
    "does not fit this row's device(s) even with fixes; a plan over more GPUs holds it",
)
def needs_sharding(s: Slot) -> bool | None:
    """Only more GPUs make it fit (unknown unless the job as recommended does not fit)."""
    if planned(s.est) is not False:
        return None
    if s.est.planned_reason is not None:
        return s.est.plan is not None and s.est.plan.gpus > s.est.gpus
    shard = next((f.fix for f in s.est.fixes if f.fits and is_sharding(f.fix)), None)
    return fix_that_fits(s.est) is None and shard is not None


def slot_context(est: DeviceEstimate, slot: str, workload: Workload) -> Context:
    """The slot's paths: the estimate's fields and the facts derived from them."""
    out: Context = {}
    flatten(est.model_dump(mode="json", exclude=set(SLOT_EXCLUDED)), f"estimate.{slot}", out)
    out.update(SLOT.compute(Slot(est, workload), prefix=f"estimate.{slot}"))
    return out


@dataclass(frozen=True)
class Estimates:
    """The estimate report (or none), the estimate picked for each slot, and the catalog
    GPUs compared (``catalog``: every catalog GPU row, single and multi-GPU)."""

    report: EstimateReport | None
    slots: dict[str, DeviceEstimate]
    catalog: tuple[DeviceEstimate, ...] = ()

    @classmethod
    def of(cls, report: EstimateReport | None, gpu_ids: frozenset[str] | None) -> Estimates:
        """Pick each slot's estimate from ``report``."""
        if report is None:
            return cls(None, {})
        rows = report.estimates
        catalog = tuple(
            e
            for e in rows
            if e.device != "here"
            and not e.device.startswith(LOCAL_PREFIX)
            and (gpu_ids is None or e.device in gpu_ids)
        )
        local = [e for e in rows if e.device.startswith(LOCAL_PREFIX)]
        slots = {
            "here": next((e for e in rows if e.device == "here"), None),
            "best_gpu": pick(rows, multi=False, gpu_ids=gpu_ids),
            "best_multi_gpu": pick(rows, multi=True, gpu_ids=gpu_ids),
            "local_gpu": next((e for e in local if e.gpus == 1), None),
            "local_gpus": next((e for e in local if e.gpus > 1), None),
        }
        return cls(report, {k: v for k, v in slots.items() if v is not None}, catalog)

    @property
    def singles(self) -> list[DeviceEstimate]:
        """The single catalog GPUs compared."""
        return [e for e in self.catalog if e.gpus == 1]


ESTIMATES: Registry[Estimates] = Registry("the estimate report")


@ESTIMATES.fact("estimate.available", FactType.BOOL, "an estimate report was used")
def available(e: Estimates) -> bool:
    """An estimate report was given."""
    return e.report is not None


@ESTIMATES.fact(
    "estimate.table_has_time",
    FactType.BOOL,
    "some row the advice shows has a time: a total time in the estimate table's time "
    "column (this machine, every GPU, multi-GPU and CPU instance compared) or a time to "
    "first token in the serving table; false when none has or nothing was estimated "
    "(never null)",
)
def table_has_time(e: Estimates) -> bool:
    """Whether the advice's tables show a time on any row.

    The rows are the report's, every one of them (the advice's table lists them all, not
    only the slots' picks): a rule that says there is no time estimate must not fire
    beside a table that shows one.
    """
    rows = e.report.estimates if e.report is not None else []
    return any(
        x.total_time_s is not None or (x.serving is not None and x.serving.ttft_s is not None)
        for x in rows
    )


def _speedup(e: Estimates, slot: str) -> float | None:
    here, other = e.slots.get("here"), e.slots.get(slot)
    here_t = here.total_time_s if here is not None else None
    other_t = other.total_time_s if other is not None else None
    return here_t / other_t if here_t and other_t else None


@ESTIMATES.fact(
    "estimate.speedup_best_gpu",
    FactType.NUMBER,
    "estimate.here.total_time_s / estimate.best_gpu.total_time_s",
)
def speedup_best_gpu(e: Estimates) -> float | None:
    """How many times faster the best single GPU is than this machine."""
    return _speedup(e, "best_gpu")


@ESTIMATES.fact(
    "estimate.speedup_best_multi_gpu",
    FactType.NUMBER,
    "estimate.here.total_time_s / estimate.best_multi_gpu.total_time_s",
)
def speedup_best_multi_gpu(e: Estimates) -> float | None:
    """How many times faster the best multi-GPU configuration is than this machine."""
    return _speedup(e, "best_multi_gpu")


@ESTIMATES.fact(
    "estimate.any_single_gpu_fits",
    FactType.BOOL,
    "some single catalog GPU compared holds the job alone, as written or with fixes "
    "(false when none surely does, open ones included; null when the memory is unknown)",
)
def any_single_gpu_fits(e: Estimates) -> bool | None:
    """One of the single GPUs compared holds the job as recommended."""
    if any(planned(x) for x in e.singles):
        return True
    return False if any(_decided(x) for x in e.singles) else None


@ESTIMATES.fact(
    "estimate.single_gpu_ruled_out",
    FactType.BOOL,
    "no single catalog GPU compared surely holds the job, even with fixes (false when one "
    "does or nothing is known: never null)",
)
def single_gpu_ruled_out(e: Estimates) -> bool:
    """The memory alone rules out one GPU."""
    return any_single_gpu_fits(e) is False


@ESTIMATES.fact(
    "estimate.single_gpu_too_slow",
    FactType.BOOL,
    "estimate.best_gpu misses the deadline and estimate.best_multi_gpu makes it (never null)",
)
def single_gpu_too_slow(e: Estimates) -> bool:
    """One GPU is too slow for the deadline where several are not."""
    one, many = e.slots.get("best_gpu"), e.slots.get("best_multi_gpu")
    if e.report is None or one is None or many is None:
        return False
    wl = e.report.workload
    return within_deadline(Slot(one, wl)) is False and within_deadline(Slot(many, wl)) is True


@ESTIMATES.fact(
    "estimate.cpu_finishes_in_time",
    FactType.BOOL,
    "estimate.here holds the job as recommended (or its memory is unknown) and finishes "
    "within the deadline (never null)",
)
def cpu_finishes_in_time(e: Estimates) -> bool:
    """This machine's CPU does the job in time."""
    here = e.slots.get("here")
    if e.report is None or here is None:
        return False
    in_time = within_deadline(Slot(here, e.report.workload)) is True
    return in_time and planned(here) is not False


@ESTIMATES.fact(
    "estimate.multi_gpu_needed",
    FactType.BOOL,
    "single_gpu_ruled_out or single_gpu_too_slow: one GPU does not do the job (never null)",
)
def multi_gpu_needed(e: Estimates) -> bool:
    """Several GPUs are needed, for memory or for time."""
    return single_gpu_ruled_out(e) or single_gpu_too_slow(e)


_PLAN_DOCS = {
    "plan": 'the plan in words: "4 × NVIDIA A100 SXM 80GB with FSDP (ZeRO-3) and activation checkpointing"',
    "gpus": "how many GPUs it uses",
    "device": "the catalog id of its GPU",
    "name": "the name of its GPU",
    "strategy": "single, ZeRO-1, ZeRO-2, FSDP (ZeRO-3) or tensor parallel",
    "fixes": "the fixes it applies, in order",
}
_PLAN_TYPES = {"plan": FactType.STRING, "gpus": FactType.NUMBER, "fixes": FactType.LIST}


@ESTIMATES.family(
    FactSpec(
        f"estimate.multi_gpu_plan.{k}",
        _PLAN_TYPES.get(k, FactType.STRING),
        f"when no single GPU compared holds the job: the plan with the fewest GPUs (then "
        f"the fewest fixes, then the fastest GPU) over the catalog GPUs compared; {doc}",
        derived=True,
    )
    for k, doc in _PLAN_DOCS.items()
)
def multi_gpu_plan(e: Estimates) -> Context:
    """The fewest-GPU plan over the compared catalog GPUs, when none holds the job alone."""
    paths = [f"estimate.multi_gpu_plan.{k}" for k in _PLAN_DOCS]
    if any_single_gpu_fits(e) is not False:
        return dict.fromkeys(paths)
    rows = [x for x in e.catalog if x.plan is not None and x.plan.gpus > 1]
    if not rows:
        return dict.fromkeys(paths)

    def rank(x: DeviceEstimate) -> tuple[int, int, float, str]:
        assert x.plan is not None
        step = x.step_time_s if x.step_time_s is not None else float("inf")
        return x.plan.gpus, len(x.plan.fixes), step, x.plan.device

    best = min(rows, key=rank).plan
    assert best is not None
    return {f"estimate.multi_gpu_plan.{k}": getattr(best, k) for k in _PLAN_DOCS}


@ESTIMATES.fact(
    "estimate.no_plan_reason",
    FactType.STRING,
    "when no single GPU compared holds the job and no plan over several of them surely "
    "does: why, and the options that would settle it",
)
def no_plan_reason(e: Estimates) -> str | None:
    """Why no plan is named for a job that no single GPU holds."""
    if any_single_gpu_fits(e) is not False:
        return None
    if any(x.plan is not None and x.plan.gpus > 1 for x in e.catalog):
        return None
    settle = next((x.memory.settle for x in e.catalog if x.memory and x.memory.settle), [])
    text = (
        f"no plan of up to {MAX_PLAN_GPUS:,} of the GPUs compared surely holds it: what each GPU "
        "holds of the activations does not shrink with their number (tensor and sequence "
        "parallelism are not modelled)"
    )
    return text + (f"; give {' and '.join(settle)} to settle it" if settle else "")
