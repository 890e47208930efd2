"""The cost of one job on one instance or own machine, and its energy (pure functions).

A job of ``time_s`` seconds on an instance is billed per second with a one-minute
minimum (AWS and Google Cloud bill Linux instances so; Azure per minute, the same within
a minute). The whole instance is billed even when the job uses fewer of its GPUs, and the
cost says so; a marketplace that sells GPUs singly (RunPod, Vast.ai:
:data:`~hwadvisor.catalog.instance_rows.MARKETPLACES`) bills the job's GPUs alone. Energy
is the board power of the devices the job uses times its time: the host (CPU, DRAM,
fans, power-supply losses) is not counted, and a device below full load draws less, so
for a GPU it is an upper bound of the GPU's own share.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from hwadvisor.cost.model import DEFAULT_ALLOWANCE, Cost, OwnHardware, SpotAllowance
from hwadvisor.errors import UsageError

if TYPE_CHECKING:
    from hwadvisor.catalog.instances import Instance
    from hwadvisor.catalog.schema import DeviceEntry

#: Billing minimum of an instance, seconds.
BILLING_MINIMUM_S = 60.0


def energy_kwh(power_w: float | None, time_s: float | None, count: int = 1) -> float | None:
    """Energy of ``count`` devices drawing ``power_w`` each for ``time_s`` seconds, kWh."""
    if power_w is None or time_s is None:
        return None
    return power_w * count * time_s / 3.6e6


def device_power(entry: DeviceEntry | None) -> tuple[float | None, str | None]:
    """Board power of a catalog device and where it comes from (TDP when that is all)."""
    if entry is None:
        return None, None
    if entry.board_power_w is not None:
        return entry.board_power_w, entry.power_source or entry.source
    if entry.tdp_watts is not None:
        return entry.tdp_watts, f"TDP of {entry.name} ({entry.source})"
    return None, entry.power_source


def _check_time(time_s: float | None) -> None:
    if time_s is not None and not time_s >= 0:
        raise UsageError(f"a job's time must be 0 or more seconds, got {time_s:g}")


def billed_usd(
    hourly: float | None, time_s: float | None, *, minimum_s: float = BILLING_MINIMUM_S
) -> float | None:
    """Dollars for ``time_s`` at ``hourly``, per second with the one-minute minimum
    (``minimum_s`` 0: requests served by an instance that runs anyway, billed by their
    time alone)."""
    if hourly is None or time_s is None:
        return None
    return hourly * max(time_s, minimum_s) / 3600


def job_cost(
    inst: Instance,
    time_s: float | None,
    *,
    device: DeviceEntry | None = None,
    devices_used: int | None = None,
    allowance: SpotAllowance = DEFAULT_ALLOWANCE,
    today: date | None = None,
    minimum_s: float = BILLING_MINIMUM_S,
) -> Cost:
    """What a job of ``time_s`` costs on ``inst``, on demand and on spot, and its energy.

    ``device`` is the catalog entry the job runs on (for a CPU instance, its vCPUs' share
    of the processor: :func:`hwadvisor.catalog.instances.cpu_share`); ``devices_used`` the
    GPUs the job uses (default: all the instance has).
    """
    from hwadvisor.catalog.instances import nodes_for, stale_warning

    _check_time(time_s)
    used = devices_used or max(inst.accelerator_count, 1)
    nodes = 1 if inst.per_gpu else nodes_for(inst, used)
    power, power_source = device_power(device)
    frac = allowance.fraction()
    spot_time = None if time_s is None else time_s * (1 + frac)
    notes: list[str] = []
    carried = nodes * inst.accelerator_count
    if nodes > 1:
        notes.append(f"{nodes} nodes of {inst.instance_type} for the job's {used} GPUs, all billed")
    if inst.per_gpu and used < inst.accelerator_count:
        notes.append(
            f"{inst.cloud} sells these GPUs singly: billed for the job's {used} of the "
            f"offer's {inst.accelerator_count} at the per-GPU price"
        )
    elif not inst.is_cpu and used < carried:
        notes.append(f"the job uses {used} of {carried} GPUs: the whole instance is billed")
    if inst.price is None and inst.spot_price is None:
        notes.append(inst.note or "unpriced")
    stale = stale_warning(inst, today)
    if stale:
        notes.append(stale)
    return Cost(
        instance=inst.instance_type,
        devices=used,
        hourly_usd=inst.hourly_for(used) if inst.per_gpu else inst.price,
        time_s=time_s,
        on_demand_usd=billed_usd(inst.hourly_for(used), time_s, minimum_s=minimum_s),
        spot_usd=billed_usd(inst.hourly_for(used, spot=True), spot_time, minimum_s=minimum_s),
        spot_allowance=frac if inst.spot_price is not None else None,
        spot_basis=allowance.basis() if inst.spot_price is not None else None,
        energy_kwh=energy_kwh(power, time_s, used if not inst.is_cpu else 1),
        power_w=None if power is None else power * (used if not inst.is_cpu else 1),
        power_source=power_source,
        price_date=inst.price_date,
        price_source=inst.source,
        stale=stale is not None,
        instances=nodes if nodes > 1 else None,
        notes=notes,
    )


def own_cost(
    own: OwnHardware,
    time_s: float | None,
    *,
    device: DeviceEntry | None = None,
    devices_used: int = 1,
    label: str = "here",
    today: date | None = None,
) -> Cost:
    """What a job of ``time_s`` costs on the user's own machine (``here``), and its energy."""
    _check_time(time_s)
    power, power_source = device_power(device)
    total_w = None if power is None else power * devices_used
    hourly = own.hourly(total_w)
    notes = []
    if own.price_per_hour is None and own.electricity_usd_per_kwh and total_w is None:
        notes.append("no board power known: electricity left out")
    return Cost(
        instance=label,
        devices=devices_used,
        hourly_usd=hourly,
        time_s=time_s,
        on_demand_usd=None if time_s is None else hourly * time_s / 3600,
        energy_kwh=energy_kwh(power, time_s, devices_used),
        power_w=total_w,
        power_source=power_source,
        price_date=(today or date.today()).isoformat(),
        price_source=own.describe(),
        notes=notes,
    )
