"""What a fleet machine's run of the workload costs, and its energy (pure).

A machine is priced, in this order:

- with the user's own price (``--price-per-hour``, or a purchase spread over years plus
  electricity): the same hourly figure for every machine;
- else as its cloud equivalent: a GPU machine at the cheapest priced instance carrying
  the GPUs the job uses; a CPU machine at the lowest per-vCPU price of an instance with
  the same processor, times its usable logical cores (vCPUs are hardware threads).

Training is priced for the whole job; inference for 1,000 requests at the estimated
throughput. Energy is board power x time of the devices the job uses (a CPU's share of
its package TDP for the cores it uses); it is unknown for a processor the catalog lacks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import date
from typing import TYPE_CHECKING

from hwadvisor.cost.choose import cheapest_instance
from hwadvisor.cost.job import device_power, energy_kwh, job_cost, own_cost
from hwadvisor.cost.model import Cost, OwnHardware

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import InstanceCatalog
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.models.estimate import DeviceEstimate
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.workload import Workload

#: Inference is priced per this many requests (samples).
REQUESTS = 1000


def priced_time(est: DeviceEstimate, workload: Workload) -> tuple[float | None, str]:
    """The seconds that are priced, and what they are: the job, or 1,000 requests."""
    from hwadvisor.models.workload import Task

    if workload.task is Task.INFER:
        tput = est.throughput_samples_s
        return (REQUESTS / tput if tput else None), f"per {REQUESTS:,} requests"
    return est.total_time_s, "the whole job"


def match_cpu(model: str | None, devices: Mapping[str, DeviceEntry]) -> DeviceEntry | None:
    """The catalog CPU whose model number a CPU's name carries (``8480`` of ``xeon-8480``)."""
    if not model:
        return None
    words = set(re.split(r"[^a-z0-9]+", model.lower()))
    for entry in devices.values():
        if entry.kind.value != "cpu":
            continue
        numbers = [t for t in entry.id.split("-") if any(c.isdigit() for c in t)]
        if numbers and all(t in words for t in numbers):
            return entry
    return None


def machine_cost(
    facts: Facts,
    est: DeviceEstimate,
    workload: Workload,
    *,
    catalog: InstanceCatalog,
    devices: Mapping[str, DeviceEntry],
    own: OwnHardware | None = None,
    today: date | None = None,
) -> Cost:
    """The cost and energy of the workload on one fleet machine (see the module)."""
    time_s, what = priced_time(est, workload)
    if est.device != "here":
        cost = _gpu_cost(est, time_s, catalog, devices, own, today)
    else:
        cost = _cpu_cost(facts, time_s, catalog, devices, own, today)
    return cost.model_copy(update={"notes": [f"priced {what}", *cost.notes]})


def _gpu_cost(
    est: DeviceEstimate,
    time_s: float | None,
    catalog: InstanceCatalog,
    devices: Mapping[str, DeviceEntry],
    own: OwnHardware | None,
    today: date | None,
) -> Cost:
    device = devices.get(est.device)
    if own is not None:
        return own_cost(own, time_s, device=device, devices_used=est.gpus, today=today)
    inst = cheapest_instance(catalog, est.device, est.gpus)
    if inst is not None:
        cost = job_cost(inst, time_s, device=device, devices_used=est.gpus, today=today)
        return cost.model_copy(update={"notes": ["cloud equivalent of these GPUs", *cost.notes]})
    power, source = device_power(device)
    return Cost(
        instance=None,
        devices=est.gpus,
        time_s=time_s,
        energy_kwh=energy_kwh(power, time_s, est.gpus),
        power_w=None if power is None else power * est.gpus,
        power_source=source,
        notes=[f"no priced instance carries {est.gpus} x {est.device}: give --price-per-hour"],
    )


def _cpu_cost(
    facts: Facts,
    time_s: float | None,
    catalog: InstanceCatalog,
    devices: Mapping[str, DeviceEntry],
    own: OwnHardware | None,
    today: date | None,
) -> Cost:
    from hwadvisor.catalog.instances import cpu_share
    from hwadvisor.cost.price import cpu_equivalent

    entry = match_cpu(facts.cpu.model, devices)
    vcpus = facts.cpu.usable_cores or facts.cpu.logical_cores
    share = cpu_share(entry, vcpus) if entry is not None and entry.cores and vcpus else None
    if own is not None:
        return own_cost(own, time_s, device=share, today=today)
    return cpu_equivalent(
        entry.id if entry else None, vcpus, time_s, catalog, device=share, today=today
    )
