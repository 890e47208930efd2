"""`hwadvisor estimate`: time and memory of a workload here and on catalog devices (SPEC §6)."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.models.workload import (
    Budget,
    FinetuneMethod,
    LoraTargets,
    Optimizer,
    Precision,
    Quant,
    Scenario,
    ServingEngine,
    Task,
    Team,
)


@app.command()
def estimate(
    model: str | None = wl.MODEL,
    task: Task | None = wl.TASK,
    batch_size: int | None = wl.BATCH_SIZE,
    precision: Precision | None = wl.PRECISION,
    optimizer: Optimizer | None = wl.OPTIMIZER,
    dataset_size: int | None = wl.DATASET_SIZE,
    epochs: float | None = wl.EPOCHS,
    seq_len: int | None = wl.SEQ_LEN,
    input_shape: wl.Shape | None = wl.INPUT_SHAPE,
    params: int | None = wl.PARAMS,
    flops_per_sample: float | None = wl.FLOPS_PER_SAMPLE,
    method: FinetuneMethod | None = wl.METHOD,
    lora_rank: int | None = wl.LORA_RANK,
    lora_targets: LoraTargets | None = wl.LORA_TARGETS,
    quant: Quant | None = wl.QUANT,
    context: int | None = wl.CONTEXT,
    prompt_tokens: int | None = wl.PROMPT_TOKENS,
    output_tokens: int | None = wl.OUTPUT_TOKENS,
    concurrency: int | None = wl.CONCURRENCY,
    engine: ServingEngine | None = wl.ENGINE,
    on: list[str] | None = typer.Option(
        None,
        "--on",
        help="'here', a catalog device id or an instance type (p4d.24xlarge, ecs.gn6i-c4g1.xlarge); repeat for several (default: here and a spread of GPUs).",
    ),
    gpus: int = typer.Option(1, "--gpus", help="GPUs per catalog GPU device (data parallel)."),
    bench_file: Path | None = typer.Option(
        None, "--bench-file", help="Use a saved `hwadvisor bench --json`."
    ),
    no_bench: bool = typer.Option(False, "--no-bench", help="Do not run the quick microbenchmark."),
    catalog: list[Path] | None = wl.CATALOG,
    qps: float | None = wl.QPS,
    latency_ms: float | None = wl.LATENCY_MS,
    deadline: float | None = wl.DEADLINE,
    prices: Path | None = wl.PRICES,
    price_per_hour: float | None = wl.PRICE_PER_HOUR,
    purchase_usd: float | None = wl.PURCHASE_USD,
    years: float | None = wl.YEARS,
    electricity_usd_kwh: float | None = wl.ELECTRICITY,
    measure: bool = typer.Option(
        False, "--measure", help="Also run a few real steps of your model here."
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
    scenario: Scenario | None = typer.Option(
        None,
        "--scenario",
        help="Scenario for the guidance (default: inference or training, from the task).",
    ),
    budget: Budget = typer.Option(
        Budget.NORMAL, "--budget", help="low, normal or high: for the guidance."
    ),
    team: Team | None = typer.Option(
        None, "--team", help="new, experienced or cluster: for the guidance."
    ),
    html: str | None = typer.Option(
        None, "--html", help="Also write a self-contained HTML report with charts to FILE."
    ),
) -> None:
    """Estimate time per step, total time and memory fit here and on catalog devices."""
    options = dict(locals())
    from functools import partial

    from hwadvisor.cli._common import emit, pricing_options, warn_stale, workload_options
    from hwadvisor.models.estimate import EstimateReport
    from hwadvisor.pipeline import estimate as run_estimate
    from hwadvisor.render.html import require_for, write_report
    from hwadvisor.render.progress import progress_callback

    require_for(html)
    report = run_estimate(
        workload=workload_options(options),
        on=on or None,
        gpus=gpus,
        bench_file=bench_file,
        no_bench=no_bench,
        catalogs=catalog or None,
        measure=measure,
        progress=partial(progress_callback, enabled=sys.stderr.isatty() and not json_out),
        scenario=scenario,
        budget=budget,
        team=team,
        pricing=pricing_options(options),
    )
    warn_stale(e.cost for e in report.estimates)

    def render(doc: EstimateReport) -> None:
        from hwadvisor.render.estimate import render_estimate

        render_estimate(doc, verbose=verbose)

    emit(report, as_json=json_out, output=output, render=render)
    write_report(html, report)
