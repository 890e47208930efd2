"""Derived facts from the priced estimates: the picks and the comparisons the rules cite.

``cost.<pick>.<field>`` is one field of a pick the estimate report carries
(:mod:`hwadvisor.pipeline.pricing`): ``cheapest`` (on demand, meeting the deadline),
``fastest``, ``cheapest_cpu``, ``cheapest_gpu`` and, under ``--budget low``,
``budget_low``. The comparisons are the documents' cost claims put in numbers: energy
per job here against the best GPU (P1), a month of serving on the cheapest GPU instance
against the cheapest CPU instance (S5), what the budget pick saves (S2, C5). Each cost
of one estimate is a field of its slot already (``estimate.here.cost.energy_kwh``).
Registered on the estimates' registry: the same input, the report and its slots.
"""

from __future__ import annotations

from hwadvisor.engine.derive import Context, FactSpec, FactType
from hwadvisor.engine.derived.estimates import ESTIMATES, Estimates
from hwadvisor.models.cost import Choice

#: The picks of a priced estimate report, and what each is.
PICKS = {
    "cheapest": "the cheapest priced option (on demand) that meets the deadline",
    "fastest": "the option with the shortest estimated time",
    "cheapest_cpu": "the cheapest priced CPU option (a CPU instance, or here)",
    "cheapest_gpu": "the cheapest priced GPU option",
    "budget_low": "--budget low's pick: spot, every GPU generation, CPU instances where S5 holds",
}
#: The fields of a pick a rule reads: path suffix -> (type, meaning).
PICK_FIELDS: dict[str, tuple[FactType, str]] = {
    "device": (FactType.STRING, "the device (x count)"),
    "instance": (FactType.STRING, "the instance type"),
    "usd": (FactType.NUMBER, "dollars: for the job, or a month of serving (per)"),
    "time_s": (FactType.NUMBER, "seconds the job takes there (serving: the latency)"),
    "time_h": (FactType.NUMBER, "hours the job takes there (serving: the latency)"),
    "meets_deadline": (FactType.BOOL, "meets the deadline (serving: the latency target)"),
    "spot": (FactType.BOOL, "priced on a spot instance, the interruption allowance added"),
    "cpu": (FactType.BOOL, "runs on a CPU"),
    "price_date": (FactType.STRING, "the date of the price"),
    "per": (FactType.STRING, "what usd pays for: job, month or 1000 requests"),
    "why": (FactType.LIST, "what the pick rests on"),
}


def _pick_specs() -> list[FactSpec]:
    return [
        FactSpec(f"cost.{pick}.{name}", kind, f"{what}: {doc}", derived=True)
        for pick, what in PICKS.items()
        for name, (kind, doc) in PICK_FIELDS.items()
    ]


def _fields(choice: Choice | None) -> dict[str, object]:
    if choice is None:
        return dict.fromkeys(PICK_FIELDS)
    time_h = choice.time_s / 3600.0 if choice.time_s is not None else None
    return {
        "device": choice.device,
        "instance": choice.instance,
        "usd": choice.usd,
        "time_s": choice.time_s,
        "time_h": time_h,
        "meets_deadline": choice.meets_deadline,
        "spot": choice.spot,
        "cpu": choice.cpu,
        "price_date": choice.price_date,
        "per": choice.per,
        "why": list(choice.why),
    }


def pick(e: Estimates, name: str) -> Choice | None:
    """The pick ``name`` of the report, None when unpriced or when there is no report."""
    return getattr(e.report, name, None) if e.report is not None else None


@ESTIMATES.family(_pick_specs())
def picks(e: Estimates) -> Context:
    """Every field of every pick (unknown when the report has none)."""
    out: Context = {}
    for name in PICKS:
        for key, value in _fields(pick(e, name)).items():
            out[f"cost.{name}.{key}"] = value
    return out


def _energy(e: Estimates, slot: str) -> float | None:
    est = e.slots.get(slot)
    return est.cost.energy_kwh if est is not None and est.cost is not None else None


@ESTIMATES.fact(
    "cost.energy_here_over_best_gpu",
    FactType.NUMBER,
    "estimate.here.cost.energy_kwh / estimate.best_gpu.cost.energy_kwh (energy per job, P1)",
)
def energy_here_over_best_gpu(e: Estimates) -> float | None:
    """How many times the energy of the job here is that on the best single GPU."""
    here, gpu = _energy(e, "here"), _energy(e, "best_gpu")
    return here / gpu if here and gpu else None


def _ratio(e: Estimates, top: str, bottom: str) -> float | None:
    """The ``top`` pick's dollars over the ``bottom`` pick's, both priced for the same
    thing (``per``); None when either is missing or unpriced, or the bottom is free."""
    a, b = pick(e, top), pick(e, bottom)
    if a is None or b is None or a.usd is None or not b.usd or a.per != b.per:
        return None
    return a.usd / b.usd


@ESTIMATES.fact(
    "cost.gpu_over_cpu",
    FactType.NUMBER,
    "cost.cheapest_gpu.usd / cost.cheapest_cpu.usd, both priced for the same thing (S5)",
)
def gpu_over_cpu(e: Estimates) -> float | None:
    """How many times the cheapest GPU option costs the cheapest CPU option."""
    return _ratio(e, "cheapest_gpu", "cheapest_cpu")


@ESTIMATES.fact(
    "cost.budget_low_saving",
    FactType.NUMBER,
    "1 - cost.budget_low.usd / cost.cheapest.usd: the share --budget low saves",
)
def budget_low_saving(e: Estimates) -> float | None:
    """The fraction of the cheapest on-demand bill the budget pick saves."""
    share = _ratio(e, "budget_low", "cheapest")
    return None if share is None else 1.0 - share


@ESTIMATES.fact(
    "cost.requests_per_day",
    FactType.NUMBER,
    "workload.qps x 86,400 (serving)",
)
def requests_per_day(e: Estimates) -> float | None:
    """The requests a day the QPS makes."""
    qps = e.report.workload.qps if e.report is not None else None
    return qps * 86400.0 if qps is not None else None
