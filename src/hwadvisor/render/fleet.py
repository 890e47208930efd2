"""Human view of ``hwadvisor fleet``: the ranking table and the skipped reports.

One machine per line from 100 columns: rank, report, what runs the job, the verdict,
the time, memory needed against memory there, and the dollars. What the rule engine
thinks, where the price comes from, the energy and the reason in words show as columns
from :data:`~hwadvisor.render.layout.WIDE` columns on, and fold into a line under the
machine on a narrow terminal.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.export.fleet import FleetReport, FleetStatus
from hwadvisor.models.workload import Task
from hwadvisor.render import stdout_console
from hwadvisor.render.cost import usd
from hwadvisor.render.layout import Col, FitTable
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.cost.model import Cost
    from hwadvisor.export.fleet import FleetEntry

_STYLE = {
    FleetStatus.FITS: "[bold green]fits[/]",
    FleetStatus.UNKNOWN: "[yellow]unknown[/]",
    FleetStatus.TOO_SLOW: "[red]too slow[/]",
    FleetStatus.NO_FIT: "[bold red]does not fit[/]",
}


def _memory(need: int | None, has: int | None) -> str:
    """'4.6 / 124.5 GiB': one unit when both sides share it."""
    a, b = human_bytes(need), human_bytes(has)
    unit_a, unit_b = a.rpartition(" ")[2], b.rpartition(" ")[2]
    if need is not None and has is not None and unit_a == unit_b:
        return f"{a.rpartition(' ')[0]} / {b}"
    return f"{a} / {b}"


#: Words of a GPU's name that the other columns already say (the maker, the memory size,
#: the memory kind), dropped from the short name in "runs on".
_SAID_ELSEWHERE = re.compile(
    r"\b(?:NVIDIA|AMD|GeForce|Tesla|Radeon|\d+(?:\.\d+)?\s?(?:GB|GiB)|HBM\w*|GDDR\w*)\b\s*"
)


def short_gpu(name: str) -> str:
    """A GPU's name as people say it: "NVIDIA H100 80GB HBM3 79.6 GiB" -> "H100"."""
    short = " ".join(_SAID_ELSEWHERE.sub(" ", name).split())
    return short or name


def _runs_on(m: FleetEntry) -> str:
    if m.device == "cpu" or not m.gpus:
        return f"CPU, {m.usable_cores or '?'} cores"
    return ", ".join(f"{n} x {short_gpu(gpu)}" for gpu, n in Counter(m.gpus).items())


def _dollars(cost: Cost | None) -> str:
    if cost is None or cost.on_demand_usd is None:
        return "[dim]unpriced[/]"
    return usd(cost.on_demand_usd) + (" [yellow]stale[/]" if cost.stale else "")


def _price(m: FleetEntry) -> str:
    cost = m.cost
    where = f"as {m.priced_as}"
    if cost is None or cost.on_demand_usd is None:
        return where
    when = f", {cost.price_date}" if cost.price_date else ""
    return f"{where}, {cost.instance or 'own price'}{when}"


def _rules(m: FleetEntry) -> str:
    if m.recommended_device is None:
        return ""
    fit = {True: "fits", False: "falls short", None: "fit unknown"}[m.rules_fit]
    return f"{m.recommended_device}, {fit}"


def _row(m: FleetEntry) -> list[str]:
    energy = m.cost.energy_kwh if m.cost is not None else None
    return [
        str(m.rank),
        Path(m.source).stem,
        _runs_on(m),
        _STYLE[m.status],
        duration(m.time_s),
        _memory(m.memory_bytes, m.device_memory_bytes),
        _dollars(m.cost),
        m.hostname or "",
        ", ".join(f"{n} x {gpu}" for gpu, n in Counter(m.gpus).items()),
        _rules(m),
        _price(m),
        f"{energy:.3g} kWh" if energy is not None else "",
        m.reason,
    ]


def fleet_table(report: FleetReport) -> FitTable:
    """The ranking, one machine per row."""
    wl = report.workload
    timing = "time/batch" if wl.task is Task.INFER else "time"
    columns = [
        Col("#", "right"),
        Col("report", wrap=True, min_width=12),
        Col("runs on", fold=1),
        Col("verdict"),
        Col(timing, "right"),
        Col("need / has", "right"),
        Col("cost", "right", fold=2),
        Col("host", wide=True, fold=3),
        Col("gpus", wide=True, fold=4),
        Col("rules", wide=True, fold=5),
        Col("priced", wide=True, fold=6),
        Col("energy", "right", wide=True, fold=7),
        Col("why", wide=True, fold=8),
    ]
    what = wl.model or "custom workload"
    title = (
        f"Fleet ranking for {report.scenario or wl.task.value}: {what} "
        f"({wl.precision.value}, batch {wl.batch_size})"
    )
    return FitTable(columns, [_row(m) for m in report.machines], title=title, hint=True)


def render_fleet(report: FleetReport, console: Console | None = None) -> None:
    """Print the ranking as a table, then the reports that were skipped and why."""
    con = console or stdout_console()
    if report.machines:
        con.print(fleet_table(report))
    else:
        con.print("[yellow]No report could be ranked.[/]")
    for s in report.skipped:
        con.print(f"[yellow]skipped[/] {s.source}: {s.reason}", markup=True, highlight=False)
