"""`hwadvisor bench`: microbenchmarks on each detected device (SPEC §5)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode

if TYPE_CHECKING:
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.facts import Facts


def _facts() -> Facts | None:
    """The probe's facts for peaks, usable cores and cache sizes; None if the probe fails.

    The benchmark still runs without them (efficiencies are then unknown), so a probe
    failure must not stop it.
    """
    try:
        from hwadvisor.probe import probe_machine

        return probe_machine()
    except Exception:
        return None


@app.command()
def bench(
    device: str = typer.Option(
        "all",
        "--device",
        "-d",
        help="cpu, cuda, cuda:N, mps, xpu, xpu:N, or all (every detected device).",
    ),
    budget: float | None = typer.Option(
        None,
        "--budget",
        help="Time budget in seconds, torch's import included (default 7.5 s CPU-only, +6 s per GPU: about 10 s in all).",
    ),
    quick: bool = typer.Option(
        False, "--quick", help="About 3 s: only the figures the advice uses most."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the bench document as JSON on stdout."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON document to FILE (atomically)."
    ),
) -> None:
    """Measure matmul, conv2d and memory bandwidth (and host<->GPU copies) with torch."""
    from hwadvisor.bench import run_bench
    from hwadvisor.bench.devices import parse_device
    from hwadvisor.bench.runner import check_budget, require_torch
    from hwadvisor.cli._common import emit
    from hwadvisor.render.progress import progress_callback

    # Bad input and a missing torch are reported before the probe spends any time.
    check_budget(budget)
    parse_device(device)
    require_torch()
    facts = _facts()
    with progress_callback(enabled=sys.stderr.isatty()) as progress:
        report = run_bench(
            facts=facts, device=device, budget_s=budget, quick=quick, progress=progress
        )

    def render(doc: BenchReport) -> None:
        from hwadvisor.render.bench import render_bench

        render_bench(doc)

    emit(report, as_json=json_out, output=output, render=render)
    if report.interrupted:
        sys.stderr.write("hwadvisor: interrupted: the figures measured so far were reported\n")
        raise typer.Exit(int(ExitCode.INTERRUPTED))
