"""The verdict: which fired rule decides the device class, and whether this machine fits.

The device class and its sentence come from the data: among the first-pass rules that
fired with a ``verdict`` implication, the highest ``priority`` wins (ties go to the lower
id, so the outcome never depends on file order). ``fits_here``, the fixes it assumes and
the plan the verdict names come from :mod:`hwadvisor.engine.fit` (this machine
has that class of device and holds the job as recommended, and, where a time estimate
exists, finishes within the deadline; ``None`` only when that cannot be told).
"""

from __future__ import annotations

from hwadvisor.engine.context import Context
from hwadvisor.engine.fit import fits_here, recommended_plan
from hwadvisor.engine.template import render
from hwadvisor.models.advice import Confidence, DeviceClass, Verdict
from hwadvisor.models.bench import drifted
from hwadvisor.models.rules import Condition, Op, Rule
from hwadvisor.models.workload import Scenario

#: The device class when no verdict rule fired (a rules folder that overrides them all).
FALLBACK: dict[Scenario, DeviceClass] = {
    Scenario.PROTOTYPING: DeviceClass.CPU,
    Scenario.PREPROCESSING: DeviceClass.CPU,
    Scenario.EDGE: DeviceClass.CPU,
    Scenario.INFERENCE: DeviceClass.CPU,
    Scenario.TRAINING: DeviceClass.GPU,
    Scenario.DISTRIBUTED: DeviceClass.MULTI_GPU,
}
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


def decide(fired: list[Rule], ctx: Context, scenario: Scenario) -> Verdict:
    """The verdict from the fired first-pass rules (or the scenario's fallback)."""
    deciders = sorted(
        (r for r in fired if r.verdict is not None),
        key=lambda r: (-(r.verdict.priority if r.verdict else 0), r.id),
    )
    if deciders and deciders[0].verdict is not None:
        rule = deciders[0]
        assert rule.verdict is not None
        device, confidence = rule.verdict.device, rule.verdict.confidence
        summary, rule_id = render(rule.verdict.summary, ctx), rule.id
        why = doubts(ctx) if rests_on_measurement(rule) else []
        if why:
            # One step lower, whatever the number of doubts: the device class stands.
            lowered = _LOWER[confidence]
            why = [f"{confidence.value} lowered to {lowered.value}: {w}" for w in why]
            why = why if lowered is not confidence else []
            confidence = lowered
    else:
        device, confidence, rule_id, why = fallback(scenario, ctx), Confidence.LOW, None, []
        summary = f"{device.value.replace('_', '-').upper()} is the usual choice for {scenario.value}; no rule had the facts to decide more."
    here = fits_here(device, ctx, scenario)
    return Verdict(
        device=device,
        fits_here=here.fits,
        confidence=confidence,
        summary=summary,
        rule=rule_id,
        fits_reasons=here.reasons,
        fixes=here.fixes if here.fits else [],
        plan=recommended_plan(device, ctx, here),
        confidence_reasons=why,
    )


def fallback(scenario: Scenario, ctx: Context) -> DeviceClass:
    """The scenario's usual class, or several GPUs where one cannot do the job."""
    device = FALLBACK[scenario]
    if device is DeviceClass.GPU and ctx.get("estimate.multi_gpu_needed"):
        return DeviceClass.MULTI_GPU
    return device
