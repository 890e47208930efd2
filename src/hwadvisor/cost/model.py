"""What a job costs, as a document, and the assumptions priced into it (pure data).

:class:`Cost` is what an estimate carries (defined with the documents,
:mod:`hwadvisor.models.cost`, and re-exported here): the instance, on-demand and spot
dollars for the job (spot with an allowance for interruptions), the energy of the job
at board power, and where the price came from and when. :class:`SpotAllowance` and
:class:`OwnHardware` are the assumptions, stated with their sources.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwadvisor.errors import UsageError
from hwadvisor.models.cost import Cost

__all__ = ["DEFAULT_ALLOWANCE", "HOURS_PER_MONTH", "Cost", "OwnHardware", "SpotAllowance"]

#: Hours in a month as the clouds' monthly estimates count them (8,760 / 12).
HOURS_PER_MONTH = 730.0


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
            ("--purchase-usd", self.purchase_usd),
            ("--electricity-usd-kwh", self.electricity_usd_per_kwh),
        ):
            if value is not None and not (value >= 0 and math.isfinite(value)):
                raise UsageError(f"{option} must be 0 or more, got {value:g}")
        if self.years is not None and not (self.years > 0 and math.isfinite(self.years)):
            raise UsageError(f"--years must be above 0, got {self.years:g}")
        if self.price_per_hour is None and (self.purchase_usd is None or self.years is None):
            raise UsageError("own hardware needs --price-per-hour, or --purchase-usd and --years")

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
