"""`hwadvisor check`: probe the machine and print its facts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import typer

from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from hwadvisor.models.facts import Facts


@app.command()
def check(
    json_out: bool = typer.Option(
        False, "--json", help="Print the facts document as JSON on stdout."
    ),
    bench: bool = typer.Option(
        False, "--bench", help="Also run the quick microbenchmark (needs torch)."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON document to FILE (atomically)."
    ),
    timeout: float = typer.Option(
        10.0, "--timeout", help="Deadline in seconds for driver queries (NVML)."
    ),
    bench_budget: float | None = typer.Option(
        None, "--bench-budget", help="Time budget in seconds for --bench."
    ),
) -> None:
    """Probe CPU, memory, GPUs and the software stack (fast: no torch import)."""
    from hwadvisor.cli._common import emit, progress_bar
    from hwadvisor.pipeline import check_here

    if not math.isfinite(timeout) or timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout}")
    if bench_budget is not None:
        from hwadvisor.bench.runner import check_budget

        check_budget(bench_budget, "--bench-budget")
    checked = check_here(
        timeout=timeout,
        bench=bench,
        bench_seconds=bench_budget,
        progress=progress_bar(),
    )

    def render(doc: Facts) -> None:
        from hwadvisor.render.check import render_facts

        render_facts(doc)

    emit(checked.facts, as_json=json_out, output=output, render=render)
    if checked.interrupted:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
