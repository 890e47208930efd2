"""One function per command that gathers inputs and runs the stages: what the CLI calls.

Each function takes the command's options as plain values, reads or probes what it needs
(:mod:`~hwadvisor.pipeline.inputs`), hands the models to the pure stages (the estimator,
:func:`~hwadvisor.pipeline.advice.advise`) and returns the document with what the CLI
needs to pick its exit code. None of them prints or exits: that is the CLI's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.errors import UsageError
from hwadvisor.models.options import PricingOptions, RunOptions, WorkloadOptions
from hwadvisor.models.workload import Budget, Scenario, Team
from hwadvisor.pipeline.advice import (
    advise,
    estimate_for_advice,
    explain_in_context,
    rule_context,
)
from hwadvisor.pipeline.inputs import (
    ProgressScope,
    bench_into_facts,
    load_bench,
    load_facts,
    load_rules,
    no_progress,
    probe_here,
    probe_or_none,
    quick_bench,
    scenario_for,
    workload_for,
)
from hwadvisor.pipeline.pricing import (
    Pricing,
    explain_with_prices,
    instance_estimates,
    price_for_advice,
    price_report,
    pricing_from,
    split_on,
)
from hwadvisor.pipeline.rows import Rows

if TYPE_CHECKING:
    from hwadvisor.engine import Explanation
    from hwadvisor.models.advice import Advice
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.estimate import EstimateReport
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.finding import Finding
    from hwadvisor.models.workload import Workload

#: The note a command gives when the microbenchmark could not run.
NO_BENCH_NOTE = "no microbenchmark ({}); estimates use theoretical peaks"
#: ``estimate`` with nothing to estimate.
NO_WORKLOAD = (
    "nothing to estimate: give --model (a catalog model, module:callable or a language "
    "model), or --params and/or --flops-per-sample"
)


def _refuse_both(bench_file: object, no_bench: bool) -> None:
    if bench_file and no_bench:
        raise UsageError("--bench-file and --no-bench contradict each other; give one")


@dataclass(frozen=True)
class Checked:
    """``check``: the facts, and whether Ctrl-C stopped the benchmark added to them."""

    facts: Facts
    interrupted: bool = False


def check_here(
    *,
    timeout: float,
    bench: bool = False,
    bench_seconds: float | None = None,
    progress: ProgressScope = no_progress,
) -> Checked:
    """Probe this machine; with ``bench``, add the microbenchmark (quick unless timed)."""
    facts = probe_here(timeout=timeout)
    if not bench:
        return Checked(facts)
    facts, interrupted = bench_into_facts(facts, bench_seconds, progress)
    return Checked(facts, interrupted)


def bench_here(
    *,
    device: str = "all",
    seconds: float | None = None,
    quick: bool = False,
    progress: ProgressScope = no_progress,
    option: str = "--seconds",
) -> BenchReport:
    """Microbenchmark ``device`` here within ``seconds`` (``bench``).

    Bad values and a missing torch are refused before the probe spends any time;
    ``option`` names the time option in that message. The probe's facts give the
    peaks and cache sizes; when it fails, the benchmark runs without them.
    """
    from hwadvisor.bench import run_bench
    from hwadvisor.bench.devices import parse_device
    from hwadvisor.bench.runner import check_budget, require_torch

    check_budget(seconds, option)
    parse_device(device)
    require_torch()
    facts = probe_or_none()
    with progress() as bar:
        return run_bench(facts=facts, device=device, budget_s=seconds, quick=quick, progress=bar)


@dataclass(frozen=True)
class Recommended:
    """``recommend``: the advice, and what the CLI says beside it."""

    advice: Advice
    #: Ctrl-C stopped the benchmark run for this advice (it used the figures so far).
    interrupted: bool = False
    #: Lines for stderr (a microbenchmark that could not run).
    notes: list[str] = field(default_factory=list)


def recommend(
    *,
    scenario: Scenario,
    options: RunOptions | None = None,
    progress: ProgressScope = no_progress,
) -> Recommended:
    """Advise for this machine (or the one in ``options.facts_file``) and a workload.

    The task follows the scenario unless the workload options name one. Rules, prices
    and the workload are checked before the benchmark spends its time, and only the
    machine we are on is measured (a facts file describes another).
    """
    run_options = options or RunOptions()
    _refuse_both(run_options.bench_file, run_options.no_bench)
    priced = pricing_from(run_options.pricing, None)
    rules = load_rules(run_options.rules_dirs)
    run = _gather(scenario, run_options, progress, priced)
    advice = advise(
        facts=run.facts,
        scenario=scenario,
        workload=run.workload,
        estimates=run.estimates,
        bench=run.measured.report,
        rules=rules,
        budget=run_options.budget,
        team=run_options.team,
        facts_file=run_options.facts_file,
    )
    return Recommended(advice, run.measured.interrupted, run.measured.notes)


@dataclass(frozen=True)
class _Measured:
    """The bench figures the advice uses, the notes about them, and whether Ctrl-C cut
    the benchmark short."""

    report: BenchReport | None
    notes: list[str]
    interrupted: bool


@dataclass(frozen=True)
class _Gathered:
    """What ``recommend`` and ``rules explain`` gather the same way: the facts, the
    workload, the bench figures and the priced estimates."""

    facts: Facts
    workload: Workload
    measured: _Measured
    estimates: EstimateReport | None


def _gather(
    scenario: Scenario, options: RunOptions, progress: ProgressScope, priced: Pricing
) -> _Gathered:
    """The facts (read from ``options.facts_file``, else probed here), the workload, the
    bench figures (:func:`_bench_for`) and the estimates priced for the budget."""
    facts_file = options.facts_file
    facts = load_facts(facts_file) if facts_file else probe_here()
    wl = workload_for(scenario, options.workload)
    measured = _bench_for(facts, facts_file, options.bench_file, options.no_bench, progress)
    estimates = estimate_for_advice(wl, facts=facts, bench=measured.report)
    estimates = price_for_advice(estimates, wl, pricing=priced, budget=options.budget, facts=facts)
    return _Gathered(facts, wl, measured, estimates)


def _bench_for(
    facts: Facts,
    facts_file: str | None,
    bench_file: str | Path | None,
    no_bench: bool,
    progress: ProgressScope,
) -> _Measured:
    """The figures ``recommend`` and ``rules explain`` use, chosen the same way for both:
    a saved bench file, else the figures the facts carry, else (only for the machine we
    are on, and unless ``no_bench``) the quick benchmark."""
    bench = load_bench(bench_file) if bench_file else facts.bench
    if bench is not None or no_bench or facts_file:
        return _Measured(bench, [], False)
    attempt = quick_bench(facts, progress)
    notes = [NO_BENCH_NOTE.format(attempt.reason)] if attempt.reason else []
    report = attempt.report
    return _Measured(report, notes, report is not None and report.interrupted)


def guidance(
    wl: Workload,
    *,
    facts: Facts | None,
    bench: BenchReport | None,
    scenario: Scenario,
    budget: Budget,
    team: Team | None,
    catalogs: list[Path] | None = None,
    pricing: Pricing | None = None,
    rows: Rows | None = None,
) -> list[Finding]:
    """The findings ``recommend`` would give for this workload, budget and team.

    ``facts`` is None only when probing failed: the rules about the machine then have
    nothing to read and stay silent. Guidance never runs a benchmark of its own.
    ``rows`` holds rows of ``wl`` already estimated, taken rather than estimated again.
    """
    from hwadvisor.models.facts import Facts

    machine = facts if facts is not None else Facts()
    made = rows.for_machine(machine, bench) if rows is not None else None
    estimates = estimate_for_advice(
        wl, facts=machine, bench=bench, extra_catalogs=catalogs, rows=made
    )
    estimates = price_for_advice(
        estimates,
        wl,
        pricing=pricing or pricing_from(None, catalogs),
        budget=budget,
        facts=facts,
        rows=made,
    )
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


@dataclass(frozen=True)
class _Machine:
    """``estimate``'s machine: the facts, the bench figures, and why there are none."""

    facts: Facts | None
    bench: BenchReport | None
    reason: str | None = None


def _machine_for(
    wants_here: bool,
    facts_file: str | None,
    bench_file: str | Path | None,
    no_bench: bool,
    progress: ProgressScope,
) -> _Machine:
    """The facts from ``facts_file`` (with their bench figures), else, when "here" is
    estimated, this machine probed and quickly benchmarked unless ``bench_file`` or
    ``no_bench`` says otherwise."""
    facts: Facts | None = load_facts(facts_file) if facts_file else None
    bench = load_bench(bench_file) if bench_file else (facts.bench if facts else None)
    if not wants_here or facts_file:
        return _Machine(facts, bench)
    facts = probe_or_none()
    if bench is not None or no_bench:
        return _Machine(facts, bench)
    attempt = quick_bench(facts, progress)
    return _Machine(facts, attempt.report, attempt.reason)


def estimate(
    *,
    workload: WorkloadOptions,
    on: list[str] | None = None,
    gpus: int = 1,
    bench_file: str | Path | None = None,
    no_bench: bool = False,
    catalogs: list[Path] | None = None,
    measure: bool = False,
    scenario: Scenario | None = None,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
    progress: ProgressScope = no_progress,
    pricing: PricingOptions | None = None,
    facts_file: str | None = None,
) -> EstimateReport:
    """Estimate a workload here and on catalog devices, with the guidance.

    This machine is probed, and quickly benchmarked without ``bench_file``, only when
    "here" is among the devices; with ``facts_file`` "here" is the machine it describes
    (its own bench figures, never a benchmark of this one). A workload with no model, no
    parameter count and no FLOPs is refused before anything runs. ``measure`` adds real
    steps of the user's model here.
    ``on`` names devices or instance types; every estimate is priced and the report
    names the cheapest option that meets the deadline and the fastest. The guidance
    takes the rows the table has already estimated (:class:`~hwadvisor.pipeline.rows.Rows`).
    """
    from hwadvisor.estimate.report import DEFAULT_DEVICES
    from hwadvisor.models.estimate import EstimateReport

    _refuse_both(bench_file, no_bench)
    wl = workload_for(scenario, workload, catalogs)
    if wl.model is None and wl.params is None and wl.flops_per_sample is None:
        raise UsageError(NO_WORKLOAD)
    priced = pricing_from(pricing, catalogs)
    plan = split_on(on or DEFAULT_DEVICES, priced, catalogs)
    wants_here = any(d.lower() == "here" for d in plan.devices)
    machine = _machine_for(wants_here, facts_file, bench_file, no_bench, progress)
    rows = Rows(wl, machine.facts, machine.bench, catalogs)
    table = [*rows.on(plan.devices, gpus), *instance_estimates(wl, plan.instances, priced)]
    report = EstimateReport(workload=wl, estimates=table)
    if machine.reason:
        report = _note_here(report, f"no bench figures: {machine.reason}")
    if measure:
        from hwadvisor.estimate.timing.measure import measure_here

        report = report.model_copy(update={"estimates": [*report.estimates, measure_here(wl)]})
    report = price_report(
        report, pricing=priced, budget=budget, facts=machine.facts, instances=plan.instances
    )
    scen = scenario or scenario_for(wl)
    found = guidance(
        wl,
        facts=machine.facts if wants_here or facts_file else probe_or_none(),
        bench=machine.bench,
        scenario=scen,
        budget=budget,
        team=team,
        catalogs=catalogs,
        pricing=priced,
        rows=rows,
    )
    return report.model_copy(
        update={"scenario": scen, "budget": budget, "team": team, "guidance": found}
    )


def _note_here(report: EstimateReport, note: str) -> EstimateReport:
    out = []
    for est in report.estimates:
        if est.device == "here":
            est = est.model_copy(update={"assumptions": [*est.assumptions, note]})
        out.append(est)
    return report.model_copy(update={"estimates": out})


def explain_rule(
    rule_id: str,
    *,
    scenario: Scenario | None = None,
    options: RunOptions | None = None,
    progress: ProgressScope = no_progress,
) -> Explanation:
    """Why one rule fires or not here (or for ``options.facts_file``): ``rules explain``.

    The scenario defaults to the rule's first, else training. Every other input is
    gathered as :func:`recommend` gathers it (the same bench figures, quick benchmark
    included, and the same prices), so with the same options a rule is explained as
    firing exactly when ``recommend`` fires it.
    """
    run_options = options or RunOptions()
    _refuse_both(run_options.bench_file, run_options.no_bench)
    priced = pricing_from(run_options.pricing, None)
    ruleset = load_rules(run_options.rules_dirs)
    rule = ruleset.get(rule_id.upper())
    scen = scenario or (rule.scenarios[0] if rule.scenarios else Scenario.TRAINING)
    run = _gather(scen, run_options, progress, priced)
    ctx = rule_context(
        facts=run.facts,
        scenario=scen,
        workload=run.workload,
        estimates=run.estimates,
        bench=run.measured.report,
        budget=run_options.budget,
        team=run_options.team,
    )
    # A cost rule shows the prices its facts rest on (the same picks recommend names).
    return explain_with_prices(explain_in_context(rule, ruleset, ctx, scen), run.estimates, priced)
