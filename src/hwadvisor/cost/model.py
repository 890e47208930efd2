"""What a job costs, as a document, and the assumptions priced into it (pure data).

:class:`Cost` is what an estimate carries: the instance, on-demand and spot dollars for
the job (spot with an allowance for interruptions), the energy of the job at board
power, and where the price came from and when. :class:`SpotAllowance` and
:class:`OwnHardware` are the assumptions, stated with their sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import Field

from hwadvisor.errors import UsageError
from hwadvisor.models.common import Document

#: Hours in a month as the clouds' monthly estimates count them (8,760 / 12).
HOURS_PER_MONTH = 730.0


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
    instances: int | None = Field(None, description="serving: instances counted for the QPS")
    notes: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class SpotAllowance:
    """Extra time (and so money) a job pays on spot instances: checkpoints and restarts.

    fraction = checkpoint_overhead + rate x (restart_s + checkpoint_interval_s / 2), the
    rate in interruptions per second of running; each interruption loses the restart and,
    on average, half a checkpoint interval of work.

    - ``checkpoint_overhead`` 3.5%: CheckFreq (Mohan et al., USENIX FAST 2021) bounds the
      run-time overhead of frequent checkpoints within 3.5%.
    - ``interruptions_per_month`` 0.2: AWS's Spot Instance Advisor reports the frequency of
      interruption per instance type in bands of <5%, 5-10%, 10-15%, 15-20% and >20% per
      month; the allowance starts at the top band's edge. Set it higher for scarce GPUs.
    - ``restart_s`` 600 and ``checkpoint_interval_s`` 1800: assumed (a new instance, the
      image, the data and the checkpoint loaded again; a checkpoint every 30 minutes).
    """

    checkpoint_overhead: float = 0.035
    interruptions_per_month: float = 0.2
    restart_s: float = 600.0
    checkpoint_interval_s: float = 1800.0

    def __post_init__(self) -> None:
        for name in ("checkpoint_overhead", "interruptions_per_month", "restart_s"):
            if getattr(self, name) < 0:
                raise UsageError(f"spot allowance: {name} must be 0 or more")
        if self.checkpoint_interval_s <= 0:
            raise UsageError("spot allowance: checkpoint_interval_s must be above 0")

    def fraction(self) -> float:
        """The fraction of extra run time paid on spot."""
        rate_per_s = self.interruptions_per_month / (HOURS_PER_MONTH * 3600)
        lost_s = self.restart_s + self.checkpoint_interval_s / 2
        return self.checkpoint_overhead + rate_per_s * lost_s

    def basis(self) -> str:
        """One line naming the allowance and its sources."""
        return (
            f"+{self.fraction():.1%} time: checkpoints {self.checkpoint_overhead:.1%} (CheckFreq, "
            f"USENIX FAST 2021) and {self.interruptions_per_month:g} interruptions per month (AWS "
            f"Spot Instance Advisor's top band) losing {self.restart_s / 60:g} min of restart and "
            f"half of a {self.checkpoint_interval_s / 60:g}-min checkpoint interval each"
        )


DEFAULT_ALLOWANCE = SpotAllowance()


@dataclass(frozen=True)
class OwnHardware:
    """The user's own machine: a price per hour, or a purchase spread over years plus power.

    hourly = price_per_hour, or purchase_usd / (years x 8,760 h) + power kW x electricity
    price. Straight-line over every hour of the years: a machine idle half the time costs
    twice as much per hour of use; give --price-per-hour to say otherwise.
    """

    price_per_hour: float | None = None
    purchase_usd: float | None = None
    years: float | None = None
    electricity_usd_per_kwh: float | None = None

    def __post_init__(self) -> None:
        for option, value in (
            ("--price-per-hour", self.price_per_hour),
            ("--purchase-price", self.purchase_usd),
            ("--electricity-price", self.electricity_usd_per_kwh),
        ):
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise UsageError(f"{option} must be 0 or more, got {value:g}")
        if self.years is not None and not (self.years > 0 and math.isfinite(self.years)):
            raise UsageError(f"--years must be above 0, got {self.years:g}")
        if self.price_per_hour is None and (self.purchase_usd is None or self.years is None):
            raise UsageError("own hardware needs --price-per-hour, or --purchase-price and --years")

    def hourly(self, power_w: float | None) -> float:
        """Dollars per hour of the machine, with electricity at ``power_w`` when priced so."""
        if self.price_per_hour is not None:
            return self.price_per_hour
        assert self.purchase_usd is not None and self.years is not None
        energy = (power_w or 0.0) / 1000 * (self.electricity_usd_per_kwh or 0.0)
        return self.purchase_usd / (self.years * 8760) + energy

    def describe(self) -> str:
        """Where the hourly figure comes from, for ``price_source``."""
        if self.price_per_hour is not None:
            return f"--price-per-hour {self.price_per_hour:g} (own hardware)"
        power = (
            f" + electricity at ${self.electricity_usd_per_kwh:g}/kWh"
            if self.electricity_usd_per_kwh
            else ""
        )
        return f"purchase ${self.purchase_usd:g} over {self.years:g} years{power} (own hardware)"
