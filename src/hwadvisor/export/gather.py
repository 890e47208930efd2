"""Reading a fleet's reports and estimating the workload on each machine.

This is the orchestration behind ``hwadvisor fleet``: a plain function the CLI calls, so
tests drive it directly. A report that cannot be read, or a machine the estimator cannot
price, becomes a :class:`~hwadvisor.export.fleet.FleetSkip` with the reason; nothing in
one report stops the others from being ranked.

"here" in the estimator prices a machine's CPU; a GPU machine is priced on its GPU's
catalog entry (matched by name and memory, see :func:`hwadvisor.catalog.match.match_gpu`), with all of its GPUs
of that type for the ``distributed`` scenario and one otherwise. CPU-class scenarios
(``prototyping``, ``edge``, ``preprocessing``) are priced on the CPU everywhere. Each
machine also gets the rule engine's verdict (``hwadvisor.pipeline.advise``, as
``recommend --facts`` would give), which orders machines of equal status.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.catalog.match import match_gpu
from hwadvisor.errors import HwadvisorError
from hwadvisor.export.fleet import Candidate, FleetReport, FleetSkip, rank_fleet
from hwadvisor.export.report import Report, load_report
from hwadvisor.models.workload import Scenario, Workload

if TYPE_CHECKING:
    from hwadvisor.engine import RuleSet

#: Scenarios whose work belongs on a CPU (GUIDANCE S1, S7, S8): ranked on CPU estimates.
CPU_SCENARIOS = frozenset({"prototyping", "edge", "preprocessing"})


def _advice(
    report: Report, workload: Workload, scenario: str | None, rules: RuleSet | None
) -> tuple[str | None, bool | None, str | None]:
    """The rule engine's verdict for this machine: device class, fits_here, summary.

    Advice is extra evidence for the ranking, so a failure here leaves it unknown rather
    than skipping a machine that could be estimated.
    """
    from hwadvisor.pipeline import advise, estimate_for_advice

    if scenario is None or rules is None:
        return None, None, None
    try:
        est = estimate_for_advice(workload, facts=report.facts, bench=report.bench)
        advice = advise(
            facts=report.facts,
            scenario=Scenario(scenario),
            workload=workload,
            estimates=est,
            rules=rules,
        )
    except HwadvisorError:
        return None, None, None
    v = advice.verdict
    return v.device.value, v.fits_here, v.summary


def _partial_reason(report: Report) -> str:
    facts = report.facts
    missing = []
    if facts.memory.total_bytes is None:
        missing.append("memory size")
    if report.bench is None and facts.cpu.peak_gflops.fp32 is None:
        missing.append("CPU peak or benchmark")
    what = " and no ".join(missing) or "figures"
    return f"partial report: no {what} to estimate the workload with"


def _candidate(
    report: Report, workload: Workload, scenario: str | None, rules: RuleSet | None
) -> Candidate:
    from hwadvisor.estimate import estimate_workload

    facts = report.facts
    on, gpus = "here", 1
    if facts.gpus and scenario not in CPU_SCENARIOS:
        ids = [match_gpu(g.name, g.memory_total_bytes) for g in facts.gpus]
        known = [i for i in ids if i is not None]
        if not known:
            names = ", ".join(sorted({g.name or g.vendor for g in facts.gpus}))
            return Candidate(report=report, estimate=None, error=f"GPU not in the catalog: {names}")
        # The most common GPU of the machine; all of them for distributed training.
        on = max(set(known), key=known.count)
        gpus = known.count(on) if scenario == "distributed" else 1
    try:
        est = estimate_workload(
            workload, facts=facts, bench=report.bench, on=[on], gpus=gpus
        ).estimates[0]
    except HwadvisorError as exc:
        return Candidate(report=report, estimate=None, error=exc.line())
    if (
        est.step_time_s is None
        and est.fits is None
        and (workload.params or workload.flops_per_sample)
    ):
        # The workload has a cost but this machine's report gives nothing to price it with.
        return Candidate(report=report, estimate=None, error=_partial_reason(report))
    device, fits, summary = _advice(report, workload, scenario, rules)
    return Candidate(
        report=report, estimate=est, recommended_device=device, rules_fit=fits, advice=summary
    )


def read_reports(paths: Sequence[str | Path]) -> tuple[list[Report], list[FleetSkip]]:
    """Load each saved report once; an unreadable or invalid one is skipped with its reason."""
    reports: list[Report] = []
    skipped: list[FleetSkip] = []
    seen: set[str] = set()
    for path in paths:
        key = str(path)
        if key in seen:
            continue
        seen.add(key)
        try:
            reports.append(load_report(path))
        except HwadvisorError as exc:
            skipped.append(FleetSkip(source=key, reason=exc.message))
    return reports, skipped


def gather_fleet(
    paths: Sequence[str | Path],
    workload: Workload,
    *,
    scenario: str | None = None,
    read: tuple[list[Report], list[FleetSkip]] | None = None,
) -> FleetReport:
    """Load each report, estimate ``workload`` there, and rank; bad reports are skipped.

    ``read`` is the result of :func:`read_reports` when the caller has already loaded them.
    """
    from hwadvisor.engine import load_rules

    reports, skipped = read if read is not None else read_reports(paths)
    # The shipped rules (and HWADVISOR_RULES_PATH), loaded once for the whole fleet.
    rules = load_rules() if scenario is not None else None
    candidates = [_candidate(report, workload, scenario, rules) for report in reports]
    return rank_fleet(candidates, workload, scenario=scenario, skipped=skipped)
