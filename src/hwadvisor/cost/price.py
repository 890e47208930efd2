"""Pricing one estimate: its cost on what it runs on, and its options for the picks (pure).

An estimate row runs on one of four things (:class:`Runs`):

- ``instance``: a cloud instance named with ``--on`` (its GPUs, or its vCPUs' share of
  the processor): that instance's price;
- ``device``: a catalog GPU (x count): the cheapest priced instance carrying it, and
  every instance carrying it as options; a catalog CPU: the whole processor at the
  lowest per-vCPU price of an instance with it, as a cloud equivalent (no option);
- ``here``: this machine's CPU; ``local``: its own GPUs. With the user's own price
  (:class:`~hwadvisor.cost.model.OwnHardware`) they are priced so and are options;
  without, they get their cloud equivalent for reference, and are not options.

A job is priced for its estimated time (inference without a dataset size: per 1,000
requests, billed by their own time: no instance minimum); with a QPS (:class:`Requirement`),
serving is priced by the month instead, enough instances for the QPS, billed busy or idle,
and per 1,000 requests as that month's bill over that month's traffic
(:func:`per_requests_usd`). A GPU row is priced on the cheapest offer by what the job is
billed there: a whole instance, or on a marketplace its own GPUs; a whole instance larger
than the job says so, and names the offer sized to it where the catalog has one.
Energy is board power x time throughout.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import date
from typing import TYPE_CHECKING

from hwadvisor.catalog.instance_rows import UPDATE_COMMAND
from hwadvisor.cost.choose import (
    Option,
    budget_low,
    cheapest,
    cheapest_instance,
    fastest,
    instance_options,
    options_for,
)
from hwadvisor.cost.job import (
    BILLING_MINIMUM_S,
    billed_usd,
    device_power,
    energy_kwh,
    job_cost,
    own_cost,
)
from hwadvisor.cost.model import HOURS_PER_MONTH, Cost, OwnHardware
from hwadvisor.cost.serving import instances_for_qps, serving_cost, serving_option

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import Instance, InstanceCatalog
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.models.cost import Choice
    from hwadvisor.models.estimate import DeviceEstimate

#: Inference with no dataset size is priced per this many requests.
REQUESTS = 1000
#: The note of a machine priced with no price of its own.
OWN_PRICE_NOTE = "own hardware: give --price-per-hour (or --purchase-usd and --years) to price it"


@dataclass(frozen=True)
class Requirement:
    """What the job must meet: a deadline, or (serving) a QPS within a latency target."""

    deadline_s: float | None = None
    qps: float | None = None
    latency_target_s: float | None = None
    infer: bool = False

    @property
    def serving(self) -> bool:
        """Priced by the month at a QPS, rather than per job."""
        return self.qps is not None


@dataclass(frozen=True)
class Runs:
    """What one estimate row runs on (see the module): its kind and catalog entry.

    ``entry`` is the device the time was estimated on (a GPU; a CPU instance's or this
    machine's share of its processor; a catalog CPU); ``count`` the GPUs used;
    ``processor`` and ``vcpus`` price a CPU by the vCPU when no instance is named.
    """

    kind: str
    entry: DeviceEntry | None = None
    count: int = 1
    instance: Instance | None = None
    processor: str | None = None
    vcpus: int | None = None


@dataclass(frozen=True)
class Priced:
    """One row's cost, and the options it adds to the picks."""

    cost: Cost
    options: list[Option] = field(default_factory=list)


def price_row(
    est: DeviceEstimate,
    runs: Runs,
    *,
    catalog: InstanceCatalog,
    target: Requirement,
    own: OwnHardware | None = None,
    today: date | None = None,
) -> Priced:
    """The cost of ``est`` on what it runs on, and its options (see the module)."""
    if runs.kind == "instance" and runs.instance is not None:
        priced = _on_instance(est, runs, runs.instance, target, today)
    elif runs.kind in ("here", "local"):
        priced = _own_machine(est, runs, catalog, target, own, today)
    elif runs.entry is not None and runs.entry.kind.value == "cpu":
        priced = Priced(_vcpu_equivalent(est, runs, catalog, target, today))
    else:
        priced = _on_device(est, runs, catalog, target, today)
    per = _per(est, target)
    options = [
        replace(o, fits=est.fits, per=o.per if o.per == "month" else per) for o in priced.options
    ]
    return Priced(priced.cost, options + _plan_options(est, runs, catalog, target))


def _plan_options(
    est: DeviceEstimate, runs: Runs, catalog: InstanceCatalog, target: Requirement
) -> list[Option]:
    """A row the job does not fit, on a catalog GPU with a timed plan: the plan's options
    (its GPUs on the instances that carry them, full nodes past one), which do fit."""
    plan = est.plan
    if (
        est.fits is not False
        or plan is None
        or target.serving
        or runs.kind != "device"
        or runs.entry is None
        or plan.total_time_s is None
    ):
        return []
    return [
        replace(o, fits=True, plan=plan.plan)
        for o in options_for(runs.entry, plan.gpus, plan.total_time_s, catalog)
    ]


def _per(est: DeviceEstimate, target: Requirement) -> str:
    """What a row's job options pay for: the job, or (no dataset size) 1,000 requests."""
    _, what = job_time(est, target)
    return f"{REQUESTS} requests" if what.startswith("per ") else "job"


def _throughput(est: DeviceEstimate, target: Requirement) -> float | None:
    """The throughput to serve from, when serving is what is priced."""
    tput = est.throughput_samples_s
    return tput if target.serving and tput and tput > 0 else None


def job_time(est: DeviceEstimate, target: Requirement) -> tuple[float | None, str]:
    """The seconds priced for a job, and what they are: the whole job, or (inference with
    no dataset size) 1,000 requests."""
    if est.total_time_s is not None:
        return est.total_time_s, "the whole job"
    if target.infer and est.throughput_samples_s:
        return REQUESTS / est.throughput_samples_s, f"per {REQUESTS:,} requests"
    return None, "the whole job (its time unknown)"


def _minimum(what: str) -> float:
    """The billing minimum of what is priced: none for requests (an instance serving them
    runs anyway; each is billed by its own time), the instance's for a whole job."""
    return 0.0 if what.startswith("per ") else BILLING_MINIMUM_S


def _serve(
    inst: Instance, est: DeviceEstimate, entry: DeviceEntry | None, target: Requirement, tput: float
) -> Option:
    """The serving option of ``inst`` (its monthly bill at the QPS, on demand)."""
    return serving_option(
        inst,
        qps=target.qps or 0.0,
        throughput_samples_s=tput,
        latency_s=est.step_time_s,
        latency_target_s=target.latency_target_s,
        device=entry,
        per_replica=est.gpus or 1,
    )


def _serve_cost(
    inst: Instance,
    est: DeviceEstimate,
    entry: DeviceEntry | None,
    target: Requirement,
    tput: float,
    today: date | None,
) -> Cost:
    """A month of serving the QPS on enough of ``inst``."""
    return serving_cost(
        inst,
        qps=target.qps or 0.0,
        throughput_samples_s=tput,
        latency_s=est.step_time_s,
        latency_target_s=target.latency_target_s,
        device=entry,
        per_replica=est.gpus or 1,
        today=today,
    )


def _noted(cost: Cost, *notes: str) -> Cost:
    return cost.model_copy(update={"notes": [*notes, *cost.notes]})


def per_requests_usd(monthly_usd: float | None, qps: float | None) -> float | None:
    """A month's bill spread over the month's traffic: dollars per 1,000 requests at the
    QPS, every request at its share of the hours billed (no per-request minimum)."""
    if monthly_usd is None or not qps:
        return None
    return monthly_usd / (qps * HOURS_PER_MONTH * 3600 / REQUESTS)


def _with_requests(cost: Cost, qps: float | None) -> Cost:
    """A monthly serving cost with its price per 1,000 requests over that month's traffic."""
    usd = per_requests_usd(cost.monthly_usd, qps)
    if usd is None or not qps:
        return cost
    month = qps * HOURS_PER_MONTH * 3600
    return _noted(
        cost,
        f"${usd:.4g} per {REQUESTS:,} requests over the month's {month:,.0f} requests at "
        f"{qps:g} QPS (no per-request billing minimum)",
    )


def _sized_note(inst: Instance, count: int, device: str, catalog: InstanceCatalog) -> str | None:
    """Where the cheapest instance bills more GPUs than the job uses: the smallest priced
    offer of the device, or that the catalog has none (never a silent whole-node bill)."""
    billed = inst.billed_gpus(count)
    if inst.is_cpu or billed <= count:
        return None
    smaller = [
        i
        for i in catalog.offering(device, count)
        if not i.is_cpu and i.price is not None and i.billed_gpus(count) < billed
    ]
    if not smaller:
        return (
            f"no priced offer of fewer than {billed} x {device}: a job on {count} pays for "
            f"{billed} (`hwadvisor prices update` brings single-GPU offers)"
        )
    best = min(smaller, key=lambda i: (i.billed_gpus(count), i.hourly_for(count) or 0.0))
    return (
        f"sized to the job: {best.instance_type} ({best.cloud or 'cloud'}) bills "
        f"{best.billed_gpus(count)} x {device} at ${best.hourly_for(count) or 0:,.2f}/h"
    )


def _meets_latency(est: DeviceEstimate, target: Requirement) -> bool:
    latency = est.step_time_s
    return latency is None or target.latency_target_s is None or latency <= target.latency_target_s


def _on_instance(
    est: DeviceEstimate, runs: Runs, inst: Instance, target: Requirement, today: date | None
) -> Priced:
    entry = runs.entry
    tput = _throughput(est, target)
    if tput is not None:
        cost = _with_requests(_serve_cost(inst, est, entry, target, tput, today), target.qps)
        return Priced(cost, [_serve(inst, est, entry, target, tput)])
    time_s, what = job_time(est, target)
    least = _minimum(what)
    used = None if inst.is_cpu else runs.count
    cost = job_cost(inst, time_s, device=entry, devices_used=used, today=today, minimum_s=least)
    options = (
        instance_options(inst, entry, time_s, count=runs.count, minimum_s=least) if entry else []
    )
    return Priced(_noted(cost, f"priced {what}"), options)


def _on_device(
    est: DeviceEstimate,
    runs: Runs,
    catalog: InstanceCatalog,
    target: Requirement,
    today: date | None,
) -> Priced:
    entry = runs.entry
    if entry is None:
        return Priced(Cost(notes=[f"{est.device} is not in the device catalog: unpriced"]))
    inst = cheapest_instance(catalog, entry.id, runs.count)
    tput = _throughput(est, target)
    if tput is not None:
        offering = [i for i in catalog.offering(entry.id, runs.count) if not i.is_cpu]
        options = [_serve(i, est, entry, target, tput) for i in offering]
        if inst is None:
            return Priced(_unpriced_gpu(entry, runs.count, None), options)
        cost = _with_requests(_serve_cost(inst, est, entry, target, tput, today), target.qps)
        return Priced(_noted(cost, f"the cheapest priced instance with {entry.id}"), options)
    time_s, what = job_time(est, target)
    least = _minimum(what)
    options = options_for(entry, runs.count, time_s, catalog, minimum_s=least)
    if inst is None:
        return Priced(_unpriced_gpu(entry, runs.count, time_s), options)
    cost = job_cost(
        inst, time_s, device=entry, devices_used=runs.count, today=today, minimum_s=least
    )
    sized = _sized_note(inst, runs.count, entry.id, catalog)
    notes = [f"priced {what}", f"the cheapest priced instance with {entry.id}"]
    return Priced(_noted(cost, *notes, *([sized] if sized else [])), options)


def _unpriced_gpu(entry: DeviceEntry, count: int, time_s: float | None) -> Cost:
    """A GPU no priced instance carries: its energy only, and how to price it."""
    power, source = device_power(entry)
    return Cost(
        devices=count,
        time_s=time_s,
        energy_kwh=energy_kwh(power, time_s, count),
        power_w=None if power is None else power * count,
        power_source=source,
        notes=[f"no priced instance carries {count} x {entry.id}: give --prices FILE"],
    )


def cloud_gpu_cost(
    entry: DeviceEntry,
    count: int,
    time_s: float | None,
    catalog: InstanceCatalog,
    today: date | None,
) -> Cost:
    """A machine's own GPUs at the cheapest priced instance carrying them (a cloud equivalent)."""
    inst = cheapest_instance(catalog, entry.id, count)
    if inst is None:
        return _unpriced_gpu(entry, count, time_s)
    cost = job_cost(inst, time_s, device=entry, devices_used=count, today=today)
    return _noted(cost, "cloud equivalent of these GPUs")


def vcpu_price(processor: str, catalog: InstanceCatalog) -> Instance | None:
    """The priced instance with ``processor`` that has the lowest price per vCPU."""
    priced = [i for i in catalog.offering(processor) if i.is_cpu and i.price and i.vcpus]
    return min(
        priced, key=lambda i: ((i.price or 0) / (i.vcpus or 1), i.instance_type), default=None
    )


def cpu_equivalent(
    processor: str | None,
    vcpus: int | None,
    time_s: float | None,
    catalog: InstanceCatalog,
    *,
    device: DeviceEntry | None,
    today: date | None = None,
) -> Cost:
    """``vcpus`` of ``processor`` at the lowest per-vCPU price of an instance with it.

    ``device`` is what the job ran on (for the energy); unpriced, with the reason, when
    no priced instance has the processor.
    """
    from hwadvisor.catalog.instances import stale_warning

    power, source = device_power(device)
    base = Cost(
        time_s=time_s, energy_kwh=energy_kwh(power, time_s), power_w=power, power_source=source
    )
    inst = vcpu_price(processor, catalog) if processor else None
    if inst is None or not vcpus:
        why = (
            "its processor is not in the device catalog"
            if processor is None
            else "no priced instance has its processor"
        )
        return base.model_copy(update={"notes": [f"unpriced: {why}; give --price-per-hour"]})
    hourly = (inst.price or 0) / (inst.vcpus or 1) * vcpus
    stale = stale_warning(inst, today)
    return base.model_copy(
        update={
            "instance": f"{vcpus} vCPUs at the per-vCPU price of {inst.instance_type}",
            "hourly_usd": hourly,
            "on_demand_usd": billed_usd(hourly, time_s),
            "price_date": inst.price_date,
            "price_source": inst.source,
            "stale": stale is not None,
            "notes": ["cloud equivalent of these vCPUs", *([stale] if stale else [])],
        }
    )


def _monthly(cost: Cost, qps: float, tput: float) -> Cost:
    """``cost`` as a month of enough machines like it for ``qps``, billed busy or idle;
    the energy is the busy share of the month at board power."""
    count = instances_for_qps(qps, tput)
    busy = min(1.0, qps / (count * tput))
    hourly = cost.hourly_usd
    month_s = HOURS_PER_MONTH * 3600
    power = cost.power_w
    monthly = None if hourly is None else hourly * count * HOURS_PER_MONTH
    per_k = per_requests_usd(monthly, qps)
    requests = (
        [f"${per_k:.4g} per {REQUESTS:,} requests over the month's traffic at {qps:g} QPS"]
        if per_k is not None
        else []
    )
    return cost.model_copy(
        update={
            "on_demand_usd": None,
            "time_s": None,
            "energy_kwh": None if power is None else power * count * busy * month_s / 3.6e6,
            "monthly_usd": monthly,
            "instances": count,
            "notes": [
                f"{count} machine(s) like it for the QPS, {busy:.2%} busy: billed the whole month",
                *requests,
                *cost.notes,
            ],
        }
    )


def _vcpu_equivalent(
    est: DeviceEstimate,
    runs: Runs,
    catalog: InstanceCatalog,
    target: Requirement,
    today: date | None,
) -> Cost:
    tput = _throughput(est, target)
    time_s, what = job_time(est, target)
    cost = cpu_equivalent(
        runs.processor, runs.vcpus, time_s, catalog, device=runs.entry, today=today
    )
    if tput is not None:
        return _monthly(cost, target.qps or 0.0, tput)
    return _noted(cost, f"priced {what}")


def _own_machine(
    est: DeviceEstimate,
    runs: Runs,
    catalog: InstanceCatalog,
    target: Requirement,
    own: OwnHardware | None,
    today: date | None,
) -> Priced:
    label = "here" if runs.kind == "here" else est.device
    cpu = runs.kind == "here"
    time_s, what = job_time(est, target)
    tput = _throughput(est, target)
    if own is None:
        if cpu:
            cost = _vcpu_equivalent(est, runs, catalog, target, today)
        elif runs.entry is not None:
            cost = cloud_gpu_cost(runs.entry, runs.count, time_s, catalog, today)
        else:
            cost = Cost()
        return Priced(_noted(cost, OWN_PRICE_NOTE))
    cost = own_cost(
        own, time_s, device=runs.entry, devices_used=runs.count, label=label, today=today
    )
    if tput is not None:
        cost = _monthly(cost, target.qps or 0.0, tput)
        meets = _meets_latency(est, target) and cost.instances == 1
        opt = Option(
            label, label, cost.monthly_usd, est.step_time_s, cpu=cpu, meets=meets, per="month"
        )
        return Priced(cost, [_dated(opt, cost)])
    opt = Option(label, label, cost.on_demand_usd, time_s, cpu=cpu, count=runs.count)
    return Priced(_noted(cost, f"priced {what}"), [_dated(opt, cost)])


def _dated(opt: Option, cost: Cost) -> Option:
    return replace(opt, price_date=cost.price_date, price_source=cost.price_source)


def pick_all(
    options: Sequence[Option], target: Requirement, *, low: bool = False, s5: bool = False
) -> dict[str, Choice | None]:
    """The picks an estimate carries: ``cheapest``, ``fastest``, ``cheapest_cpu``,
    ``cheapest_gpu``, and ``budget_low`` when ``low`` (``--budget low``)."""
    deadline = None if target.serving else target.deadline_s
    return {
        "cheapest": cheapest(options, deadline),
        "fastest": fastest(options, deadline),
        "cheapest_cpu": cheapest([o for o in options if o.cpu], deadline),
        "cheapest_gpu": cheapest([o for o in options if not o.cpu], deadline),
        "budget_low": budget_low(options, deadline, s5=s5) if low else None,
    }


def stale_note(costs: Sequence[Cost | None]) -> str | None:
    """One warning line for the stale prices among ``costs``, naming the oldest's date."""
    stale = [c for c in costs if c is not None and c.stale and c.price_date]
    if not stale:
        return None
    oldest = min(stale, key=lambda c: c.price_date or "")
    names = sorted({c.instance or "?" for c in stale})
    return (
        f"{len(names)} price{'s' if len(names) > 1 else ''} used {'are' if len(names) > 1 else 'is'} "
        f"more than a year old (the oldest: {oldest.instance}, dated {oldest.price_date}); "
        f"refresh with `{UPDATE_COMMAND}` (or --prices FILE, a SkyPilot or gpuhunt catalog)"
    )
