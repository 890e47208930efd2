"""`hwadvisor check`: probe the machine and print its facts."""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import typer

from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode, MissingDependencyError, UsageError

if TYPE_CHECKING:
    from hwadvisor.models.facts import Facts


def _with_bench(facts: Facts, budget: float | None) -> tuple[Facts, bool]:
    """Add the quick microbenchmark to ``facts``; without torch, mark the probe absent."""
    from hwadvisor.models.common import ProbeRecord, ProbeStatus

    try:
        from hwadvisor.bench import run_bench
        from hwadvisor.render.progress import progress_callback

        with progress_callback(enabled=sys.stderr.isatty()) as progress:
            report = run_bench(
                facts=facts, device="all", budget_s=budget, quick=budget is None, progress=progress
            )
    except MissingDependencyError as exc:
        # Not installed is "absent"; installed but failing to import is an "error".
        broken = exc.__cause__ is not None and not isinstance(exc.__cause__, ModuleNotFoundError)
        record = ProbeRecord(
            name="bench",
            status=ProbeStatus.ERROR if broken else ProbeStatus.ABSENT,
            source="torch",
            error=exc.message,
        )
        return facts.model_copy(update={"probes": [*facts.probes, record]}), False
    record = ProbeRecord(
        name="bench",
        status=ProbeStatus.ERROR if report.interrupted else ProbeStatus.OK,
        source="torch.utils.benchmark",
        elapsed_ms=round(report.elapsed_s * 1000, 1),
        error="interrupted" if report.interrupted else None,
    )
    updated = facts.model_copy(update={"bench": report, "probes": [*facts.probes, record]})
    return updated, report.interrupted


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
    from hwadvisor.cli._common import emit
    from hwadvisor.probe import probe_machine

    if not math.isfinite(timeout) or timeout <= 0:
        raise UsageError(f"--timeout must be a positive number of seconds, not {timeout}")
    if bench_budget is not None:
        from hwadvisor.bench.runner import check_budget

        check_budget(bench_budget, "--bench-budget")
    facts = probe_machine(timeout=timeout)
    interrupted = False
    if bench:
        facts, interrupted = _with_bench(facts, bench_budget)

    def render(doc: Facts) -> None:
        from hwadvisor.render.check import render_facts

        render_facts(doc)

    emit(facts, as_json=json_out, output=output, render=render)
    if interrupted:
        raise typer.Exit(int(ExitCode.INTERRUPTED))
