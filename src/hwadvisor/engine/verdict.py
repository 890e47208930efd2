"""The verdict: which fired rule decides the device class, and whether this machine fits.

The device class and its sentence come from the data: among the first-pass rules that
fired with a ``verdict`` implication, the highest ``priority`` wins (ties go to the lower
id, so the outcome never depends on file order). ``fits_here``, the fixes it assumes and
the plan the verdict names come from :mod:`hwadvisor.engine.fit` (this machine
has that class of device and holds the job as recommended, and, where a time estimate
exists, finishes within the deadline; ``None`` only when that cannot be told).
"""

from __future__ import annotations

from hwadvisor.engine.choice import Option, choose, nearest, options_of, price_words, requirement
from hwadvisor.engine.context import Context
from hwadvisor.engine.fit import fits_here, recommended_plan
from hwadvisor.engine.template import render
from hwadvisor.models.advice import ChosenOption, Confidence, DeviceClass, PlanSummary, Verdict
from hwadvisor.models.bench import drifted
from hwadvisor.models.rules import Condition, Op, Rule
from hwadvisor.models.workload import Budget, Scenario

#: The device class when no verdict rule fired (a rules folder that overrides them all).
FALLBACK: dict[Scenario, DeviceClass] = {
    Scenario.PROTOTYPING: DeviceClass.CPU,
    Scenario.PREPROCESSING: DeviceClass.CPU,
    Scenario.EDGE: DeviceClass.CPU,
    Scenario.INFERENCE: DeviceClass.CPU,
    Scenario.TRAINING: DeviceClass.GPU,
    Scenario.DISTRIBUTED: DeviceClass.MULTI_GPU,
}
#: Scenarios the documents' rules decide alone: a prototype or a data pipeline runs at
#: whatever size the machine holds (S1, S8), and an edge model is sized for the device it
#: ships on, not for the cloud rows the table compares (S6).
RULES_DECIDE = frozenset({Scenario.PROTOTYPING, Scenario.PREPROCESSING, Scenario.EDGE})
_LOWER = {
    Confidence.HIGH: Confidence.MEDIUM,
    Confidence.MEDIUM: Confidence.LOW,
    Confidence.LOW: Confidence.LOW,
}
#: Above this load per benchmark thread, or below this fraction of the fp32 peak, the
#: CPU figures are taken as disturbed (the machine was busy or throttled).
BUSY_LOAD = 1.5
LOW_FRACTION_OF_PEAK = 0.05


def doubts(ctx: Context) -> list[str]:
    """Why estimates of this machine rest on less than steady measurements (empty: they do not).

    No CPU measurements, measurements on a busy machine (the load average per benchmark
    thread at :data:`BUSY_LOAD` or more), a machine whose speed moved between the run's
    start and end (its first figure timed again, outside
    :data:`~hwadvisor.models.bench.DRIFT_TOLERANCE`), a fp32 figure far below the
    peak (throttled or disturbed), or figures the bench marked unreliable (their
    conclusions then come from the theoretical peak).
    """
    if not ctx.get("bench.available"):
        return ["no microbenchmark ran: the times here come from the theoretical peak"]
    out: list[str] = []
    load = ctx.get("bench.cpu.load_over_threads")
    if load is not None and load >= BUSY_LOAD:
        out.append(
            f"the microbenchmark ran on a busy machine (load average {load:.1f}x its threads)"
        )
    moved = ctx.get("bench.cpu.end_over_start")
    if moved is not None and drifted(moved):
        out.append(
            "the machine's speed moved while the microbenchmark ran (fp32 matmul timed "
            f"again at the end: {moved:.2f}x its first figure)"
        )
    frac = ctx.get("bench.cpu.fp32_matmul_of_peak")
    if frac is not None and frac < LOW_FRACTION_OF_PEAK:
        out.append(f"fp32 matmul reached only {frac:.1%} of the theoretical peak while measuring")
    bad = ctx.get("bench.cpu.unreliable_figures")
    if bad:
        out.append(
            f"{bad} CPU figure{'s were' if bad > 1 else ' was'} too unsteady to use: "
            "the theoretical peak stood in for them"
        )
    return out


def doubtful_bench(ctx: Context) -> bool:
    """No CPU measurements, or disturbed ones: estimates of this machine rest on less."""
    return bool(doubts(ctx))


#: Paths whose values come from this machine's measurements (the CPU estimate, the bench).
_MEASURED_PREFIXES = ("estimate.here.", "estimate.speedup_", "bench.")


def _measured_leaf(cond: Condition) -> bool:
    if cond.fact is not None:
        # "no estimate exists" is not a measurement; comparing a measured value is.
        paths = [p for p in (cond.fact, cond.ref) if p is not None]
        return cond.op is not Op.EXISTS and any(p.startswith(_MEASURED_PREFIXES) for p in paths)
    return any(_measured_leaf(c) for c in cond.children())


def rests_on_measurement(rule: Rule) -> bool:
    """Whether ``rule``'s condition compares figures measured on this machine."""
    return rule.when is not None and _measured_leaf(rule.when)


def _deciders(fired: list[Rule]) -> list[Rule]:
    """The fired rules with a verdict, highest priority first (ties: the lower id)."""
    return sorted(
        (r for r in fired if r.verdict is not None),
        key=lambda r: (-(r.verdict.priority if r.verdict else 0), r.id),
    )


def _requirement(ctx: Context) -> str:
    """The job's requirement in words, as the option met it."""
    return requirement(
        ctx.get("workload.task"),
        ctx.get("workload.deadline_hours"),
        ctx.get("workload.qps"),
        ctx.get("workload.latency_ms"),
    )


def _price(o: Option) -> str:
    words = price_words(
        o.usd,
        o.per,
        hourly_usd=o.hourly_usd,
        instance=o.instance,
        instances=o.instances,
        concurrency=o.concurrency,
    )
    return f" ({words})" if words else ""


def _where(o: Option) -> str:
    if o.device_class is DeviceClass.CPU:
        return "this machine's CPU" if o.here else f"a CPU ({o.name})"
    return ("this machine's " if o.here else "") + o.plan


def _sentence(o: Option, why: str, ctx: Context) -> str:
    """The verdict sentence for an option the table chose."""
    fixes = f" with {', '.join(o.fixes)}" if o.fixes and o.device_class is DeviceClass.CPU else ""
    req = _requirement(ctx)
    if o.meets is True:
        meets = f" and {req}"
    else:
        meets = f"; whether it {req} the table cannot tell (no time estimate)"
    if why == "already here":
        return f"Run it on {_where(o)}{fixes}: it is already here and holds the job{meets}."
    return f"Run it on {_where(o)}{fixes}: {why} holds the job{meets}{_price(o)}."


def _chosen(o: Option, why: str, feasible: int) -> ChosenOption:
    return ChosenOption(
        device=o.device,
        name=o.name,
        gpus=o.gpus,
        here=o.here,
        time_s=o.time_s,
        usd=o.usd,
        per=o.per,
        hourly_usd=o.hourly_usd,
        instance=o.instance,
        instances=o.instances,
        concurrency=o.concurrency,
        why=why,
        feasible=feasible,
    )


def _plan(o: Option) -> PlanSummary | None:
    if o.device_class is DeviceClass.CPU:
        return None
    return PlanSummary(
        device=o.device,
        name=o.name,
        gpus=o.gpus,
        strategy=o.strategy if o.gpus > 1 else "single",
        fixes=list(o.fixes),
        text=o.plan,
    )


def _undecided(options: list[Option], ctx: Context, scenario: Scenario) -> tuple[DeviceClass, str]:
    """No option both fits and meets: the nearest, and what would settle it."""
    near = nearest(options)
    if near is None:
        device = fallback(scenario, ctx)
        return device, (
            "Nothing here decides the device: the job could not be estimated. Give --model "
            "(or --params with --flops-per-sample) so its time and memory can be compared."
        )
    if near.fits is True:
        miss = f"none {_requirement(ctx)}"
        hint = "relax the requirement (--deadline, --qps, --latency-ms) or add GPUs"
    elif near.fits is None:
        miss = "whether any holds the job is open"
        hint = "give the options the fit reasons name (batch size, sequence length) to settle it"
    else:
        miss = "none holds the job"
        hint = "shrink the job (quantized weights, LoRA, a smaller batch) or go to more GPUs"
    return near.device_class, (
        f"No option compared both holds the job and {_requirement(ctx)}: {miss}. "
        f"The nearest is {_where(near)}; {hint}."
    )


def _by_rule(rule: Rule, ctx: Context) -> tuple[DeviceClass, Confidence, str, str, list[str]]:
    """A rule's verdict as it stands: its class, confidence and sentence."""
    assert rule.verdict is not None
    why = doubts(ctx) if rests_on_measurement(rule) else []
    v = rule.verdict
    return v.device, v.confidence, render(v.summary, ctx), rule.id, why


def decide(
    fired: list[Rule], ctx: Context, scenario: Scenario, budget: Budget = Budget.NORMAL
) -> Verdict:
    """The verdict: the option the estimate rows choose, explained by the fired rules."""
    deciders = _deciders(fired)
    options = options_of(ctx.get("estimate.options"))
    if scenario in RULES_DECIDE:
        options = []  # the table does not judge a prototype or a data pipeline
    decision = choose(options, deciders, budget) if options else None
    chosen: ChosenOption | None = None
    plan: PlanSummary | None = None
    why: list[str] = []
    if decision is not None and decision.option is not None:
        o, rule = decision.option, decision.rule
        device = o.device_class
        chosen = _chosen(o, decision.why, sum(x.feasible for x in options))
        plan = _plan(o)
        if rule is not None and rule.verdict is not None:
            confidence, rule_id = rule.verdict.confidence, rule.id
            # A rule's sentence may name other rows than the one chosen: it speaks for the
            # choice only when the choice is this machine's own, the rows it reads.
            speaks = o.here and rule.verdict.where == "here"
            summary = (
                render(rule.verdict.summary, ctx) if speaks else _sentence(o, decision.why, ctx)
            )
            why = doubts(ctx) if rests_on_measurement(rule) else []
        else:
            confidence, rule_id = Confidence.MEDIUM, None
            summary = _sentence(o, decision.why, ctx)
            why = doubts(ctx) if o.here and o.device_class is DeviceClass.CPU else []
    elif decision is not None and decision.rule is not None:
        # Where the table cannot speak, the documents' rules of thumb decide.
        device, confidence, summary, rule_id, why = _by_rule(decision.rule, ctx)
    elif options:
        device, summary = _undecided(options, ctx, scenario)
        confidence, rule_id = Confidence.LOW, None
    elif deciders:
        # No estimate to read: the documents' rules of thumb decide.
        device, confidence, summary, rule_id, why = _by_rule(deciders[0], ctx)
    else:
        device, summary = _undecided([], ctx, scenario)
        confidence, rule_id = Confidence.LOW, None
    if why:
        # One step lower, whatever the number of doubts: the device class stands.
        lowered = _LOWER[confidence]
        why = [f"{confidence.value} lowered to {lowered.value}: {w}" for w in why]
        why = why if lowered is not confidence else []
        confidence = lowered
    here = fits_here(device, ctx, scenario)
    if plan is None and decision is None:
        plan = recommended_plan(device, ctx, here)
    return Verdict(
        device=device,
        fits_here=here.fits,
        confidence=confidence,
        summary=summary,
        rule=rule_id,
        fits_reasons=here.reasons,
        fixes=here.fixes if here.fits else [],
        plan=plan,
        option=chosen,
        confidence_reasons=why,
    )


def fallback(scenario: Scenario, ctx: Context) -> DeviceClass:
    """The scenario's usual class, or several GPUs where one cannot do the job."""
    device = FALLBACK[scenario]
    if device is DeviceClass.GPU and ctx.get("estimate.multi_gpu_needed"):
        return DeviceClass.MULTI_GPU
    return device
