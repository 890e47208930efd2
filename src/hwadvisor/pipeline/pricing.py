"""The pricing step: a cost on every estimate, and the picks a budget owner wants.

Pure apart from reading the catalogs (the device catalog, the instance catalog and a
user's ``--prices`` file). The estimate report comes in; each
:class:`~hwadvisor.models.estimate.DeviceEstimate` gets a ``cost`` (see
:mod:`hwadvisor.cost.price` for what each kind of row is priced as) and the report its
``cheapest``, ``fastest``, ``cheapest_cpu``, ``cheapest_gpu`` and, under ``--budget
low``, ``budget_low`` picks, every price dated.

``--on`` takes instance types as well as devices: :func:`split_on` tells them apart and
:func:`instance_estimates` estimates the job on an instance's GPUs, or on its vCPUs'
share of its processor (:func:`hwadvisor.catalog.instances.instance_device`).

``rules explain`` of a cost rule (one that reads ``cost.*`` facts, HW801-HW804) shows
the prices its facts rest on (:func:`explain_with_prices`): the price list (the shipped
catalog, with the user's ``--prices`` file laid over it, or own hardware's
``--price-per-hour``) and each pick's instance, dollars, date and source, the same
picks ``recommend`` and ``estimate`` name with the same options.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.engine.explain import Explanation
from hwadvisor.errors import CatalogError
from hwadvisor.models.options import PricingOptions
from hwadvisor.models.prices import PricesUsed
from hwadvisor.models.workload import Budget, Task

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import Instance, InstanceCatalog
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.cost.model import OwnHardware
    from hwadvisor.cost.price import Requirement, Runs
    from hwadvisor.models.cost import Cost
    from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.workload import Workload
    from hwadvisor.pipeline.rows import Rows


@dataclass(frozen=True)
class Pricing:
    """What prices the estimates: the catalogs, and the user's own hardware price."""

    catalog: InstanceCatalog
    devices: Mapping[str, DeviceEntry]
    own: OwnHardware | None = None
    today: date | None = None
    #: The user's price file laid over the shipped catalog (``--prices``), if any.
    prices: Path | None = None


def load_pricing(
    *,
    prices: str | Path | None = None,
    price_per_hour: float | None = None,
    purchase_usd: float | None = None,
    years: float | None = None,
    electricity_usd_kwh: float | None = None,
    extra_catalogs: Iterable[Path] | None = None,
    today: date | None = None,
) -> Pricing:
    """The catalogs and the own-hardware price, checked: a bad price file or value is one
    line (exit 2) before any work is done."""
    from hwadvisor.catalog import load_devices
    from hwadvisor.catalog.instances import load_instances
    from hwadvisor.cost.model import OwnHardware

    own = None
    if any(v is not None for v in (price_per_hour, purchase_usd, years, electricity_usd_kwh)):
        own = OwnHardware(
            price_per_hour=price_per_hour,
            purchase_usd=purchase_usd,
            years=years,
            electricity_usd_per_kwh=electricity_usd_kwh,
        )
    devices = load_devices(list(extra_catalogs) if extra_catalogs else None)
    catalog = load_instances(prices, devices=devices)
    return Pricing(catalog, devices, own, today, Path(prices) if prices is not None else None)


def pricing_from(options: PricingOptions | None, catalogs: Iterable[Path] | None) -> Pricing:
    """:func:`load_pricing` from a command's pricing options."""
    o = options or PricingOptions()
    return load_pricing(
        prices=o.prices,
        price_per_hour=o.price_per_hour,
        purchase_usd=o.purchase_usd,
        years=o.years,
        electricity_usd_kwh=o.electricity_usd_kwh,
        extra_catalogs=catalogs,
    )


# -- --on: devices and instance types --------------------------------------------------------


@dataclass(frozen=True)
class OnList:
    """``--on`` split: "here" and device ids (for the estimator), and instance types."""

    devices: list[str] = field(default_factory=list)
    instances: list[Instance] = field(default_factory=list)


_HINT = re.compile(r" \(did you mean [^)]*\?\)")


def split_on(names: Sequence[str], pricing: Pricing, extra: Iterable[Path] | None = None) -> OnList:
    """Each name is "here", an instance type (exact, any case) or a device id; else one
    line with a did-you-mean from both catalogs (exit 2)."""
    from hwadvisor.catalog import find_device

    devices: list[str] = []
    instances: list[Instance] = []
    for name in names:
        if name.lower() == "here":
            devices.append(name)
            continue
        try:
            instances.append(pricing.catalog.find(name))
            continue
        except CatalogError as exc:
            inst_error = exc
        try:
            find_device(name, list(extra) if extra else None)
        except CatalogError as exc:
            raise _unknown(name, exc, inst_error) from None
        devices.append(name)
    return OnList(devices, instances)


def _unknown(name: str, device_error: CatalogError, inst_error: CatalogError) -> CatalogError:
    hints = [m.group(0) for e in (inst_error, device_error) if (m := _HINT.search(e.message))]
    instance_like = any(c in name for c in "._") or name.lower().startswith("ecs")
    hint = (hints[0] if instance_like or len(hints) == 1 else hints[-1]) if hints else ""
    return CatalogError(
        f"unknown device or instance type '{name}'{hint}; see `hwadvisor catalog devices` "
        "and `hwadvisor catalog instances`"
    )


def instance_estimates(
    workload: Workload, instances: Sequence[Instance], pricing: Pricing
) -> list[DeviceEstimate]:
    """The job on each instance: its GPUs (all of them), or its vCPUs' share of the CPU."""
    from hwadvisor.catalog.instances import instance_device
    from hwadvisor.estimate.report import estimate_on_entry

    out = []
    for inst in instances:
        entry, count = instance_device(inst, pricing.devices)
        est = estimate_on_entry(workload, entry, gpus=count)
        runs_on = entry.name if inst.is_cpu else f"{count} x {entry.name}"
        cloud = f" ({inst.cloud})" if inst.cloud else ""
        note = f"{inst.instance_type}{cloud} runs it on {runs_on}"
        out.append(
            est.model_copy(
                update={
                    "device": inst.instance_type,
                    "name": f"{inst.instance_type}: {runs_on}",
                    "assumptions": [note, *est.assumptions],
                }
            )
        )
    return out


def cpu_instances(catalog: InstanceCatalog, *, need_bytes: int | None = None) -> list[Instance]:
    """The cheapest priced CPU instance of each processor: the CPU options a
    recommendation weighs (S5: low-QPS serving is cheaper on a CPU instance). With
    ``need_bytes`` (the job's memory on a CPU), the cheapest whose memory holds it with
    the estimate's headroom, where one does."""
    from hwadvisor.estimate.memory.parts import fits

    def holds(inst: Instance) -> bool:
        if need_bytes is None or inst.memory_gib is None:
            return True
        return bool(fits(need_bytes, int(inst.memory_gib * (1 << 30))))

    priced = [i for i in catalog.instances if i.is_cpu and i.price is not None]
    held = [i for i in priced if holds(i)]
    some = {h.device_id for h in held}
    # a processor none of whose instances holds the job keeps its cheapest (it won't fit)
    return _cheapest_each(held + [i for i in priced if i.device_id not in some])


def _cheapest_each(pool: list[Instance]) -> list[Instance]:
    best: dict[str, Instance] = {}
    for inst in pool:
        have = best.get(inst.device_id)
        if have is None or (inst.price, inst.instance_type) < (
            have.price or 0.0,
            have.instance_type,
        ):
            best[inst.device_id] = inst
    return [best[k] for k in sorted(best)]


def previous_generation(pricing: Pricing, have: Iterable[str]) -> list[str]:
    """Catalog GPUs a priced instance carries, launched two or more years before the newest
    of ``have`` and not among them: the previous generations ``--budget low`` weighs (S2)."""
    from hwadvisor.cost.choose import PREVIOUS_GENERATION_YEARS

    have = set(have)
    years = [d.released for k, d in pricing.devices.items() if k in have and d.released]
    if not years:
        return []
    newest = max(years)
    ids = {i.device_id for i in pricing.catalog.instances if not i.is_cpu and i.price is not None}
    return sorted(
        i
        for i in ids
        if i not in have
        and i in pricing.devices
        and (pricing.devices[i].released or newest) <= newest - PREVIOUS_GENERATION_YEARS
    )


# -- pricing a report ------------------------------------------------------------------------


def target_for(workload: Workload) -> Requirement:
    """The deadline (a job) or the QPS and latency target (serving) the picks weigh."""
    from hwadvisor.cost.price import Requirement

    # Serving a language model (task serve) is inference priced by the month as well.
    infer = workload.task in (Task.INFER, Task.SERVE)
    serving = infer and workload.qps is not None
    return Requirement(
        deadline_s=None if serving else workload.deadline_hours * 3600.0,
        qps=workload.qps if serving else None,
        latency_target_s=workload.latency_ms / 1000.0 if workload.latency_ms else None,
        infer=infer,
    )


def _runs(
    est: DeviceEstimate, named: Mapping[str, Instance], pricing: Pricing, facts: Facts | None
) -> Runs:
    """What an estimate row runs on, for :func:`hwadvisor.cost.price.price_row`."""
    from hwadvisor.catalog.instances import cpu_share, instance_device
    from hwadvisor.cost.fleet import match_cpu
    from hwadvisor.cost.price import Runs
    from hwadvisor.engine.paths import LOCAL_PREFIX

    devices = pricing.devices
    if est.device == "here":
        cpu = match_cpu(facts.cpu.model, devices) if facts is not None else None
        vcpus = (facts.cpu.usable_cores or facts.cpu.logical_cores) if facts is not None else None
        share = cpu_share(cpu, vcpus) if cpu is not None and cpu.cores and vcpus else None
        return Runs("here", share, processor=cpu.id if cpu else None, vcpus=vcpus)
    if est.device.startswith(LOCAL_PREFIX):
        return Runs("local", devices.get(est.device[len(LOCAL_PREFIX) :]), count=est.gpus)
    inst = named.get(est.device)
    if inst is not None:
        on, count = instance_device(inst, devices)
        return Runs("instance", on, count, inst)
    entry = devices.get(est.device)
    if entry is not None and entry.kind.value == "cpu":
        return Runs("device", entry, processor=entry.id, vcpus=entry.threads or entry.cores)
    return Runs("device", entry, count=est.gpus)


def price_report(
    report: EstimateReport,
    *,
    pricing: Pricing,
    budget: Budget | None = Budget.NORMAL,
    facts: Facts | None = None,
    instances: Sequence[Instance] = (),
) -> EstimateReport:
    """``report`` with a ``cost`` on every estimate and the picks (see the module).

    ``instances`` are the instance types among the rows (their ``device`` is the type);
    ``facts`` says what ``here`` is, for its energy and cloud equivalent.
    """
    from hwadvisor.cost.choose import s5_holds
    from hwadvisor.cost.price import pick_all, price_row

    wl = report.workload
    target = target_for(wl)
    named = {i.instance_type: i for i in instances}
    rows, options = [], []
    for est in report.estimates:
        priced = price_row(
            est,
            _runs(est, named, pricing, facts),
            catalog=pricing.catalog,
            target=target,
            own=pricing.own,
            today=pricing.today,
        )
        rows.append(est.model_copy(update={"cost": priced.cost}))
        options += priced.options
    s5 = target.infer and s5_holds(wl.qps, wl.latency_ms)
    picks = pick_all(options, target, low=budget is Budget.LOW, s5=s5)
    return report.model_copy(update={"estimates": rows, **picks})


def price_for_advice(
    report: EstimateReport | None,
    workload: Workload,
    *,
    pricing: Pricing,
    budget: Budget = Budget.NORMAL,
    facts: Facts | None = None,
    rows: Rows | None = None,
) -> EstimateReport | None:
    """The advice's estimates priced, with the options a recommendation weighs added:
    the cheapest CPU instance of each processor that holds the job's memory on a CPU
    (what ``here`` needs), and under ``--budget low`` every GPU a priced instance carries
    (previous generations included; catalog rows already in ``rows`` are not estimated
    again)."""
    if report is None:
        return None
    from hwadvisor.pipeline.rows import Rows

    here = next((e for e in report.estimates if e.device == "here"), None)
    cpus = cpu_instances(pricing.catalog, need_bytes=here.memory_bytes if here else None)
    rows_now = [*report.estimates, *instance_estimates(workload, cpus, pricing)]
    if budget is Budget.LOW:
        more = previous_generation(pricing, {e.device for e in rows_now if e.gpus == 1})
        if more:
            catalog = (
                rows.for_machine(None, None) if rows is not None else Rows(workload, None, None)
            )
            from hwadvisor.pipeline.advice import as_recommended_row

            rows_now += [as_recommended_row(workload, e, facts) for e in catalog.on(more)]
    merged = report.model_copy(update={"estimates": rows_now})
    return price_report(merged, pricing=pricing, budget=budget, facts=facts, instances=cpus)


def stale_prices(costs: Iterable[Cost | None]) -> str | None:
    """One warning line when prices used are more than a year old, with the oldest date."""
    from hwadvisor.cost.price import stale_note

    return stale_note(list(costs))


# -- rules explain: the prices a cost rule's facts rest on ------------------------------------


@dataclass
class PricedExplanation(Explanation):
    """An explanation of a cost rule, with the prices its facts rest on."""

    prices: PricesUsed | None = None


#: The picks a priced report carries, in the order they are shown.
PICKS = ("cheapest", "fastest", "cheapest_cpu", "cheapest_gpu", "budget_low")


def is_cost_rule(exp: Explanation) -> bool:
    """The rule reads a price or an energy figure (``cost.*``, ``estimate.<slot>.cost.*``)."""
    rule = exp.rule
    paths = rule.when.fact_paths() if rule.when is not None else []
    text = " ".join(filter(None, [rule.message, rule.verdict.summary if rule.verdict else None]))
    return any(p.startswith("cost.") or ".cost." in p for p in paths) or "cost." in text


def prices_used(report: EstimateReport | None, pricing: Pricing) -> PricesUsed:
    """The price list and the picks of ``report`` (see :class:`PricesUsed`)."""
    source = "the shipped instance catalog"
    if pricing.prices is not None:
        source = f"{pricing.prices} laid over the shipped instance catalog"
    own = pricing.own.describe() if pricing.own is not None else None
    picks = [(n, c) for n in PICKS if (c := getattr(report, n, None)) is not None]
    return PricesUsed(source, own, picks)


def explain_with_prices(
    exp: Explanation, report: EstimateReport | None, pricing: Pricing
) -> Explanation:
    """``exp`` with the prices its facts rest on, when it explains a cost rule."""
    if not is_cost_rule(exp):
        return exp
    return PricedExplanation(
        exp.rule,
        exp.scenario,
        exp.applies,
        exp.truth,
        exp.lines,
        prices=prices_used(report, pricing),
    )
