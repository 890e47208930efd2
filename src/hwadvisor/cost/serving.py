"""A month of serving at a QPS: enough instances for the load, billed busy or idle.

A replica of the job serves ``throughput_samples_s`` requests per second at the estimated
latency; a GPU instance with more GPUs than one replica uses runs as many replicas as
its GPUs hold (8 one-GPU replicas on an 8-GPU instance), a CPU instance one;
``ceil(qps / (throughput x replicas))`` instances (at least one) carry the load, and each is
billed for every hour of the month whether it is busy or not (GUIDANCE S5: an idle GPU
instance is still billed). When the latency per request is over the target no number of
instances meets it (more instances add throughput, not speed): the cost is still given,
with a note. Energy counts the busy share of the month at board power (idle draw is not
in the catalog, so it is left out).
"""

from __future__ import annotations

import math
from datetime import date
from typing import TYPE_CHECKING

from hwadvisor.cost.job import device_power
from hwadvisor.cost.model import HOURS_PER_MONTH, Cost
from hwadvisor.errors import UsageError

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import Instance
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.cost.choose import Option


def instances_for_qps(qps: float, throughput_samples_s: float) -> int:
    """Instances needed to serve ``qps`` when each serves ``throughput_samples_s``."""
    if not qps >= 0:
        raise UsageError(f"--qps must be 0 or more, got {qps:g}")
    if not throughput_samples_s > 0:
        raise UsageError("an instance's throughput must be above 0 to serve any QPS")
    return max(1, math.ceil(qps / throughput_samples_s - 1e-9))


def serving_cost(
    inst: Instance,
    *,
    qps: float,
    throughput_samples_s: float,
    latency_s: float | None = None,
    latency_target_s: float | None = None,
    device: DeviceEntry | None = None,
    per_replica: int = 1,
    spot: bool = False,
    today: date | None = None,
) -> Cost:
    """The monthly bill of serving ``qps`` on ``inst`` (on-demand, or spot when asked),
    each replica of the job on ``per_replica`` of its GPUs."""
    from hwadvisor.catalog.instances import nodes_for, stale_warning

    replicas = replicas_per_instance(inst, per_replica)
    # A replica on more GPUs than the instance has spans nodes: each replica bills them all.
    nodes = nodes_for(inst, per_replica)
    count = instances_for_qps(qps, throughput_samples_s * replicas) * nodes
    hourly = inst.spot_price if spot else inst.price
    notes = []
    if latency_s is not None and latency_target_s is not None and latency_s > latency_target_s:
        notes.append(
            f"latency {latency_s * 1000:.1f} ms is over the {latency_target_s * 1000:g} ms target "
            "on any number of these instances"
        )
    busy = min(1.0, qps / (count // nodes * throughput_samples_s * replicas))
    power, power_source = device_power(device)
    used = max(inst.accelerator_count, 1) if not inst.is_cpu else 1
    working = 1 if inst.is_cpu else min(used, replicas * max(1, per_replica) // nodes)
    month_s = HOURS_PER_MONTH * 3600
    energy = None if power is None else power * working * count * busy * month_s / 3.6e6
    stale = stale_warning(inst, today)
    if stale:
        notes.append(stale)
    if hourly is None:
        notes.append(inst.note or "unpriced")
    return Cost(
        instance=inst.instance_type,
        devices=used,
        hourly_usd=inst.price,
        monthly_usd=None if hourly is None else hourly * count * HOURS_PER_MONTH,
        instances=count,
        energy_kwh=energy,
        power_w=None if power is None else power * working * count,
        power_source=power_source,
        price_date=inst.price_date,
        price_source=inst.source,
        stale=stale is not None,
        notes=[
            *([f"{replicas} replicas of the job on each instance"] if replicas > 1 else []),
            f"{busy:.2%} busy: billed for the whole month",
            *notes,
        ],
    )


def replicas_per_instance(inst: Instance, per_replica: int = 1) -> int:
    """Replicas of a job on ``per_replica`` GPUs that one instance of ``inst`` runs: as many
    as its GPUs hold (a CPU instance runs one)."""
    if inst.is_cpu:
        return 1
    return max(1, inst.accelerator_count // max(1, per_replica))


def serving_option(
    inst: Instance,
    *,
    qps: float,
    throughput_samples_s: float,
    latency_s: float | None = None,
    latency_target_s: float | None = None,
    device: DeviceEntry | None = None,
    per_replica: int = 1,
) -> Option:
    """One serving option for :func:`hwadvisor.cost.choose.cheapest`: the monthly bill on
    demand (a spot instance's interruptions take the service down, so serving is priced
    on demand), meeting the target when the latency is within it."""
    from hwadvisor.cost.choose import Option

    cost = serving_cost(
        inst,
        qps=qps,
        throughput_samples_s=throughput_samples_s,
        latency_s=latency_s,
        latency_target_s=latency_target_s,
        device=device,
        per_replica=per_replica,
    )
    meets = latency_s is None or latency_target_s is None or latency_s <= latency_target_s
    return Option(
        device=device.id if device is not None and not inst.is_cpu else inst.device_id,
        instance=inst.instance_type,
        usd=cost.monthly_usd,
        time_s=latency_s,
        cpu=inst.is_cpu,
        count=1 if inst.is_cpu else max(1, per_replica),
        nodes=cost.instances or 1,
        released=device.released if device is not None else None,
        meets=meets,
        price_date=inst.price_date,
        price_source=inst.source,
        per="month",
    )
