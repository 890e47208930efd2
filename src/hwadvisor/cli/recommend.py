"""`hwadvisor recommend`: probe (or load) a machine, measure, estimate, apply the rules.

The command gathers the inputs (facts, bench figures, workload, estimates, rules) and
hands them to :func:`hwadvisor.pipeline.advise`, which is pure; exit codes for
``--require-fit`` follow SPEC §4 (0 fits, 1 does not, 3 cannot tell).
"""

from __future__ import annotations

import math
import sys
from typing import TYPE_CHECKING

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.errors import ExitCode, MissingDependencyError, UsageError
from hwadvisor.models.workload import Budget, Scenario, Team

if TYPE_CHECKING:
    from hwadvisor.engine import RuleSet
    from hwadvisor.models.advice import Advice
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.workload import Workload

#: Scenarios whose job is inference rather than training.
INFER_SCENARIOS = frozenset({Scenario.INFERENCE, Scenario.EDGE})


def load_facts(path: str) -> Facts:
    """A saved facts document (``check --json``), version-checked and validated."""
    from hwadvisor.io import read_json_document
    from hwadvisor.models.facts import validate_facts

    return validate_facts(read_json_document(path, what="facts"), where=path)


def load_bench(path: str) -> BenchReport:
    """A saved bench document (``bench --json``), version-checked and validated."""
    from hwadvisor.io import read_json_document
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.common import validate_document

    return validate_document(
        BenchReport, read_json_document(path, what="bench report"), where=path, what="bench report"
    )


def measure_here(facts: Facts) -> BenchReport | None:
    """The quick CPU microbenchmark, or None (with a note on stderr) without torch."""
    try:
        from hwadvisor.bench import run_bench
        from hwadvisor.render.progress import progress_callback

        with progress_callback(enabled=sys.stderr.isatty()) as progress:
            return run_bench(facts=facts, device="cpu", quick=True, progress=progress)
    except MissingDependencyError as exc:
        sys.stderr.write(
            f"hwadvisor: note: no microbenchmark ({exc.message}); estimates use theoretical peaks\n"
        )
        return None


def _shape(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return [int(p) for p in text.split(",")]
    except ValueError as exc:
        raise UsageError(f"--input-shape must be integers such as 3,224,224, not {text!r}") from exc


def _positive(name: str, value: float | None) -> None:
    if value is not None and (not math.isfinite(value) or value <= 0):
        raise UsageError(f"{name} must be a positive number, not {value}")


def gather_rules(rules_dirs: list[str] | None) -> RuleSet:
    """The shipped rules, then HWADVISOR_RULES_PATH, then each ``--rules`` folder."""
    from hwadvisor.engine import load_rules

    return load_rules(rules_dirs or [])


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
    input_shape: str | None = wl.INPUT_SHAPE,
    precision: str | None = wl.PRECISION,
    optimizer: str | None = wl.OPTIMIZER,
    qps: float | None = wl.QPS,
    latency_ms: float | None = wl.LATENCY_MS,
    deadline: float | None = wl.DEADLINE,
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
) -> None:
    """Recommend CPU, GPU or multi-GPU for a workload, with the evidence and the reasons."""
    from hwadvisor.cli._common import emit

    if bench_file and no_bench:
        raise UsageError("--bench-file and --no-bench contradict each other; give one")
    for name, value in (
        ("--qps", qps),
        ("--latency-ms", latency_ms),
        ("--deadline", deadline),
        ("--epochs", epochs),
    ):
        _positive(name, value)
    rules = gather_rules(rules_dirs)
    facts = load_facts(facts_file) if facts_file else _probe()
    # The workload first: a bad --model fails before the benchmark spends its budget.
    workload = build_workload_from(
        scenario,
        model=model,
        params=params,
        flops_per_sample=flops_per_sample,
        batch_size=batch_size,
        dataset_size=dataset_size,
        epochs=epochs,
        seq_len=seq_len,
        input_shape=_shape(input_shape),
        precision=precision,
        optimizer=optimizer,
        qps=qps,
        latency_ms=latency_ms,
        deadline=deadline,
    )
    bench = load_bench(bench_file) if bench_file else facts.bench
    measured = False
    if bench is None and not no_bench and not facts_file:
        # Measure only the machine we are on: a --facts file describes another one.
        bench, measured = measure_here(facts), True
    advice = run_advice(
        facts, scenario, workload, bench, rules, budget=budget, team=team, facts_file=facts_file
    )

    def render(doc: Advice) -> None:
        from hwadvisor.render.advice import render_advice

        render_advice(doc)

    emit(advice, as_json=json_out, output=output, render=render)
    if measured and bench is not None and bench.interrupted:
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


def _probe() -> Facts:
    from hwadvisor.probe import probe_machine

    return probe_machine()


def build_workload_from(
    scenario: Scenario, *, deadline: float | None = None, **options: object
) -> Workload:
    """The workload from the command-line options, its task following the scenario."""
    from hwadvisor.estimate import build_workload

    task = "infer" if scenario in INFER_SCENARIOS else "train"
    return build_workload(task=task, deadline_hours=deadline, **options)  # type: ignore[arg-type]


def run_advice(
    facts: Facts,
    scenario: Scenario,
    workload: Workload,
    bench: BenchReport | None,
    rules: RuleSet,
    *,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
    facts_file: str | None = None,
) -> Advice:
    """Estimate the workload, then advise (the pure step) with everything gathered."""
    from hwadvisor.pipeline import advise, estimate_for_advice

    estimates = estimate_for_advice(workload, facts=facts, bench=bench)
    return advise(
        facts=facts,
        scenario=scenario,
        workload=workload,
        estimates=estimates,
        bench=bench,
        rules=rules,
        budget=budget,
        team=team,
        facts_file=facts_file,
    )
