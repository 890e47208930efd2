"""The evaluation context: one flat ``{dotted.path: value}`` map built from the inputs.

The documents' fields are flattened as they are; every derived fact comes from the
registry that declares it (:mod:`hwadvisor.engine.derived`). A value of ``None`` (or a
path that is absent) means *unknown*. Facts whose probe could not run are unknown,
never ``false``: in particular the CPU feature booleans are unknown when no flags were
read, because the model's ``false`` default would otherwise claim "no AVX-512" about a
machine nobody looked at.
"""

from __future__ import annotations

from hwadvisor.engine.derive import Context, flatten
from hwadvisor.engine.derived import BENCH, ESTIMATES, GPUS, MACHINE, OPTIONS, VERDICT
from hwadvisor.engine.derived.bench import BenchView
from hwadvisor.engine.derived.estimates import QPS_HEADROOM, Estimates, slot_context
from hwadvisor.engine.derived.machine import features_known
from hwadvisor.engine.derived.options import Decided, Options
from hwadvisor.models.advice import Verdict
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.estimate import EstimateReport
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Budget, Scenario, Team, Workload

__all__ = ["QPS_HEADROOM", "Context", "build_context", "with_verdict"]

#: Workload fields that are not facts a rule reads.
_WORKLOAD_EXCLUDED = {"profile", "assumptions", "memory_counts"}


def _facts_part(facts: Facts) -> Context:
    out: Context = {}
    for section in ("host", "cpu", "memory", "software"):
        flatten(getattr(facts, section).model_dump(mode="json"), section, out)
    if not features_known(facts):
        for name in type(facts.cpu.features).model_fields:
            out[f"cpu.features.{name}"] = None
    out.update(MACHINE.compute(facts))
    out.update(GPUS.compute(facts.gpus))
    return out


def _estimate_part(
    report: EstimateReport | None, workload: Workload, gpu_ids: frozenset[str] | None
) -> Context:
    picked = Estimates.of(report, gpu_ids)
    out: Context = {}
    for slot, est in picked.slots.items():
        out.update(slot_context(est, slot, workload))
    out.update(ESTIMATES.compute(picked))
    return out


def build_context(
    *,
    facts: Facts,
    workload: Workload,
    scenario: Scenario,
    bench: BenchReport | None = None,
    estimates: EstimateReport | None = None,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
    gpu_ids: frozenset[str] | None = None,
) -> Context:
    """Everything a rule may read, flattened to dotted paths (``None`` = unknown).

    ``gpu_ids`` names the estimate devices that are GPUs (catalog kind ``gpu``), so that
    ``estimate.best_gpu`` never picks a catalog CPU; None treats every non-``here``
    estimate as a GPU.
    """
    ctx: Context = _facts_part(facts)
    flatten(workload.model_dump(mode="json", exclude=_WORKLOAD_EXCLUDED), "workload", ctx)
    ctx.update(BENCH.compute(BenchView.of(bench)))
    ctx.update(_estimate_part(estimates, workload, gpu_ids))
    ctx.update(OPTIONS.compute(Options(scenario, budget, team)))
    return ctx


def with_verdict(ctx: Context, verdict: Verdict) -> Context:
    """The context of the second pass: the first pass's verdict added as ``verdict.*``."""
    return {**ctx, **VERDICT.compute(Decided(ctx, verdict))}
