"""`hwadvisor fleet`: rank many machines' saved reports for one workload."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode, FactsError
from hwadvisor.models.workload import (
    FinetuneMethod,
    LoraTargets,
    Optimizer,
    Precision,
    Quant,
    Scenario,
    ServingEngine,
    Task,
)


@app.command()
def fleet(
    reports: list[str] = typer.Argument(
        ...,
        metavar="REPORT.json|DIR|-...",
        help="Saved reports (`hwadvisor check --json --bench`) of the machines: files, "
        "folders (read recursively: *.json, *.jsonl) or - for JSON Lines on stdin.",
    ),
    scenario: Scenario = typer.Option(Scenario.TRAINING, "--scenario", help="What the job is."),
    model: str | None = wl.MODEL,
    params: int | None = wl.PARAMS,
    flops_per_sample: float | None = wl.FLOPS_PER_SAMPLE,
    batch_size: int | None = wl.BATCH_SIZE,
    dataset_size: int | None = wl.DATASET_SIZE,
    epochs: float | None = wl.EPOCHS,
    seq_len: int | None = wl.SEQ_LEN,
    input_shape: wl.Shape | None = wl.INPUT_SHAPE,
    precision: Precision | None = wl.PRECISION,
    optimizer: Optimizer | None = wl.OPTIMIZER,
    task: Task | None = wl.TASK,
    qps: float | None = wl.QPS,
    latency_ms: float | None = wl.LATENCY_MS,
    deadline: float | None = wl.DEADLINE,
    method: FinetuneMethod | None = wl.METHOD,
    lora_rank: int | None = wl.LORA_RANK,
    lora_targets: LoraTargets | None = wl.LORA_TARGETS,
    quant: Quant | None = wl.QUANT,
    context: int | None = wl.CONTEXT,
    prompt_tokens: int | None = wl.PROMPT_TOKENS,
    output_tokens: int | None = wl.OUTPUT_TOKENS,
    concurrency: int | None = wl.CONCURRENCY,
    engine: ServingEngine | None = wl.ENGINE,
    json_out: bool = typer.Option(False, "--json", help="Print the ranking as JSON on stdout."),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON ranking to FILE (atomically)."
    ),
    by: str = typer.Option(
        "time", "--by", help="Rank machines of equal status by time, cost or energy."
    ),
    prices: Path | None = wl.PRICES,
    price_per_hour: float | None = wl.PRICE_PER_HOUR,
) -> None:
    """Rank saved reports from many machines for a workload (unreadable ones are skipped)."""
    options = dict(locals())
    from hwadvisor.cli._common import emit, workload_options
    from hwadvisor.export.fleet import FleetReport
    from hwadvisor.export.gather import fleet_pricing, gather_fleet, read_reports
    from hwadvisor.pipeline import workload_for

    workload = workload_for(scenario, **workload_options(options))
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
        **fleet_pricing(by, prices, price_per_hour),
    )

    def render(doc: FleetReport) -> None:
        from hwadvisor.render.fleet import render_fleet

        render_fleet(doc)

    for warning in result.warnings:
        sys.stderr.write(f"hwadvisor: warning: {warning}\n")
    emit(result, as_json=json_out, output=output, render=render)
    if not result.machines:
        # Every report was skipped: the ranking is undetermined (exit 3), not an empty success.
        sys.stderr.write("hwadvisor: error: no report could be ranked (see the skipped reasons)\n")
        raise typer.Exit(int(ExitCode.UNKNOWN))
