"""The one orchestration path: the CLI calls these functions, and nothing else runs stages.

``inputs`` reads the saved documents and runs the two stages that touch the machine (the
probe, the microbenchmark); ``advice`` is the pure step (facts, bench figures, workload
and estimates in, advice out); ``commands`` has one function per command joining them.
The estimator (``hwadvisor.estimate``) and the rule engine (``hwadvisor.engine``) are
pure and never call back here; nothing here prints or exits (that is ``hwadvisor.cli``).
The options arrive as the typed objects of :mod:`hwadvisor.models.options`
(``WorkloadOptions``, ``PricingOptions``, ``RunOptions``), and ``rows`` keeps the rows of
one workload estimated once, for ``estimate``'s table and its guidance alike.

Per command: :func:`check_here`, :func:`bench_here`, :func:`recommend`,
:func:`estimate`, :func:`explain_rule`. The pieces, for callers that assemble their own
run (``fleet``, the tests): :func:`load_facts`, :func:`load_bench`, :func:`load_rules`,
:func:`probe_here`, :func:`quick_bench`, :func:`workload_for`,
:func:`estimate_for_advice`, :func:`advise`, :func:`guidance`, :func:`rule_context`.
"""

from __future__ import annotations

from hwadvisor.pipeline.advice import (
    MULTI_GPU_COUNT,
    MULTI_GPUS,
    SINGLE_GPUS,
    advise,
    catalog_gpu_ids,
    estimate_for_advice,
    explain_in_context,
    rule_context,
)
from hwadvisor.pipeline.commands import (
    Checked,
    Recommended,
    bench_here,
    check_here,
    estimate,
    explain_rule,
    guidance,
    recommend,
)
from hwadvisor.pipeline.inputs import (
    INFER_SCENARIOS,
    BenchAttempt,
    Progress,
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

__all__ = [
    "INFER_SCENARIOS",
    "MULTI_GPUS",
    "MULTI_GPU_COUNT",
    "SINGLE_GPUS",
    "BenchAttempt",
    "Checked",
    "Progress",
    "ProgressScope",
    "Recommended",
    "advise",
    "bench_here",
    "bench_into_facts",
    "catalog_gpu_ids",
    "check_here",
    "estimate",
    "estimate_for_advice",
    "explain_in_context",
    "explain_rule",
    "guidance",
    "load_bench",
    "load_facts",
    "load_rules",
    "no_progress",
    "probe_here",
    "probe_or_none",
    "quick_bench",
    "recommend",
    "rule_context",
    "scenario_for",
    "workload_for",
]
