"""`hwadvisor bench`: microbenchmarks on each detected device.

The time budget is ``--seconds``; ``--budget`` is the same option under its first name,
kept working (``recommend --budget`` is something else: low, normal or high).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from hwadvisor.models.bench import BenchReport


@app.command()
def bench(
    device: str = typer.Option(
        "all",
        "--device",
        "-d",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (every detected device).",
    ),
    seconds: float | None = typer.Option(
        None,
        "--seconds",
        help="Time budget in seconds, torch's import included (default 10 s CPU-only, +6 s "
        "per GPU); a shorter one measures fewer, smaller figures.",
    ),
    budget: float | None = typer.Option(
        None,
        "--budget",
        help="The same as --seconds (an older name, kept working); not recommend's low/normal/high.",
    ),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="A 3 s budget (+2 s per GPU), torch's import included: the figures the "
        "estimates use most, as many as fit.",
    ),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="List every figure (each size), and a chart by dtype."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the bench document as JSON on stdout."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON document to FILE (atomically)."
    ),
    html: str | None = wl.HTML,
) -> None:
    """Measure matmul, conv2d, memory bandwidth and per-operator cost (and host<->GPU
    copies) with torch, within a time budget."""
    from functools import partial

    from hwadvisor.cli._common import emit
    from hwadvisor.pipeline import bench_here
    from hwadvisor.render.html import require_for
    from hwadvisor.render.html_guard import write_html
    from hwadvisor.render.progress import progress_callback

    if seconds is not None and budget is not None:
        raise UsageError("--seconds and --budget are the same option; give one")
    require_for(html)
    report = bench_here(
        device=device,
        seconds=budget if seconds is None else seconds,
        quick=quick,
        progress=partial(progress_callback, enabled=sys.stderr.isatty()),
        option="--budget" if budget is not None else "--seconds",
    )

    def render(doc: BenchReport) -> None:
        from hwadvisor.render.bench import render_bench

        render_bench(doc, verbose=verbose)

    # --output, then --html, then stdout (see emit)
    emit(
        report,
        as_json=json_out,
        output=output,
        render=render,
        then=partial(write_html, html, report),
    )
    if report.interrupted:
        sys.stderr.write("hwadvisor: interrupted: the figures measured so far were reported\n")
        raise typer.Exit(int(ExitCode.INTERRUPTED))
