"""The pure step of the pipeline: documents in, advice out; nothing here touches the machine.

:func:`advise` takes facts, bench figures, the workload and its estimates and returns an
:class:`~hwadvisor.models.advice.Advice`, so any recommendation can be replayed from
saved documents and tested without hardware (it reads the rule files and the catalog,
never the machine). :func:`estimate_for_advice` asks the estimator for the figures
``advise`` needs (this machine, single catalog GPUs, and a multi-GPU configuration) and
returns None, rather than failing the advice, when the workload cannot be estimated.
:func:`rule_context` is the one place the rule context is built, for ``advise`` and for
``rules explain`` alike, and :func:`explain_in_context` explains one rule over the
context the rules finally saw (the engine's two passes are not repeated here).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from pathlib import Path

from hwadvisor.engine import (
    Context,
    Explanation,
    RuleSet,
    apply_rules,
    build_context,
    explain,
    load_rules,
    with_verdict,
)
from hwadvisor.engine.paths import LOCAL_PREFIX
from hwadvisor.errors import HwadvisorError
from hwadvisor.models.advice import (
    Advice,
    AdviceEstimates,
    AdviceOptions,
    Alternative,
    Budget,
    MachineSummary,
    PlanSummary,
    Team,
)
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.estimate import (
    DeviceEstimate,
    EstimateReport,
    MemoryBreakdown,
    MultiGpuPlan,
)
from hwadvisor.models.facts import Facts
from hwadvisor.models.rules import Rule
from hwadvisor.models.workload import Scenario, Workload
from hwadvisor.pipeline.rows import HERE, Rows
from hwadvisor.units import human_bytes

#: Catalog GPUs every recommendation compares against: a budget part, mid-range data
#: centre parts and the current flagship; the multi-GPU set is an 8-GPU NVLink node.
SINGLE_GPUS = ("t4", "l4", "a10", "a100-80gb", "h100-sxm")
MULTI_GPUS = ("a100-80gb", "h100-sxm")
MULTI_GPU_COUNT = 8
#: The picks a priced estimate report carries, copied into the advice's estimates.
PICKS = ("cheapest", "fastest", "budget_low", "cheapest_cpu", "cheapest_gpu")


def catalog_gpu_ids() -> frozenset[str] | None:
    """Catalog ids of kind ``gpu``, so a catalog CPU is never the "best GPU"."""
    try:
        from hwadvisor.catalog import load_devices

        return frozenset(d.id for d in load_devices().values() if d.kind.value == "gpu")
    except (ImportError, HwadvisorError):
        return None


def _machine(facts: Facts, from_file: str | None) -> MachineSummary:
    gpus = [
        f"{g.name or g.vendor}"
        + (f" ({human_bytes(g.memory_total_bytes)})" if g.memory_total_bytes else "")
        for g in facts.gpus
    ]
    torch = facts.software.torch
    torch_text = None
    if torch is not None:
        torch_text = torch.version + (
            f" (CUDA {torch.cuda})"
            if torch.cuda
            else " (CPU build)"
            if not torch.hip
            else f" (ROCm {torch.hip})"
        )
    return MachineSummary(
        hostname=facts.host.hostname,
        cpu_model=facts.cpu.model,
        usable_cores=facts.cpu.usable_cores,
        memory_total_bytes=facts.memory.total_bytes,
        gpu_count=len(facts.gpus),
        gpus=gpus,
        torch=torch_text,
        from_file=from_file,
    )


def plan_summary(plan: MultiGpuPlan | None) -> PlanSummary | None:
    """An estimate's plan in brief (the advice's form)."""
    if plan is None:
        return None
    return PlanSummary(
        device=plan.device,
        name=plan.name,
        gpus=plan.gpus,
        strategy=plan.strategy,
        fixes=list(plan.fixes),
        text=plan.plan,
    )


def _estimates(report: EstimateReport | None) -> AdviceEstimates:
    if report is None:
        return AdviceEstimates()
    here = next((e for e in report.estimates if e.device == "here"), None)
    alts = [
        Alternative(
            device=e.device,
            name=e.name,
            gpus=e.gpus,
            time_s=e.total_time_s,
            memory_bytes=e.memory_bytes,
            memory_fit=e.fits,
            basis=e.basis,
            serving=e.serving,
            finetune=e.finetune,
            memory=e.memory,
            device_memory_bytes=e.device_memory_bytes,
            cost=e.cost,
            time_band_s=e.total_time_band_s,
            plan=plan_summary(e.plan),
            fits_planned=e.fits_planned,
        )
        for e in report.estimates
        if e.device != "here"
    ]
    picks = {k: getattr(report, k) for k in PICKS}
    return AdviceEstimates(here=here, alternatives=alts, **picks)


def rule_context(
    *,
    facts: Facts,
    scenario: Scenario,
    workload: Workload,
    estimates: EstimateReport | None,
    bench: BenchReport | None,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
) -> Context:
    """What the rules read for one machine and workload (the first pass's context)."""
    return build_context(
        facts=facts,
        workload=workload,
        scenario=scenario,
        bench=bench,
        estimates=estimates,
        budget=budget,
        team=team,
        gpu_ids=catalog_gpu_ids(),
    )


def advise(
    *,
    facts: Facts,
    scenario: Scenario,
    workload: Workload,
    estimates: EstimateReport | None = None,
    bench: BenchReport | None = None,
    rules: RuleSet | None = None,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
    facts_file: str | None = None,
) -> Advice:
    """Apply the rules to one machine and workload; pure apart from reading rule files.

    ``bench`` defaults to the report the facts carry (``check --bench``); ``rules`` to the
    shipped rules plus ``HWADVISOR_RULES_PATH``.
    """
    bench = bench if bench is not None else facts.bench
    ruleset = rules if rules is not None else load_rules()
    ctx = rule_context(
        facts=facts,
        workload=workload,
        scenario=scenario,
        bench=bench,
        estimates=estimates,
        budget=budget,
        team=team,
    )
    outcome = apply_rules(ruleset, ctx, scenario)
    return Advice(
        scenario=scenario,
        options=AdviceOptions(budget=budget, team=team, rules_paths=ruleset.folders[1:]),
        workload=workload,
        machine=_machine(facts, facts_file),
        verdict=outcome.verdict,
        estimates=_estimates(estimates),
        findings=outcome.findings,
        migration=outcome.migration,
        bench=bench,
        rules_evaluated=outcome.evaluated,
    )


def estimate_for_advice(
    workload: Workload,
    *,
    facts: Facts,
    bench: BenchReport | None,
    single: Iterable[str] = SINGLE_GPUS,
    multi: Iterable[str] = MULTI_GPUS,
    gpus: int = MULTI_GPU_COUNT,
    extra_catalogs: list[Path] | None = None,
    rows: Rows | None = None,
) -> EstimateReport | None:
    """Estimates here, on single catalog GPUs and on a multi-GPU node, merged in one report.

    ``rows`` holds rows of the same workload already estimated (``estimate``'s table):
    those are taken, not estimated again. Returns None when the estimator is not
    installed or the workload has too little information to estimate (the rules then
    fall back to the documents' rules of thumb).
    """
    try:
        import hwadvisor.estimate  # noqa: F401
    except ImportError:
        return None
    made = (
        rows.for_machine(facts, bench)
        if rows is not None
        else Rows(workload, facts, bench, extra_catalogs)
    )
    try:
        found = [*made.on([HERE, *single]), *made.on(list(multi), gpus)]
    except HwadvisorError:
        return None
    found += _local_estimates(made, facts)
    found = [_as_recommended(workload, e, facts, extra_catalogs) for e in found]
    return EstimateReport(workload=workload, estimates=found)


def as_recommended_row(
    workload: Workload, est: DeviceEstimate, facts: Facts | None
) -> DeviceEstimate:
    """A catalog row added after the comparison (``--budget low``'s older GPUs) with the
    fit of the job as recommended, as the compared rows have it."""
    if facts is None:
        return llm_recommended(workload, est) if workload.priced_by_llm else est
    return _as_recommended(workload, est, facts, None)


def _as_recommended(
    workload: Workload, est: DeviceEstimate, facts: Facts, extra_catalogs: list[Path] | None
) -> DeviceEstimate:
    """``est`` with the fit of the job as recommended there (estimate.recommended).

    This machine's CPU with the fixes a CPU can take; a catalog GPU with its plan (any
    size, for the comparison) and the fit within the row's GPUs; this machine's own GPUs
    within as many as it has, on the memory its probe reported.
    """
    from hwadvisor.catalog import DeviceKind, load_devices
    from hwadvisor.estimate.memory.plan import MAX_GPUS
    from hwadvisor.estimate.memory.recommended import Placement, as_recommended

    if workload.priced_by_llm:
        return llm_recommended(workload, est)
    if est.device == "here":
        return as_recommended(workload, est, Placement(gpu=False))
    local = est.device.startswith(LOCAL_PREFIX)
    entry = load_devices(extra_catalogs).get(est.device.removeprefix(LOCAL_PREFIX))
    if entry is None:
        return est
    if entry.kind is DeviceKind.CPU:
        return as_recommended(workload, est, Placement(gpu=False))
    several = entry.kind is DeviceKind.GPU
    probed = facts.gpus[0].memory_total_bytes if local and facts.gpus else None
    most = est.gpus if local or not several else MAX_GPUS
    target = Placement(
        gpu=True, gpus=est.gpus, plan_gpus=most, device_bytes=probed, own=local, cuda=several
    )
    out = as_recommended(workload, est, target)
    plan = out.plan
    if plan is not None and plan.total_time_s is None and plan is not est.plan:
        # A plan made here (this machine's own GPUs) is timed as the catalog's plans are.
        from hwadvisor.estimate.timing.catalog import device_model
        from hwadvisor.estimate.timing.plan_time import timed_plan

        timed = timed_plan(workload, plan, functools.partial(device_model, entry))
        out = out.model_copy(update={"plan": timed})
    return out


_SHARDS = re.compile(r"(?:over|across) (\d+) GPUs")


def _changes_the_job(workload: Workload, fix: str) -> bool:
    """A fix that changes what was asked: another weight format than ``--quant`` gave,
    another fine-tuning method than ``--method`` gave (or than training, which is full)."""
    text = fix.lower()
    if "weights" in text and workload.quant is not None:
        return True
    method_given = not any("--method not given" in a for a in workload.assumptions)
    return text.startswith(("lora", "qlora")) and method_given


def llm_recommended(workload: Workload, est: DeviceEstimate) -> DeviceEstimate:
    """A language model's row with the job as recommended: as written, or the first of
    its fixes (another format, a lighter method, sharding) that fits without changing
    what was asked, as a plan on the GPUs it needs."""
    if est.fits is True:
        return est.model_copy(update={"fits_planned": True, "planned_reason": "fits as written"})
    for f in est.fixes:
        if not f.fits or _changes_the_job(workload, f.fix):
            continue
        found = _SHARDS.search(f.fix)
        gpus = int(found.group(1)) if found else est.gpus
        if gpus > est.gpus and (est.device == "here" or est.device.startswith(LOCAL_PREFIX)):
            continue  # this machine has the GPUs it has
        fixes = [] if found else [f.fix]
        name = est.name or est.device
        text = f"{gpus} × {name}" + (f" with {f.fix}" if not found else f" ({f.fix})")
        plan = MultiGpuPlan(
            device=est.device,
            name=name,
            gpus=gpus,
            strategy=("tensor parallel" if "tensor" in f.fix else "FSDP (ZeRO-3)")
            if found
            else "single",
            fixes=fixes,
            memory=MemoryBreakdown(weights_bytes=0, total_bytes=f.memory_bytes),
            fits=True,
            plan=text,
        )
        return est.model_copy(
            update={
                "plan": plan,
                "fits_planned": gpus <= est.gpus,
                "planned_reason": f"fits with {f.fix}",
            }
        )
    return est.model_copy(
        update={"fits_planned": est.fits, "planned_reason": est.fit_reason or "does not fit"}
    )


def _local_estimates(rows: Rows, facts: Facts) -> list[DeviceEstimate]:
    """This machine's own GPUs priced from their catalog entry, as ``local:<id>``.

    One GPU, and all GPUs of the first GPU's type when there are several. A GPU the
    catalog does not know is simply not priced (the rules then read its memory only).
    """
    if not facts.gpus:
        return []
    try:
        from hwadvisor.catalog.match import match_gpu
    except ImportError:
        return []
    extra = rows.extra_catalogs
    try:
        first = facts.gpus[0]
        ident = match_gpu(first.name, first.memory_total_bytes, extra)
        if ident is None:
            return []
        same = sum(match_gpu(g.name, g.memory_total_bytes, extra) == ident for g in facts.gpus)
        return [
            e.model_copy(update={"device": f"{LOCAL_PREFIX}{e.device}"})
            for n in ([1, same] if same > 1 else [1])
            for e in rows.on([ident], n)
        ]
    except HwadvisorError:
        return []


def explain_in_context(
    rule: Rule, ruleset: RuleSet, ctx: Context, scenario: Scenario
) -> Explanation:
    """Why ``rule`` fires or not, over the context the rules finally saw.

    That is the first pass's context with the verdict added (``verdict.*``), as
    :func:`~hwadvisor.engine.apply_rules` gives it to the rules that read the verdict; a
    rule of the first pass reads none of those paths, so it is explained as it ran.
    """
    verdict = apply_rules(ruleset, ctx, scenario).verdict
    return explain(rule, with_verdict(ctx, verdict), scenario)
