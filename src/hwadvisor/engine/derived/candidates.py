"""Derived facts from the estimates: every row of the table as an option the verdict may pick.

``estimate.options`` lists one entry per row the advice compares (this machine's CPU,
its own GPUs, the catalog GPUs single and several), each with its device class, whether
the job as recommended fits there (``fits``: its fixes or plan included) and meets the
job's requirement (``meets``: the deadline, the QPS, the latency or time-to-first-token
target), and its price. The verdict (:mod:`hwadvisor.engine.choice`) reads only these
entries to choose, so it can never pick what its own table rules out.

Registered on the estimates' registry: the same input, the report and its slots.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.engine.derive import FactType
from hwadvisor.engine.derived.estimates import (
    ESTIMATES,
    LOCAL_PREFIX,
    Estimates,
    Slot,
    meets_latency,
    planned,
    planned_fixes,
    serves_qps,
    within_deadline,
)
from hwadvisor.engine.derived.llm import meets_ttft
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.workload import Task, Workload

#: Tasks whose requirement is a deadline on the whole job.
_JOBS = frozenset({Task.TRAIN, Task.FINETUNE})


def _requirement(est: DeviceEstimate, wl: Workload, own: bool, time_s: float | None) -> bool | None:
    """Whether ``est`` meets the job's requirement (None: the table cannot tell).

    A job must finish within the deadline; a served model must answer within the latency
    and time-to-first-token targets, and carry the QPS. This machine carries the QPS on
    what it has; a rented option adds replicas until it does (the price counts them).
    """
    slot = Slot(est, wl)
    if wl.task in _JOBS:
        if time_s is None or time_s == est.total_time_s:
            return within_deadline(slot) if time_s is not None else None
        return time_s <= wl.deadline_hours * 3600.0
    latency = meets_ttft(slot) if est.serving is not None else meets_latency(slot)
    if latency is False:
        return False
    if own and wl.qps is not None:
        return serves_qps(slot)
    return True


#: The note a cost carries when this machine's own hardware was given no price: what it
#: shows then is a cloud equivalent, not what running it here costs.
_OWN_UNPRICED = "own hardware: give --price-per-hour"


def _price(est: DeviceEstimate, wl: Workload) -> tuple[float | None, float | None, str]:
    """What the option costs (on demand, spot) and what for: the job, a month of
    serving at the QPS, or 1,000 requests (inference without a QPS)."""
    cost = est.cost
    if cost is None or any(n.startswith(_OWN_UNPRICED) for n in cost.notes):
        return None, None, "job"
    if cost.monthly_usd is not None:
        return cost.monthly_usd, None, "month"
    per = "job" if wl.task in _JOBS else "1000 requests"
    return cost.on_demand_usd, cost.spot_usd, per


def option(est: DeviceEstimate, wl: Workload, gpu: bool) -> dict[str, Any]:
    """One row as an option: where, how many, whether it fits and meets, what it costs."""
    here = est.device == "here"
    own = here or est.device.startswith(LOCAL_PREFIX)
    plan = est.plan if not est.fits and est.plan is not None else None
    gpus = plan.gpus if plan is not None and planned(est) else est.gpus
    timed = plan is not None and gpus != est.gpus
    time_s = plan.total_time_s if timed and plan is not None else est.total_time_s
    step_s = plan.step_time_s if timed and plan is not None else est.step_time_s
    rate = plan.throughput_samples_s if timed and plan is not None else est.throughput_samples_s
    usd, spot, per = _price(est, wl)
    # This machine's hardware, unpriced, costs what its owner pays: no hourly rate either.
    hourly = est.cost.hourly_usd if est.cost is not None and not (own and usd is None) else None
    name = est.name or est.device
    cls = "cpu" if not gpu else "multi_gpu" if gpus > 1 else "gpu"
    if plan is not None and planned(est):
        text = plan.plan
    elif not gpu:
        text = "this machine's CPU" if here else name
    else:
        text = f"{gpus} × {name}"
    return {
        "device": est.device,
        "name": name,
        "class": cls,
        "gpus": gpus,
        "here": own,
        "fits": planned(est),
        "fixes": planned_fixes(est),
        "meets": _requirement(est, wl, own, time_s),
        "time_s": time_s,
        "step_s": step_s,
        "samples_s": rate,
        "usd": usd,
        "spot_usd": spot,
        "per": per,
        "plan": text,
        "hourly_usd": hourly,
        "instance": est.cost.instance if est.cost else None,
        "instances": est.cost.instances if est.cost else None,
        "concurrency": est.serving.concurrency if est.serving else None,
        "strategy": (plan.strategy if plan is not None and gpus > 1 else "single"),
    }


@ESTIMATES.fact(
    "estimate.options",
    FactType.LIST,
    "every row compared as an option (this machine's CPU, its GPUs, the catalog GPUs): "
    "device, name, class (cpu, gpu, multi_gpu), gpus, here, fits (as recommended), meets "
    "(deadline, QPS, latency), time_s, step_s (one step), usd, spot_usd, per (job or month), plan, fixes",
)
def options(e: Estimates) -> list[dict[str, Any]]:
    """The rows the verdict chooses among."""
    if e.report is None:
        return []
    wl = e.report.workload
    catalog = {x.device for x in e.catalog}
    out = []
    for est in e.report.estimates:
        local = est.device.startswith(LOCAL_PREFIX)
        if est.device == "here":
            out.append(option(est, wl, gpu=False))
        elif local or est.device in catalog:
            out.append(option(est, wl, gpu=True))
        else:
            out.append(option(est, wl, gpu=False))
    return out
