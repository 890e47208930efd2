"""Human view of ``hwadvisor fleet``: the ranking table and the skipped reports."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hwadvisor.export.fleet import FleetReport, FleetStatus
from hwadvisor.models.workload import Task
from hwadvisor.render import stdout_console
from hwadvisor.render.cost import cost_cell
from hwadvisor.units import duration, human_bytes

_STYLE = {
    FleetStatus.FITS: "[bold green]fits[/]",
    FleetStatus.UNKNOWN: "[yellow]unknown[/]",
    FleetStatus.TOO_SLOW: "[red]too slow[/]",
    FleetStatus.NO_FIT: "[bold red]does not fit[/]",
}


def render_fleet(report: FleetReport) -> None:
    """Print the ranking as a table, then the reports that were skipped and why."""
    from rich.table import Table

    console = stdout_console()
    wl = report.workload
    what = wl.model or "custom workload"
    timing = "time per batch" if wl.task is Task.INFER else "total time"
    table = Table(
        title=f"Fleet ranking for {report.scenario or wl.task.value}: {what} ({wl.precision.value}, batch {wl.batch_size})"
    )
    table.add_column("#", justify="right")
    table.add_column("machine")
    table.add_column("runs on")
    table.add_column("verdict")
    table.add_column(timing, justify="right")
    table.add_column("memory need / has", justify="right")
    table.add_column("cost, energy", justify="right")
    table.add_column("why")
    for m in report.machines:
        stem = Path(m.source).stem
        name = stem if m.hostname in (None, stem) else f"{m.hostname}\n[dim]{stem}[/]"
        if m.device == "cpu" or not m.gpus:
            runs_on = f"CPU, {m.usable_cores or '?'} cores"
        else:
            # "NVIDIA " says nothing in a column of GPU names.
            have = ", ".join(
                f"{n} x {gpu.removeprefix('NVIDIA ')}" for gpu, n in Counter(m.gpus).items()
            )
            runs_on = f"{have}\n[dim]priced as {m.priced_as}[/]"
        memory = f"{human_bytes(m.memory_bytes)} / {human_bytes(m.device_memory_bytes)}"
        verdict = _STYLE[m.status]
        if m.recommended_device is not None:
            fit = {True: "fits", False: "falls short", None: "fit unknown"}[m.rules_fit]
            verdict += f"\n[dim]rules: {m.recommended_device}, {fit}[/]"
        table.add_row(
            str(m.rank),
            name,
            runs_on,
            verdict,
            duration(m.time_s),
            memory,
            cost_cell(m.cost),
            m.reason,
        )
    if report.machines:
        console.print(table)
    else:
        console.print("[yellow]No report could be ranked.[/]")
    for s in report.skipped:
        console.print(f"[yellow]skipped[/] {s.source}: {s.reason}", markup=True, highlight=False)
