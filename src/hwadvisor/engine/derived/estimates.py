"""Derived facts from the estimates: which estimate fills each slot, and its figures.

The estimate report holds one row per device; rules read five *slots*
(``estimate.here``, ``estimate.best_gpu``, ...), each with the estimate's own fields
and the facts derived here (hours, deadline, latency, QPS, memory after fixes).
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.engine.derive import Context, FactType, Registry, flatten
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
#: Estimate fields that are not facts a rule reads (lists and breakdowns).
SLOT_EXCLUDED = frozenset({"memory", "fixes", "assumptions", "time_breakdown_s"})


def is_sharding(fix: str) -> bool:
    """A fix that spreads the job over several GPUs does not make one GPU enough."""
    return "shard" in fix.lower() or "zero-3" in fix.lower()


def fix_that_fits(est: DeviceEstimate) -> str | None:
    """The first memory fix, sharding apart, that makes the job fit."""
    return next((f.fix for f in est.fixes if f.fits and not is_sharding(f.fix)), None)


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
        fit = 0 if e.fits else 1 if fix_that_fits(e) else 2 if e.fits is None else 3
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


@SLOT.fact("within_deadline", FactType.BOOL, "total_time_s <= workload.deadline_hours")
def within_deadline(s: Slot) -> bool | None:
    """The job finishes within the workload's deadline."""
    t = s.est.total_time_s
    return t <= s.workload.deadline_hours * 3600.0 if t is not None else None


@SLOT.fact(
    "latency_ms",
    FactType.NUMBER,
    "step_time_s in ms (one batch; at batch 1 the per-request latency)",
)
def latency_ms(s: Slot) -> float | None:
    """One step (one batch) in milliseconds."""
    step = s.est.step_time_s
    return step * 1000.0 if step is not None else None


@SLOT.fact("serves_qps", FactType.BOOL, "throughput_samples_s >= workload.qps x 1.3 headroom")
def serves_qps(s: Slot) -> bool | None:
    """The throughput covers the requested QPS with headroom."""
    tput, qps = s.est.throughput_samples_s, s.workload.qps
    return tput >= qps * QPS_HEADROOM if tput is not None and qps is not None else None


@SLOT.fact("meets_latency", FactType.BOOL, "latency_ms <= workload.latency_ms")
def meets_latency(s: Slot) -> bool | None:
    """One step is within the latency target."""
    latency, target = latency_ms(s), s.workload.latency_ms
    return latency <= target if latency is not None and target is not None else None


@SLOT.fact(
    "fits_after_fixes", FactType.BOOL, "fits, or a memory fix other than sharding makes it fit"
)
def fits_after_fixes(s: Slot) -> bool | None:
    """The job fits one device, as written or after a fix that needs no more devices."""
    return bool(s.est.fits or fix_that_fits(s.est)) if s.est.fits is not None else None


@SLOT.fact(
    "first_fitting_fix",
    FactType.STRING,
    "the first memory fix (in order, sharding apart) that makes it fit",
)
def first_fitting_fix(s: Slot) -> str | None:
    """The first fix, sharding apart, that makes it fit."""
    return fix_that_fits(s.est)


@SLOT.fact(
    "memory_after_fixes_bytes",
    FactType.NUMBER,
    "memory_bytes, or that of the first fix that fits",
)
def memory_after_fixes(s: Slot) -> float | None:
    """The memory the job needs as it would run: as written when it fits, else after the fix."""
    if s.est.fits:
        return s.est.memory_bytes
    fix = fix_that_fits(s.est)
    return next((f.memory_bytes for f in s.est.fixes if f.fix == fix), None) if fix else None


@SLOT.fact(
    "needs_sharding",
    FactType.BOOL,
    "does not fit on one device; only sharding over several GPUs makes it fit",
)
def needs_sharding(s: Slot) -> bool | None:
    """Only sharding makes it fit (unknown unless the estimate says it does not fit)."""
    if s.est.fits is not False:
        return None
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
    """The estimate report (or none) and the estimate picked for each slot."""

    report: EstimateReport | None
    slots: dict[str, DeviceEstimate]

    @classmethod
    def of(cls, report: EstimateReport | None, gpu_ids: frozenset[str] | None) -> Estimates:
        """Pick each slot's estimate from ``report``."""
        if report is None:
            return cls(None, {})
        rows = report.estimates
        local = [e for e in rows if e.device.startswith(LOCAL_PREFIX)]
        slots = {
            "here": next((e for e in rows if e.device == "here"), None),
            "best_gpu": pick(rows, multi=False, gpu_ids=gpu_ids),
            "best_multi_gpu": pick(rows, multi=True, gpu_ids=gpu_ids),
            "local_gpu": next((e for e in local if e.gpus == 1), None),
            "local_gpus": next((e for e in local if e.gpus > 1), None),
        }
        return cls(report, {k: v for k, v in slots.items() if v is not None})


ESTIMATES: Registry[Estimates] = Registry("the estimate report")


@ESTIMATES.fact("estimate.available", FactType.BOOL, "an estimate report was used")
def available(e: Estimates) -> bool:
    """An estimate report was given."""
    return e.report is not None


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
