"""`hwadvisor recommend`: probe (or load) a machine, measure, estimate, apply the rules.

The options go to :func:`hwadvisor.pipeline.recommend`, which gathers the inputs and
runs the stages; this module prints the advice and picks the exit code: for
``--require-fit`` SPEC §4's 0 fits, 1 does not, 3 cannot tell.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode
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

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice


@app.command()
def recommend(
    scenario: Scenario = typer.Option(
        ...,
        "--scenario",
        "-s",
        help="prototyping, training, distributed, inference, edge or preprocessing.",
    ),
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
    qps: float | None = wl.QPS,
    latency_ms: float | None = wl.LATENCY_MS,
    deadline: float | None = wl.DEADLINE,
    prices: Path | None = wl.PRICES,
    price_per_hour: float | None = wl.PRICE_PER_HOUR,
    purchase_usd: float | None = wl.PURCHASE_USD,
    years: float | None = wl.YEARS,
    electricity_usd_kwh: float | None = wl.ELECTRICITY,
    method: FinetuneMethod | None = wl.METHOD,
    lora_rank: int | None = wl.LORA_RANK,
    lora_targets: LoraTargets | None = wl.LORA_TARGETS,
    quant: Quant | None = wl.QUANT,
    context: int | None = wl.CONTEXT,
    prompt_tokens: int | None = wl.PROMPT_TOKENS,
    output_tokens: int | None = wl.OUTPUT_TOKENS,
    concurrency: int | None = wl.CONCURRENCY,
    engine: ServingEngine | None = wl.ENGINE,
    task: Task | None = wl.TASK,
    budget: Budget = typer.Option(Budget.NORMAL, "--budget", help="low, normal or high."),
    team: Team | None = typer.Option(None, "--team", help="new, experienced or cluster."),
    facts_file: str | None = typer.Option(
        None, "--facts", help="Advise for the machine in this saved `check --json` file."
    ),
    bench_file: str | None = typer.Option(
        None, "--bench-file", help="Use these saved `bench --json` figures."
    ),
    no_bench: bool = typer.Option(
        False,
        "--no-bench",
        help="Do not run the microbenchmark (figures in a --facts file are still used).",
    ),
    rules_dirs: list[str] | None = typer.Option(
        None, "--rules", help="Extra rules folder; overrides shipped rules by id (repeatable)."
    ),
    require_fit: bool = typer.Option(
        False, "--require-fit", help="Exit 1 when this machine does not fit, 3 when unknown."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the advice document as JSON on stdout."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON advice to FILE (atomically)."
    ),
    html: str | None = typer.Option(
        None, "--html", help="Also write a self-contained HTML report with charts to FILE."
    ),
) -> None:
    """Recommend CPU, GPU or multi-GPU for a workload, with the evidence and the reasons."""
    options = dict(locals())
    from functools import partial

    from hwadvisor.cli._common import emit, pricing_options, warn_stale, workload_options
    from hwadvisor.pipeline import recommend as recommend_advice
    from hwadvisor.render.html import require_for, write_report
    from hwadvisor.render.progress import progress_callback

    require_for(html)
    result = recommend_advice(
        scenario=scenario,
        workload=workload_options(options),
        budget=budget,
        team=team,
        facts_file=facts_file,
        bench_file=bench_file,
        no_bench=no_bench,
        rules_dirs=rules_dirs,
        pricing=pricing_options(options),
        progress=partial(progress_callback, enabled=sys.stderr.isatty()),
    )
    for note in result.notes:
        sys.stderr.write(f"hwadvisor: note: {note}\n")
    advice = result.advice
    here = advice.estimates.here
    warn_stale([here.cost if here else None, *(a.cost for a in advice.estimates.alternatives)])

    def render(doc: Advice) -> None:
        from hwadvisor.render.advice import render_advice

        render_advice(doc)

    emit(advice, as_json=json_out, output=output, render=render)
    write_report(html, advice)
    if result.interrupted:
        # Ctrl-C during the benchmark: the advice used the figures measured so far.
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if require_fit:
        fits = advice.verdict.fits_here
        code = ExitCode.OK if fits else ExitCode.UNKNOWN if fits is None else ExitCode.GATE_FAILED
        if code is not ExitCode.OK:
            sys.stderr.write(
                f"hwadvisor: --require-fit: {'cannot tell whether' if fits is None else 'does not'} fit here: "
                f"{'; '.join(advice.verdict.fits_reasons)}\n"
            )
        raise typer.Exit(int(code))
