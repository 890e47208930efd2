"""Human view of ``hwadvisor fleet``: a ranked summary by hardware group, and the skips.

A fleet of thousands of nodes is mostly a few kinds of hardware, so the table has one
line per *group* of identical hardware (``FleetReport.groups``: one estimate, verdict
and price for all of its nodes), best first, and only the top ``limit`` groups
(:data:`DEFAULT_LIMIT`; ``fleet --limit N`` or ``--all``); one line says how many
groups and nodes are left out and how to see them (``--json`` lists every machine).
From 100 columns each group is one line: rank, nodes, the best machine's report, what
runs the job, the verdict, the time and the dollars per node. Memory needed against
memory there, the host, the rule engine's view, where the price comes from, the energy
and the reason in words show as columns from :data:`~hwadvisor.render.layout.WIDE`
columns on (the verdict already says when memory does not fit). Skipped
reports are counted by reason, with one example each.
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from rich.markup import escape

from hwadvisor.models.fleet import FleetReport, FleetStatus
from hwadvisor.models.workload import Task
from hwadvisor.render import stdout_console
from hwadvisor.render.cost import usd
from hwadvisor.render.layout import Col, FitTable
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.cost.model import Cost
    from hwadvisor.models.fleet import FleetEntry

#: Groups shown when ``fleet`` is given neither ``--limit`` nor ``--all``.
DEFAULT_LIMIT = 20
#: Skip reasons listed, most common first, before "and N more reasons".
SKIP_REASONS = 5

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


def _row(m: FleetEntry, count: int) -> list[str]:
    energy = m.cost.energy_kwh if m.cost is not None else None
    return [
        str(m.group or m.rank),
        f"{count:,}",
        Path(m.source).stem,
        _runs_on(m),
        _STYLE[m.status],
        duration(m.time_s),
        _dollars(m.cost),
        _memory(m.memory_bytes, m.device_memory_bytes),
        m.hostname or "",
        ", ".join(f"{n} x {gpu}" for gpu, n in Counter(m.gpus).items()),
        _rules(m),
        _price(m),
        f"{energy:.3g} kWh" if energy is not None else "",
        m.reason,
    ]


def _groups(report: FleetReport) -> list[tuple[FleetEntry, int]]:
    """Each group's best machine and its node count (a report without groups, from an
    older minor version, is one group per machine)."""
    if not report.groups:
        return [(m, 1) for m in report.machines]
    return [(report.machines[g.first - 1], g.count) for g in report.groups]


def _counts(report: FleetReport) -> list[int]:
    """The node count of each group, best first."""
    return [g.count for g in report.groups] if report.groups else [1] * len(report.machines)


def fleet_table(report: FleetReport, limit: int | None = DEFAULT_LIMIT) -> FitTable:
    """The ranking, one group of identical hardware per row, the top ``limit`` (None: all)."""
    wl = report.workload
    timing = "time/batch" if wl.task is Task.INFER else "time"
    columns = [
        Col("#", "right"),
        Col("nodes", "right"),
        Col("report", wrap=True, min_width=12),
        Col("runs on", fold=1),
        Col("verdict"),
        Col(timing, "right"),
        Col("cost/node", "right", fold=2),
        Col("need / has", "right", wide=True, fold=3),
        Col("host", wide=True, fold=4),
        Col("gpus", wide=True, fold=5),
        Col("rules", wide=True, fold=6),
        Col("priced", wide=True, fold=7),
        Col("energy", "right", wide=True, fold=8),
        Col("why", wide=True, fold=9),
    ]
    what = wl.model or "custom workload"
    title = (
        f"Fleet ranking for {report.scenario or wl.task.value}: {what} "
        f"({wl.precision.value}, batch {wl.batch_size}), by {report.by.value}"
    )
    shown = _groups(report)[:limit]
    return FitTable(columns, [_row(m, n) for m, n in shown], title=title, hint=True)


def summary_line(report: FleetReport) -> str:
    """'10,000 machines in 7 hardware groups; 12 reports skipped'."""
    groups = len(_counts(report))
    said = (
        f"{len(report.machines):,} machine{'s' if len(report.machines) != 1 else ''} "
        f"in {groups:,} hardware group{'s' if groups != 1 else ''}"
    )
    if report.skipped:
        said += f"; {len(report.skipped):,} report{'s' if len(report.skipped) != 1 else ''} skipped"
    return said


def more_line(report: FleetReport, limit: int | None) -> str | None:
    """The line that says what the table left out and how to see it (None: nothing)."""
    counts = _counts(report)
    if limit is None or len(counts) <= limit:
        return None
    rest = counts[limit:]
    nodes = sum(rest)
    return (
        f"... and {len(rest):,} more group{'s' if len(rest) != 1 else ''} "
        f"({nodes:,} node{'s' if nodes != 1 else ''}): --limit N or --all shows them, "
        "--json lists every machine"
    )


def skipped_lines(report: FleetReport, reasons: int = SKIP_REASONS) -> list[str]:
    """The skipped reports counted by reason, most common first, one example each."""
    by_reason: dict[str, list[str]] = {}
    for s in report.skipped:
        by_reason.setdefault(s.reason, []).append(s.source)
    ranked = sorted(by_reason.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    lines = []
    for reason, sources in ranked[:reasons]:
        also = f" (and {len(sources) - 1:,} more)" if len(sources) > 1 else ""
        lines.append(f"skipped {len(sources):,}: {sources[0]}{also}: {reason}")
    if len(ranked) > reasons:
        left = sum(len(v) for _, v in ranked[reasons:])
        lines.append(
            f"skipped {left:,} more for {len(ranked) - reasons:,} other reasons: "
            "--json lists every skipped report"
        )
    return lines


def render_fleet(
    report: FleetReport, console: Console | None = None, *, limit: int | None = DEFAULT_LIMIT
) -> None:
    """Print the ranked groups (the top ``limit``; None for all), what was left out,
    then the skipped reports by reason."""
    con = console or stdout_console()
    if report.machines:
        con.print(summary_line(report), markup=False, highlight=False)
        con.print(fleet_table(report, limit))
        more = more_line(report, limit)
        if more:
            con.print(f"[dim]{escape(more)}[/]", highlight=False)
    else:
        con.print("[yellow]No report could be ranked.[/]")
    for line in skipped_lines(report):
        head, _, rest = line.partition(":")
        con.print(f"[yellow]{escape(head)}[/]:{escape(rest)}", highlight=False)
