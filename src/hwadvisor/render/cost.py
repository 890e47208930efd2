"""Human view of prices and costs: the instance catalog table and one-line cost summaries.

A price is never shown without its date: every dollar figure here carries the date of
the price it comes from, and a stale one (over a year old) is marked.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date
from typing import TYPE_CHECKING

from hwadvisor.render import stdout_console

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.catalog.instances import Instance, InstanceCatalog
    from hwadvisor.cost.choose import Choice
    from hwadvisor.cost.model import Cost


def usd(value: float | None) -> str:
    """Dollars as people read them: $0.0042, $0.53, $12.67, $1,234."""
    if value is None:
        return "–"
    if value >= 1000:
        return f"${value:,.0f}"
    if value >= 1:
        return f"${value:.2f}"
    return f"${value:.3g}"


def watts(value: float | None) -> str:
    """Power as people read it: 7.81 W, 70 W, 5,600 W."""
    if value is None:
        return "unknown power"
    return f"{value:,.0f} W" if value >= 100 else f"{value:.3g} W"


def price_with_date(value: float | None, when: str | None, *, stale: bool = False) -> str:
    """A price and, beside it, the date of the price (marked when stale)."""
    if value is None:
        return "unpriced"
    dated = f" (price of {when}{', stale' if stale else ''})" if when else " (undated price)"
    return usd(value) + dated


def cost_summary(cost: Cost) -> str:
    """One line: on-demand and spot dollars, where and when priced, and the energy."""
    parts = []
    if cost.monthly_usd is not None:
        parts.append(f"{usd(cost.monthly_usd)} a month on {cost.instances} x {cost.instance}")
    elif cost.on_demand_usd is not None:
        parts.append(
            f"{usd(cost.on_demand_usd)} on demand on {on_nodes(cost.instance, cost.instances)}"
        )
    if cost.spot_usd is not None and cost.spot_allowance is not None:
        parts.append(f"{usd(cost.spot_usd)} on spot (+{cost.spot_allowance:.1%} for interruptions)")
    if parts and cost.price_date:
        parts[-1] += f" (prices of {cost.price_date}{', stale' if cost.stale else ''})"
    if not parts:
        parts.append(f"unpriced ({_why_unpriced(cost)})" if cost.notes else "unpriced")
    if cost.energy_kwh is not None:
        parts.append(f"{cost.energy_kwh:.3g} kWh at {watts(cost.power_w)}")
    return "; ".join(parts)


def on_nodes(instance: str | None, nodes: int | None) -> str:
    """An instance type, with how many of it when a job or a service takes several."""
    return f"{nodes} x {instance or ''}" if nodes and nodes > 1 else instance or ""


def _why_unpriced(cost: Cost) -> str:
    """Why a cost has no dollars: an instance with a price but no time for the job says
    so (a stale price is only warned about, never the reason), else its last note."""
    if cost.hourly_usd is not None and cost.time_s is None:
        return f"{cost.instance} at {usd(cost.hourly_usd)} an hour; the job's time is unknown"
    return cost.notes[-1].removeprefix("unpriced: ")


def choice_summary(label: str, choice: Choice | None) -> str:
    """One line for a cheapest / fastest / budget-low pick."""
    if choice is None:
        return f"{label}: no priced option"
    who = choice.plan or choice.device
    where = f"{who} on {on_nodes(choice.instance, choice.nodes)}" if choice.instance else who
    if choice.fits is False:
        where += " (does not fit in memory: no priced option holds the job)"
    goal = "the latency target" if choice.per == "month" else "the deadline"
    met = f"meets {goal}" if choice.meets_deadline else f"misses {goal}"
    spot = " (spot)" if choice.spot else ""
    when = f", price of {choice.price_date}" if choice.price_date else ", undated price"
    per = {"month": " a month", "job": ""}.get(choice.per, f" per {choice.per}")
    dollars = "unpriced" if choice.usd is None else f"{usd(choice.usd)}{per}{when}"
    return f"{label}: {where}{spot}, {dollars}, {met}"


def _runs_on(inst: Instance) -> str:
    if inst.is_cpu:
        return inst.device_id
    return f"{inst.accelerator_count} x {inst.device_id}"


def render_instances(
    catalog: InstanceCatalog,
    *,
    today: date | None = None,
    console: Console | None = None,
) -> None:
    """The instance catalog as a table, by cloud: what each type runs on, its prices and
    their date (yellow when more than a year old)."""
    from rich.table import Table

    from hwadvisor.catalog.instances import stale_warning

    con = console or stdout_console()
    table = Table(
        title="instances: USD per hour, Linux; sources and notes: --json",
        title_justify="left",
        box=None,
        pad_edge=False,
    )
    table.add_column("instance", overflow="fold")
    table.add_column("runs on", overflow="fold")
    for col, width in (("vCPUs", 5), ("GiB", 4), ("$/h", 6), ("spot $/h", 8)):
        table.add_column(col, justify="right", no_wrap=True, min_width=width)
    table.add_column("price of", no_wrap=True, min_width=8)
    cloud = None
    for inst in sorted(
        catalog.instances, key=lambda i: (i.cloud, i.instance_type.lower(), i.region)
    ):
        if inst.cloud != cloud:
            cloud = inst.cloud
            table.add_row(f"[bold]{cloud or 'other'}[/]")
        stale = stale_warning(inst, today) is not None
        when = inst.price_date or ("unpriced" if inst.price is None else "")
        table.add_row(
            inst.instance_type,
            _runs_on(inst),
            str(inst.vcpus or "–"),
            f"{inst.memory_gib:g}" if inst.memory_gib else "–",
            usd(inst.price),
            usd(inst.spot_price),
            f"[yellow]{when}[/]" if stale else when,
        )
    con.print(table)
    _footer(con, catalog.skipped.items(), catalog.files)


def _footer(con: Console, skipped: Iterable[tuple[str, int]], files: tuple[str, ...]) -> None:
    for reason, count in skipped:
        con.print(f"[yellow]skipped[/] {count} rows of the price file: {reason}", highlight=False)
    con.print(f"[dim]from {', '.join(files)}; a yellow date is more than a year old[/]")


def cost_cell(cost: Cost | None) -> str:
    """A table cell: dollars with the date of their price, where priced, and the energy."""
    if cost is None:
        return "–"
    lines = []
    if cost.on_demand_usd is not None:
        when = f", {cost.price_date}" if cost.price_date else ""
        stale = " [yellow]stale[/]" if cost.stale else ""
        lines.append(f"{usd(cost.on_demand_usd)}{stale}")
        lines.append(f"[dim]{cost.instance or 'own price'}{when}[/]")
    else:
        lines.append("[dim]unpriced[/]")
    if cost.energy_kwh is not None:
        lines.append(f"{cost.energy_kwh:.3g} kWh")
    return "\n".join(lines)


#: The picks a priced estimate (or advice) carries, with the label each is printed under.
PICK_LABELS = (
    ("cheapest", "cheapest"),
    ("fastest", "fastest"),
    ("cheapest_cpu", "cheapest CPU"),
    ("cheapest_gpu", "cheapest GPU"),
    ("budget_low", "budget low"),
)


def render_costs(
    con: Console,
    rows: Iterable[tuple[str, Cost | None]],
    picks: Iterable[tuple[str, Choice | None]],
) -> None:
    """What each option costs (every price with its date), then one line per pick."""
    from rich.markup import escape

    from hwadvisor.render.layout import Hanging

    priced: list[tuple[str, Cost]] = [(label, c) for label, c in rows if c is not None]
    if not priced:
        return
    con.print("\n[bold]cost[/] (USD; each price with its date; energy at board power)")
    width = max(len(label) for label, _ in priced)
    for label, cost in priced:
        con.print(Hanging(f"  {escape(label):<{width}}  ", escape(cost_summary(cost))))
    chosen = dict(picks)
    for key, label in PICK_LABELS:
        pick = chosen.get(key)
        if pick is None and key not in ("cheapest", "fastest"):
            continue
        line = choice_summary(label, pick).split(": ", 1)[1]
        why = (
            f" [dim]({', '.join(pick.cites)}: {escape('; '.join(pick.why[1:]))})[/]"
            if pick and pick.cites
            else ""
        )
        con.print(Hanging(f"[bold]{label}[/]: ", f"{escape(line)}{why}", indent=2))


def picks_of(doc: object) -> list[tuple[str, Choice | None]]:
    """The picks a document carries (an estimate report, or the advice's estimates)."""
    return [(key, getattr(doc, key, None)) for key, _ in PICK_LABELS]
