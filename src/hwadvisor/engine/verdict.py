"""The verdict: which fired rule decides the device class, and whether this machine fits.

The device class and its sentence come from the data: among the first-pass rules that
fired with a ``verdict`` implication, the highest ``priority`` wins (ties go to the lower
id, so the outcome never depends on file order). ``fits_here`` is computed here from
SPEC §3: this machine has that class of device, enough memory, and, where a time
estimate exists, finishes within the deadline; ``None`` only when that cannot be told.
"""

from __future__ import annotations

from hwadvisor.engine.context import Context
from hwadvisor.engine.template import render
from hwadvisor.models.advice import Confidence, DeviceClass, Verdict
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
#: Scenarios where any machine with a CPU "fits" when the job's memory is unknown:
#: prototyping and data pipelines run at whatever size the machine allows (S1, S8).
_ANY_CPU_FITS = frozenset({Scenario.PROTOTYPING, Scenario.PREPROCESSING})


def _and3(values: list[bool | None]) -> bool | None:
    if any(v is False for v in values):
        return False
    if any(v is None for v in values):
        return None
    return True


def _cpu_fits(ctx: Context, scenario: Scenario) -> tuple[bool | None, list[str]]:
    reasons: list[str] = []
    mem = ctx.get("estimate.here.fits")
    if mem is None and scenario in _ANY_CPU_FITS:
        mem = True
        reasons.append("any CPU runs prototyping and data pipelines at a size it can hold")
    elif mem is None:
        reasons.append("the job's memory here is unknown")
    else:
        reasons.append(
            "the job fits in this machine's memory"
            if mem
            else "the job does not fit in this machine's memory"
        )
    checks: list[bool | None] = [mem]
    if scenario in (Scenario.TRAINING, Scenario.DISTRIBUTED):
        within = ctx.get("estimate.here.within_deadline")
        checks.append(within)
        if within is not None:
            reasons.append(
                "it finishes here within the deadline"
                if within
                else "it does not finish here within the deadline"
            )
        else:
            reasons.append("the training time here is unknown")
    if ctx.get("workload.qps") is not None:
        serves = ctx.get("estimate.here.serves_qps")
        if serves is not None:
            checks.append(serves)
            reasons.append(
                "this machine serves the requested QPS"
                if serves
                else "this machine cannot serve the requested QPS"
            )
    if ctx.get("workload.latency_ms") is not None:
        meets = ctx.get("estimate.here.meets_latency")
        if meets is not None:
            checks.append(meets)
            reasons.append(
                "it meets the latency target" if meets else "it misses the latency target"
            )
    return _and3(checks), reasons


def _local_fits(
    ctx: Context, slot: str, scenario: Scenario
) -> tuple[bool | None, list[str]] | None:
    """Fit from the estimate on this machine's own GPU(s), when the catalog priced them."""
    name = ctx.get(f"{slot}.name")
    if name is None:
        return None
    mem = ctx.get(f"{slot}.fits_after_fixes")
    if mem is None and ctx.get(f"{slot}.needs_sharding"):
        mem = False
    reasons = [
        f"the job {'fits' if mem else 'does not fit' if mem is False else 'may or may not fit'} in the memory of {name}"
    ]
    checks: list[bool | None] = [mem]
    if scenario in (Scenario.TRAINING, Scenario.DISTRIBUTED):
        within = ctx.get(f"{slot}.within_deadline")
        if within is not None:
            checks.append(within)
            reasons.append(
                f"it {'finishes' if within else 'does not finish'} within the deadline there"
            )
    if ctx.get("workload.qps") is not None and ctx.get(f"{slot}.serves_qps") is not None:
        checks.append(ctx.get(f"{slot}.serves_qps"))
        reasons.append(
            "it serves the requested QPS" if checks[-1] else "it cannot serve the requested QPS"
        )
    return _and3(checks), reasons


def _gpu_fits(ctx: Context, need: int, scenario: Scenario) -> tuple[bool | None, list[str]]:
    count = ctx.get("gpu.count") or 0
    if count < need:
        have = "no GPU" if count == 0 else f"{count} GPU{'s' if count > 1 else ''}"
        return False, [f"this machine has {have}; the job needs {'several' if need > 1 else 'one'}"]
    local = _local_fits(ctx, "estimate.local_gpus" if need > 1 else "estimate.local_gpu", scenario)
    if local is not None:
        return local
    slot = "estimate.best_multi_gpu" if need > 1 else "estimate.best_gpu"
    # The memory after the first fix that fits (mixed precision, accumulation, ...): the
    # job as it would be run, not as first written.
    job = ctx.get(f"{slot}.memory_after_fixes_bytes") or ctx.get(f"{slot}.memory_bytes")
    biggest = ctx.get("gpu.max_memory_bytes")
    if job is None or biggest is None:
        return None, ["the job's GPU memory need or this GPU's memory is unknown"]
    fits = job <= biggest
    if not fits and need > 1 and ctx.get(f"{slot}.needs_sharding"):
        # Sharded (FSDP/ZeRO-3) the job's state spreads over the GPUs this machine has.
        fits = job / count <= biggest
    return fits, [f"the job {'fits' if fits else 'does not fit'} in this machine's GPU memory"]


def fits_here(
    device: DeviceClass, ctx: Context, scenario: Scenario
) -> tuple[bool | None, list[str]]:
    """Whether this machine runs the job on ``device``, and the reasons, per SPEC §3."""
    if device is DeviceClass.CPU:
        return _cpu_fits(ctx, scenario)
    return _gpu_fits(ctx, 2 if device is DeviceClass.MULTI_GPU else 1, scenario)


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
    thread at :data:`BUSY_LOAD` or more), a fp32 figure far below the peak (throttled or
    disturbed), or figures the bench marked unreliable (their conclusions then come from
    the theoretical peak).
    """
    if not ctx.get("bench.available"):
        return ["no microbenchmark ran: the times here come from the theoretical peak"]
    out: list[str] = []
    load = ctx.get("bench.cpu.load_over_threads")
    if load is not None and load >= BUSY_LOAD:
        out.append(
            f"the microbenchmark ran on a busy machine (load average {load:.1f}x its threads)"
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
        device, confidence, rule_id, why = FALLBACK[scenario], Confidence.LOW, None, []
        summary = f"{device.value.replace('_', '-').upper()} is the usual choice for {scenario.value}; no rule had the facts to decide more."
    fits, reasons = fits_here(device, ctx, scenario)
    return Verdict(
        device=device,
        fits_here=fits,
        confidence=confidence,
        summary=summary,
        rule=rule_id,
        fits_reasons=reasons,
        confidence_reasons=why,
    )
