"""`hwadvisor fleet`: rank many machines' saved reports for one workload."""

from __future__ import annotations

import sys

import typer

from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode, UsageError
from hwadvisor.models.workload import Scenario

#: Scenarios whose default task is inference.
_INFER_SCENARIOS = {Scenario.INFERENCE, Scenario.EDGE}


def _shape(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(p) for p in text.split(",")]
    except ValueError as exc:
        raise UsageError(f"--input-shape must be integers such as 3,224,224, not {text!r}") from exc


@app.command()
def fleet(
    reports: list[str] = typer.Argument(
        ...,
        metavar="REPORT.json...",
        help="Saved reports (`hwadvisor check --json --bench`) of the machines.",
    ),
    scenario: Scenario = typer.Option(Scenario.TRAINING, "--scenario", help="What the job is."),
    model: str | None = typer.Option(
        None, "--model", help="Catalog model, module:callable or file.py:callable."
    ),
    params: int | None = typer.Option(None, "--params", help="Parameter count (without --model)."),
    flops_per_sample: float | None = typer.Option(
        None, "--flops-per-sample", help="Forward FLOPs per sample."
    ),
    batch_size: int | None = typer.Option(None, "--batch-size"),
    dataset_size: int | None = typer.Option(
        None, "--dataset-size", help="Samples per epoch (training time needs it)."
    ),
    epochs: float | None = typer.Option(None, "--epochs"),
    seq_len: int | None = typer.Option(None, "--seq-len"),
    input_shape: str | None = typer.Option(None, "--input-shape", help="C,H,W"),
    precision: str | None = typer.Option(
        None, "--precision", help="fp32, amp, bf16, fp16 or int8."
    ),
    optimizer: str | None = typer.Option(None, "--optimizer", help="adamw or sgd."),
    task: str | None = typer.Option(
        None, "--task", help="train or infer (default from the scenario)."
    ),
    qps: float | None = typer.Option(
        None, "--qps", help="Inference: requests per second to sustain."
    ),
    latency_ms: float | None = typer.Option(
        None, "--latency-ms", help="Inference: latency target per batch."
    ),
    deadline: float | None = typer.Option(
        None, "--deadline", help="Training: hours the job may take (default 24)."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the ranking as JSON on stdout."),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON ranking to FILE (atomically)."
    ),
) -> None:
    """Rank saved reports from many machines for a workload (unreadable ones are skipped)."""
    from hwadvisor.cli._common import emit
    from hwadvisor.estimate import build_workload
    from hwadvisor.export.fleet import FleetReport
    from hwadvisor.export.gather import gather_fleet

    workload = build_workload(
        model=model,
        params=params,
        flops_per_sample=flops_per_sample,
        seq_len=seq_len,
        input_shape=_shape(input_shape),
        batch_size=batch_size,
        dataset_size=dataset_size,
        epochs=epochs,
        precision=precision,
        optimizer=optimizer,
        task=task or ("infer" if scenario in _INFER_SCENARIOS else "train"),
        qps=qps,
        latency_ms=latency_ms,
        deadline_hours=deadline,
    )
    result = gather_fleet(reports, workload, scenario=scenario.value)

    def render(doc: FleetReport) -> None:
        from hwadvisor.render.fleet import render_fleet

        render_fleet(doc)

    emit(result, as_json=json_out, output=output, render=render)
    if not result.machines:
        # Every report was skipped: the ranking is undetermined (exit 3), not an empty success.
        sys.stderr.write("hwadvisor: error: no report could be ranked (see the skipped reasons)\n")
        raise typer.Exit(int(ExitCode.UNKNOWN))
