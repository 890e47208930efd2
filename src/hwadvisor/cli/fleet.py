"""`hwadvisor fleet`: rank many machines' saved reports for one workload.

The workload options are the shared ones (``_options.py``); the machines are the reports.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.cli._options import WORKLOAD, shared
from hwadvisor.errors import ExitCode, FactsError
from hwadvisor.models.workload import Scenario


@app.command()
@shared(WORKLOAD)
def fleet(
    reports: list[str] = typer.Argument(
        ...,
        metavar="REPORT.json|DIR|-...",
        help="Saved reports (`hwadvisor check --json --bench`) of the machines: files, "
        "folders (read recursively: *.json, *.jsonl) or - for JSON Lines on stdin.",
    ),
    scenario: Scenario = typer.Option(
        Scenario.TRAINING, "--scenario", "-s", help="What the job is."
    ),
    by: str = typer.Option(
        "time", "--by", help="Rank machines of equal status by time, cost or energy."
    ),
    prices: Path | None = wl.PRICES,
    price_per_hour: float | None = wl.PRICE_PER_HOUR,
    limit: int | None = typer.Option(
        None,
        "--limit",
        metavar="N",
        help="Terminal: show the top N groups of identical hardware (default 20).",
    ),
    show_all: bool = typer.Option(
        False, "--all", help="Terminal: show every group of identical hardware."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the ranking as JSON on stdout (every machine)."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON ranking to FILE (atomically)."
    ),
    **options: Any,
) -> None:
    """Rank saved reports from many machines for a workload (unreadable ones are skipped)."""
    from hwadvisor.cli._common import emit, workload_options
    from hwadvisor.export.gather import fleet_pricing, gather_fleet, read_reports
    from hwadvisor.models.fleet import FleetReport
    from hwadvisor.pipeline import workload_for

    shown = _shown(limit, show_all)
    workload = workload_for(scenario, workload_options(options))
    read = read_reports(reports)
    if not read[0]:
        # Nothing given could be read: bad input (exit 2), not an undetermined ranking.
        first = read[1][0]
        more = f" (and {len(read[1]) - 1} more)" if len(read[1]) > 1 else ""
        raise FactsError(f"no report could be read: {first.reason}{more}", where=first.source)
    result = gather_fleet(
        reports,
        workload,
        scenario=scenario.value,
        read=read,
        pricing=fleet_pricing(by, prices, price_per_hour),
    )

    def render(doc: FleetReport) -> None:
        from hwadvisor.render.fleet import render_fleet

        render_fleet(doc, limit=shown)

    for warning in result.warnings:
        sys.stderr.write(f"hwadvisor: warning: {warning}\n")
    emit(result, as_json=json_out, output=output, render=render)
    if not result.machines:
        # Every report was skipped: the ranking is undetermined (exit 3), not an empty success.
        sys.stderr.write("hwadvisor: error: no report could be ranked (see the skipped reasons)\n")
        raise typer.Exit(int(ExitCode.UNKNOWN))


def _shown(limit: int | None, show_all: bool) -> int | None:
    """The groups the table shows (None: all); a bad --limit is one line, exit 2."""
    from hwadvisor.errors import UsageError
    from hwadvisor.models import bounds
    from hwadvisor.render.fleet import DEFAULT_LIMIT

    if limit is not None and show_all:
        raise UsageError("--limit and --all cannot be combined: --all shows every group")
    if limit is not None and limit < 1:
        raise UsageError(f"--limit must be 1 or more, got {limit}")
    if limit is not None:
        bounds.check(bounds.FLEET_LIMIT, limit, "--limit", "groups")
    return None if show_all else (limit or DEFAULT_LIMIT)
