"""The cost documents an estimate carries: :class:`Cost` (one job, or a month of serving,
on one instance or own machine) and :class:`Choice` (a pick: the cheapest, the fastest).

They are computed by :mod:`hwadvisor.cost` (pure functions over the instance catalog and
the estimated times); defined here with the other documents so that
:class:`~hwadvisor.models.estimate.DeviceEstimate` and the advice can hold them.
"""

from __future__ import annotations

from pydantic import Field

from hwadvisor.models.common import Document

__all__ = ["Choice", "Cost", "Pick"]


class Cost(Document):
    """The cost of one job (or one month of serving) on one instance or own machine."""

    instance: str | None = Field(
        None, description="the instance type priced, or 'here' for the user's own hardware"
    )
    devices: int = Field(1, description="devices the job uses (GPUs; 1 for a CPU)")
    hourly_usd: float | None = Field(None, description="on-demand price of the instance per hour")
    time_s: float | None = Field(None, description="the job's estimated time, as priced")
    on_demand_usd: float | None = Field(
        None, description="the job at the on-demand price, billed per second (1-minute minimum)"
    )
    spot_usd: float | None = Field(
        None, description="the job at the spot price, with spot_allowance added for interruptions"
    )
    spot_allowance: float | None = Field(
        None, description="fraction of extra time paid on spot for checkpoints and restarts"
    )
    spot_basis: str | None = Field(None, description="where the interruption allowance comes from")
    energy_kwh: float | None = Field(
        None, description="board power x time x devices; the host (CPU, DRAM, fans) not counted"
    )
    power_w: float | None = Field(None, description="board power of the devices used, together")
    power_source: str | None = None
    price_date: str | None = Field(None, description="the date of the price: always shown with it")
    price_source: str | None = None
    stale: bool = Field(False, description="the price is more than a year old")
    monthly_usd: float | None = Field(
        None, description="serving: a month of enough instances for the QPS, billed busy or idle"
    )
    instances: int | None = Field(
        None,
        description="serving: instances counted for the QPS; a job on more GPUs than one "
        "instance has: its nodes",
    )
    notes: list[str] = Field(default_factory=list)


class Choice(Document):
    """The option picked, and whether it meets the deadline (or the serving target)."""

    device: str
    instance: str | None = None
    usd: float | None = None
    time_s: float | None = None
    meets_deadline: bool = Field(
        description="the job finishes within the deadline (serving: within the latency target)"
    )
    spot: bool = False
    cpu: bool = Field(False, description="the pick runs on a CPU (a CPU instance, or here)")
    fits: bool | None = Field(
        None, description="the job fits the pick's memory (false only when no option does)"
    )
    plan: str | None = Field(
        None, description="the multi-GPU plan the pick runs (its fixes and sharding), if any"
    )
    nodes: int = Field(1, ge=1, description="instances billed together (a job past one node)")
    per: str = Field(
        "job", description="what usd pays for: job, month (serving at the QPS) or 1000 requests"
    )
    price_date: str | None = None
    price_source: str | None = None
    why: list[str] = Field(default_factory=list, description="what the pick rests on")
    cites: list[str] = Field(
        default_factory=list, description="ids of the source documents' claims it applies"
    )


#: The name the issue and the docs use for a :class:`Choice`.
Pick = Choice
