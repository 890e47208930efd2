"""`hwadvisor estimate`: time and memory of a workload here and on catalog devices.

The workload, machine, guidance and pricing options are the shared ones (``_options.py``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.cli._options import GUIDANCE, MACHINE, PRICING, WORKLOAD, shared
from hwadvisor.models.workload import Scenario


@app.command()
@shared(WORKLOAD, MACHINE, GUIDANCE, PRICING)
def estimate(
    on: list[str] | None = typer.Option(
        None,
        "--on",
        help="'here', a catalog device id or an instance type (p4d.24xlarge, ecs.gn6i-c4g1.xlarge); repeat for several (default: here and a spread of GPUs).",
    ),
    gpus: int = typer.Option(1, "--gpus", help="GPUs per catalog GPU device (data parallel)."),
    catalog: list[Path] | None = wl.CATALOG,
    measure: bool = typer.Option(
        False, "--measure", help="Also run a few real steps of your model here."
    ),
    scenario: Scenario | None = typer.Option(
        None,
        "--scenario",
        "-s",
        help="Scenario for the guidance (default: inference or training, from the task).",
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the estimate document as JSON on stdout."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON document to FILE."
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Repeat every assumption for every device."
    ),
    html: str | None = wl.HTML,
    **options: Any,
) -> None:
    """Estimate time per step, total time and memory fit here and on catalog devices."""
    from functools import partial

    from hwadvisor.cli._common import (
        emit,
        pricing_options,
        progress_bar,
        warn_stale,
        workload_options,
    )
    from hwadvisor.models.estimate import EstimateReport
    from hwadvisor.pipeline import estimate as run_estimate
    from hwadvisor.render.html import require_for
    from hwadvisor.render.html_guard import write_html

    require_for(html)
    report = run_estimate(
        workload=workload_options(options),
        on=on or None,
        gpus=gpus,
        bench_file=options["bench_file"],
        no_bench=options["no_bench"],
        facts_file=options["facts_file"],
        catalogs=catalog or None,
        measure=measure,
        progress=progress_bar(not json_out),
        scenario=scenario,
        budget=options["budget"],
        team=options["team"],
        pricing=pricing_options(options),
    )

    def render(doc: EstimateReport) -> None:
        from hwadvisor.render.estimate import render_estimate

        render_estimate(doc, verbose=verbose)

    # --output, then --html, then stdout (see emit)
    emit(
        report,
        as_json=json_out,
        output=output,
        render=render,
        then=partial(write_html, html, report),
    )
    # After the output is written: a failed write stays one line, a closed pipe quiet.
    warn_stale(e.cost for e in report.estimates)
