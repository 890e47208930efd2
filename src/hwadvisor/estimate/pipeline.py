"""What ``hwadvisor estimate`` does, as a plain function the CLI and tests call.

Gathers the inputs (the workload, this machine's facts, bench figures from a file or a
quick run), estimates, and optionally measures real steps of the user's model here.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwadvisor.errors import HwadvisorError, UsageError
from hwadvisor.estimate.report import DEFAULT_DEVICES, estimate_workload
from hwadvisor.estimate.workload import build_workload
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.estimate import EstimateReport
from hwadvisor.models.facts import Facts
from hwadvisor.models.finding import Finding
from hwadvisor.models.workload import Budget, Scenario, Task, Team, Workload


def parse_shape(text: str | None) -> list[int] | None:
    """``"3,224,224"`` -> [3, 224, 224]; anything else is one UsageError line."""
    if text is None:
        return None
    parts = [p.strip() for p in re.split(r"[,x]", text.strip())]
    try:
        dims = [int(p) for p in parts if p.isascii()]
        if len(dims) != len(parts):
            raise ValueError(text)
    except ValueError:
        raise UsageError(
            f"--input-shape must be integers separated by commas (e.g. 3,224,224), got {text!r}"
        ) from None
    if not dims or any(d <= 0 for d in dims):
        raise UsageError(f"--input-shape must be positive integers (e.g. 3,224,224), got {text!r}")
    return dims


def load_bench_file(path: Path) -> BenchReport:
    """A saved ``hwadvisor bench --json`` document, version-checked."""
    from hwadvisor.io import read_json_document
    from hwadvisor.models.common import validate_document

    data = read_json_document(path, what="bench report")
    return validate_document(BenchReport, data, where=str(path), what="bench report")


def probe_facts() -> Facts | None:
    """This machine's facts, or None when the probe is not available or fails."""
    try:
        from hwadvisor.probe import probe_machine

        facts: Facts = probe_machine()
        return facts
    except Exception:
        return None


def quick_bench(
    facts: Facts | None, progress: Callable[[str, float], None] | None
) -> tuple[BenchReport | None, str | None]:
    """The quick CPU microbenchmark, or None and the reason it could not run."""
    try:
        from hwadvisor.bench import run_bench

        return run_bench(facts=facts, device="cpu", quick=True, progress=progress), None
    except HwadvisorError as exc:
        return None, exc.message
    except ImportError as exc:
        return None, f"microbenchmark unavailable ({exc})"


def guidance_for(
    wl: Workload,
    *,
    facts: Facts | None,
    bench: BenchReport | None,
    scenario: Scenario,
    budget: Budget,
    team: Team | None,
    catalogs: list[Path] | None = None,
) -> list[Finding]:
    """The findings ``recommend`` would give for this workload, budget and team, here.

    ``facts`` is this machine's probe (None only when probing failed: the rules about the
    machine then have nothing to read and stay silent). ``bench`` is what the estimate
    used, if anything: guidance never runs a benchmark of its own.
    """
    from hwadvisor.pipeline import advise, estimate_for_advice

    machine = facts if facts is not None else Facts()
    estimates = estimate_for_advice(wl, facts=machine, bench=bench, extra_catalogs=catalogs)
    advice = advise(
        facts=machine,
        scenario=scenario,
        workload=wl,
        estimates=estimates,
        bench=bench,
        budget=budget,
        team=team,
    )
    return list(advice.findings)


def run_estimate(
    *,
    workload_args: dict[str, Any],
    on: list[str] | None,
    gpus: int,
    bench_file: Path | None,
    no_bench: bool,
    catalogs: list[Path] | None,
    measure: bool = False,
    progress: Callable[[str, float], None] | None = None,
    scenario: Scenario | None = None,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
) -> EstimateReport:
    """Build the workload, gather facts and bench figures when "here" is wanted, estimate,
    and add the guidance that applies (SPEC §1: budget, team experience)."""
    if bench_file is not None and no_bench:
        raise UsageError("--bench-file and --no-bench contradict each other")
    wl = build_workload(**workload_args, extra_catalogs=catalogs)
    devices = on or DEFAULT_DEVICES
    wants_here = any(d.lower() == "here" for d in devices)
    facts: Facts | None = None
    bench: BenchReport | None = None
    note: str | None = None
    if bench_file is not None:
        bench = load_bench_file(bench_file)
    if wants_here:
        facts = probe_facts()
        if bench is None and not no_bench:
            bench, note = quick_bench(facts, progress)
    report = estimate_workload(
        wl, facts=facts, bench=bench, on=devices, gpus=gpus, extra_catalogs=catalogs
    )
    if note:
        report = _add_here_note(report, f"no bench figures: {note}")
    if measure:
        from hwadvisor.estimate.measure import measure_here

        measured = measure_here(wl)
        report = report.model_copy(update={"estimates": [*report.estimates, measured]})
    scen = scenario or (Scenario.INFERENCE if wl.task is Task.INFER else Scenario.TRAINING)
    guidance = guidance_for(
        wl,
        facts=facts if wants_here else probe_facts(),
        bench=bench,
        scenario=scen,
        budget=budget,
        team=team,
        catalogs=catalogs,
    )
    return report.model_copy(
        update={"scenario": scen, "budget": budget, "team": team, "guidance": guidance}
    )


def _add_here_note(report: EstimateReport, note: str) -> EstimateReport:
    out = []
    for est in report.estimates:
        if est.device == "here":
            est = est.model_copy(update={"assumptions": [*est.assumptions, note]})
        out.append(est)
    return report.model_copy(update={"estimates": out})


__all__ = ["guidance_for", "load_bench_file", "parse_shape", "probe_facts", "run_estimate"]
