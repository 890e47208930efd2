"""The answers a budget owner wants: the cheapest option that meets the deadline, the
fastest, and the budget-low pick (GUIDANCE S2, S5, C5), from priced options (pure).

An :class:`Option` is one way to run the job: a device (x count) on an instance, on
demand or on spot, with its estimated time and dollars. :func:`options_for` builds them
from the instance catalog for one device and its estimated time; the estimator's results
for several devices give the full list. Unpriced options are never chosen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from hwadvisor.cost.model import DEFAULT_ALLOWANCE, SpotAllowance
from hwadvisor.models.cost import Choice

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import Instance, InstanceCatalog
    from hwadvisor.catalog.schema import DeviceEntry

#: GUIDANCE S5 (documents A§6, B§3.4): "a few hundred requests a day with second-level
#: latency" is cheaper on a CPU. Up to 1,000 requests a day and a latency target of a
#: second or more (or none) is read as that case.
S5_MAX_QPS = 1000 / 86400
S5_MIN_LATENCY_MS = 1000.0
#: A GPU launched this many years or more before the newest among the options is a
#: previous generation (GUIDANCE S2: "a previous-generation GPU" on a tight budget).
PREVIOUS_GENERATION_YEARS = 2


@dataclass(frozen=True)
class Option:
    """One way to run the job, priced: device (x count) on an instance, on demand or spot."""

    device: str
    instance: str | None
    usd: float | None
    time_s: float | None
    spot: bool = False
    cpu: bool = False
    count: int = 1
    released: int | None = None
    meets: bool | None = None  # set for serving (latency and QPS); else the deadline decides
    price_date: str | None = None
    price_source: str | None = None
    per: str = "job"  # what usd pays for: job, month (serving) or 1000 requests
    #: Whether the job fits the option's memory (None: unknown); a plan's option fits.
    fits: bool | None = None
    plan: str | None = None  # the multi-GPU plan the option runs, as its text says it
    nodes: int = 1  # instances billed together (a job past one node)
    #: GPUs paid for: all of an instance's (whole nodes), or on a marketplace the job's own.
    billed_gpus: int | None = None


def _meets(opt: Option, deadline_s: float | None) -> bool:
    if opt.meets is not None:
        return opt.meets
    if opt.time_s is None or not math.isfinite(opt.time_s):
        return False
    return deadline_s is None or opt.time_s <= deadline_s


def _choice(opt: Option, deadline_s: float | None, why: list[str], cites: list[str]) -> Choice:
    if opt.fits is False:
        why = [*why, "no priced option holds the job in memory as written"]
    return Choice(
        device=opt.device if opt.count == 1 else f"{opt.device} x{opt.count}",
        fits=opt.fits,
        plan=opt.plan,
        nodes=opt.nodes,
        instance=opt.instance,
        usd=opt.usd,
        time_s=opt.time_s,
        meets_deadline=_meets(opt, deadline_s),
        spot=opt.spot,
        cpu=opt.cpu,
        per=opt.per,
        price_date=opt.price_date,
        price_source=opt.price_source,
        why=why,
        cites=cites,
    )


def _oversized(opt: Option) -> bool:
    """The option bills more GPUs than the job uses (a whole multi-GPU instance)."""
    return bool(opt.billed_gpus and not opt.cpu and opt.billed_gpus > opt.count)


def sized_note(opt: Option, options: Iterable[Option], deadline_s: float | None) -> str | None:
    """For an option billed for a whole instance the job does not fill: that, and the
    cheapest option billed for no more GPUs than it uses that meets the deadline (None
    when the option is sized to the job)."""
    if not _oversized(opt):
        return None
    head = f"{opt.instance} bills all {opt.billed_gpus} of its GPUs for a job on {opt.count}"
    sized = [
        o
        for o in options
        if o.usd is not None
        and not o.spot
        and o.per == opt.per
        and not _oversized(o)
        and o.fits is not False
        and _meets(o, deadline_s)
    ]
    if not sized:
        return f"{head}; no priced option sized to the job meets the deadline"
    best = min(sized, key=lambda o: (o.usd, _time(o), o.instance or ""))
    name = best.device if best.count == 1 else f"{best.device} x{best.count}"
    return f"{head}; sized to the job: {name} on {best.instance}, ${best.usd:,.2f}"


def _holding(options: list[Option]) -> list[Option]:
    """The options that may hold the job (fits true or unknown); all of them when none may."""
    held = [o for o in options if o.fits is not False]
    return held or options


def _time(opt: Option) -> float:
    return opt.time_s if opt.time_s is not None and math.isfinite(opt.time_s) else math.inf


def cheapest(
    options: Iterable[Option], deadline_s: float | None, *, spot: bool = False
) -> Choice | None:
    """The cheapest priced option that meets the deadline; when none does, the fastest
    priced one, marked ``meets_deadline: false``; None when nothing is priced.

    Spot options are weighed only with ``spot=True`` (``--budget low``: :func:`budget_low`);
    the plain answer is on demand, the price a job that must not be interrupted pays.
    """
    priced = _holding([o for o in options if o.usd is not None and (spot or not o.spot)])
    if not priced:
        return None
    meeting = [o for o in priced if _meets(o, deadline_s)]
    if meeting:
        best = min(meeting, key=lambda o: (o.usd, _time(o), o.instance or ""))
        why = ["the cheapest option that meets the deadline"]
    else:
        best = min(priced, key=lambda o: (_time(o), o.usd, o.instance or ""))
        why = ["no priced option meets the deadline: the fastest"]
    note = sized_note(best, priced, deadline_s)
    return _choice(best, deadline_s, [*why, *([note] if note else [])], [])


def fastest(options: Iterable[Option], deadline_s: float | None = None) -> Choice | None:
    """The option with the shortest time (the cheaper of equals; unpriced ones too)."""
    options = list(options)
    timed = _holding([o for o in options if o.time_s is not None and math.isfinite(o.time_s)])
    if not timed:
        return None
    best = min(timed, key=lambda o: (o.time_s, math.inf if o.usd is None else o.usd))
    note = sized_note(best, options, deadline_s)
    return _choice(best, deadline_s, ["the shortest estimated time", *([note] if note else [])], [])


def cheapest_instance(
    catalog: InstanceCatalog, device_id: str, count: int = 1, *, spot: bool = False
) -> Instance | None:
    """The cheapest priced instance carrying ``count`` x ``device_id`` (spot price if asked),
    by what the job is billed there (:meth:`~hwadvisor.catalog.instance_rows.Instance.hourly_for`)."""

    def price(i: Instance) -> float | None:
        return i.hourly_for(count, spot=spot)

    rows = [i for i in catalog.offering(device_id, count) if price(i) is not None]
    return min(rows, key=lambda i: (price(i), i.instance_type), default=None)


def instance_options(
    inst: Instance,
    device: DeviceEntry,
    time_s: float | None,
    *,
    count: int | None = None,
    spot: bool = True,
    allowance: SpotAllowance = DEFAULT_ALLOWANCE,
    minimum_s: float | None = None,
) -> list[Option]:
    """The on-demand option of one instance (and its spot option when it has a spot price).

    ``time_s`` is the job's time on ``device`` x ``count`` there (for a CPU instance, the
    time estimated on its vCPUs); on spot the time grows by the interruption allowance.
    """
    from hwadvisor.catalog.instances import nodes_for
    from hwadvisor.cost.job import BILLING_MINIMUM_S, billed_usd

    least = BILLING_MINIMUM_S if minimum_s is None else minimum_s
    used = count or max(inst.accelerator_count, 1)
    nodes = 1 if inst.per_gpu else nodes_for(inst, used)
    on_demand = Option(
        device=inst.device_id if inst.is_cpu else device.id,
        instance=inst.instance_type,
        usd=billed_usd(inst.hourly_for(used), time_s, minimum_s=least),
        time_s=time_s,
        cpu=inst.is_cpu,
        count=used,
        released=device.released,
        price_date=inst.price_date,
        price_source=inst.source,
        nodes=nodes,
        billed_gpus=inst.billed_gpus(used) or None,
    )
    if not spot or inst.spot_price is None:
        return [on_demand]
    slow = None if time_s is None else time_s * (1 + allowance.fraction())
    return [
        on_demand,
        replace(
            on_demand,
            usd=billed_usd(inst.hourly_for(used, spot=True), slow, minimum_s=least),
            time_s=slow,
            spot=True,
        ),
    ]


def options_for(
    device: DeviceEntry,
    count: int,
    time_s: float | None,
    catalog: InstanceCatalog,
    *,
    spot: bool = True,
    allowance: SpotAllowance = DEFAULT_ALLOWANCE,
    minimum_s: float | None = None,
) -> list[Option]:
    """The options of every GPU instance carrying ``count`` or more x ``device``.

    CPU instances differ in vCPUs and so in time: price each with
    :func:`instance_options` and the time estimated on it
    (:func:`hwadvisor.catalog.instances.instance_device` gives the device to estimate on).
    """
    out: list[Option] = []
    for inst in catalog.offering(device.id, count):
        if not inst.is_cpu:
            out += instance_options(
                inst, device, time_s, count=count, spot=spot, allowance=allowance,
                minimum_s=minimum_s,
            )  # fmt: skip
    return out


def s5_holds(qps: float | None, latency_ms: float | None) -> bool:
    """GUIDANCE S5's case: low QPS (a few hundred requests a day), second-level latency."""
    return (
        qps is not None
        and qps <= S5_MAX_QPS
        and (latency_ms is None or latency_ms >= S5_MIN_LATENCY_MS)
    )


def budget_low(
    options: Sequence[Option], deadline_s: float | None, *, s5: bool = False
) -> Choice | None:
    """The pick for ``--budget low``: the cheapest option that meets the deadline among
    spot and on-demand instances of every GPU generation, and CPU instances only where
    S5 holds (low-QPS, latency-tolerant inference)."""
    pool = [o for o in options if not o.cpu or s5]
    pick = cheapest(pool, deadline_s, spot=True)
    if pick is None:
        return None
    chosen = next(
        o for o in pool if o.instance == pick.instance and o.spot == pick.spot and o.usd == pick.usd
    )
    why, cites = list(pick.why), ["S2", "C5"]
    if chosen.spot:
        why.append("a spot/preemptible instance, with the interruption allowance priced in")
    newest = max((o.released for o in pool if not o.cpu and o.released), default=None)
    if (
        not chosen.cpu
        and chosen.released
        and newest
        and newest - chosen.released >= PREVIOUS_GENERATION_YEARS
    ):
        why.append(f"a previous-generation GPU ({chosen.released}, the newest option {newest})")
    if chosen.cpu:
        why.append(
            "a CPU instance: low QPS and a latency a second or more, where an idle GPU would still be billed"
        )
        cites.append("S5")
    return pick.model_copy(update={"why": why, "cites": cites})


def choose_all(
    options: Sequence[Option], deadline_s: float | None, *, s5: bool = False
) -> Mapping[str, Choice | None]:
    """``cheapest``, ``fastest`` and ``budget_low`` of one list, as the estimate will carry them."""
    return {
        "cheapest": cheapest(options, deadline_s),
        "fastest": fastest(options, deadline_s),
        "budget_low": budget_low(options, deadline_s, s5=s5),
    }
