"""The command-line options and, for the second pass, the verdict, as facts rules read."""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.engine.derive import Context, FactType, Registry
from hwadvisor.models.advice import Confidence, DeviceClass, Verdict
from hwadvisor.models.workload import Budget, Scenario, Team


@dataclass(frozen=True)
class Options:
    """The options the advice was asked with."""

    scenario: Scenario
    budget: Budget
    team: Team | None


OPTIONS: Registry[Options] = Registry("the command-line options")


@OPTIONS.fact(
    "options.scenario", FactType.STRING, "the scenario option", [s.value for s in Scenario]
)
def scenario(o: Options) -> str:
    """The scenario asked about."""
    return o.scenario.value


@OPTIONS.fact("options.budget", FactType.STRING, "the budget option", [b.value for b in Budget])
def budget(o: Options) -> str:
    """The budget given (normal by default)."""
    return o.budget.value


@OPTIONS.fact("options.team", FactType.STRING, "the team option", [t.value for t in Team])
def team(o: Options) -> str | None:
    """The team's experience, when given."""
    return o.team.value if o.team is not None else None


@dataclass(frozen=True)
class Decided:
    """The first pass's context and the verdict decided from it."""

    ctx: Context
    verdict: Verdict


VERDICT: Registry[Decided] = Registry("the verdict (second pass only)")


@VERDICT.fact(
    "verdict.device",
    FactType.STRING,
    "the verdict's device class (second pass only)",
    [d.value for d in DeviceClass],
)
def device(d: Decided) -> str:
    """The device class decided."""
    return d.verdict.device.value


@VERDICT.fact("verdict.fits_here", FactType.BOOL, "the verdict's fits_here (second pass only)")
def fits_here(d: Decided) -> bool | None:
    """Whether this machine runs the job on that device class."""
    return d.verdict.fits_here


@VERDICT.fact(
    "verdict.confidence",
    FactType.STRING,
    "the verdict's confidence (second pass only)",
    [c.value for c in Confidence],
)
def confidence(d: Decided) -> str:
    """How sure the verdict is."""
    return d.verdict.confidence.value


@VERDICT.fact(
    "verdict.moves_to_gpu",
    FactType.BOOL,
    "the verdict is gpu or multi_gpu and this machine has no GPU that its torch build drives (second pass only)",
)
def moves_to_gpu(d: Decided) -> bool:
    """The verdict moves a CPU user to GPUs: no GPU here that this torch build drives."""
    ctx = d.ctx
    gpu_ready = bool(ctx.get("gpu.count")) and bool(
        ctx.get("software.torch.cuda")
        or ctx.get("software.torch.hip")
        or (ctx.get("gpu.unified_memory") and ctx.get("software.torch.version"))
    )
    return d.verdict.device.value != "cpu" and not gpu_ready
