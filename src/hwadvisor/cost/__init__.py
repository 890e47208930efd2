"""What running a job costs: dollars on cloud instances or own hardware, and energy (pure).

- :class:`~hwadvisor.cost.model.Cost` is the cost document an estimate carries;
- :func:`~hwadvisor.cost.job.job_cost` prices a job of a given time on an instance,
  :func:`~hwadvisor.cost.job.own_cost` on the user's own machine;
- :func:`~hwadvisor.cost.serving.serving_cost` prices a month of serving at a QPS;
- :func:`~hwadvisor.cost.choose.cheapest`, :func:`~hwadvisor.cost.choose.fastest` and
  :func:`~hwadvisor.cost.choose.budget_low` pick among priced options.

Nothing here reads files or probes: the instance catalog
(:func:`hwadvisor.catalog.instances.load_instances`) and the estimated times come in.
"""

from __future__ import annotations

from hwadvisor.cost.choose import (
    Choice,
    Option,
    budget_low,
    cheapest,
    cheapest_instance,
    choose_all,
    fastest,
    instance_options,
    options_for,
    s5_holds,
)
from hwadvisor.cost.job import billed_usd, device_power, energy_kwh, job_cost, own_cost
from hwadvisor.cost.model import DEFAULT_ALLOWANCE, Cost, OwnHardware, SpotAllowance
from hwadvisor.cost.serving import (
    instances_for_qps,
    replicas_per_instance,
    serving_cost,
    serving_option,
)

__all__ = [
    "DEFAULT_ALLOWANCE",
    "Choice",
    "Cost",
    "Option",
    "OwnHardware",
    "SpotAllowance",
    "billed_usd",
    "budget_low",
    "cheapest",
    "cheapest_instance",
    "choose_all",
    "device_power",
    "energy_kwh",
    "fastest",
    "instance_options",
    "instances_for_qps",
    "job_cost",
    "options_for",
    "own_cost",
    "replicas_per_instance",
    "s5_holds",
    "serving_cost",
    "serving_option",
]
