"""Findings that cannot contradict each other (issue 14.4).

Every rule is run over every recorded machine (``tests/data/facts``, the probed hosts of
``tests/data/hosts`` and ``tests/data/gpu_hosts``, the synthetic GPU machines of
``tests/data/reports``) with every recorded bench report (none, the machine's own, the
edge cases of ``tests/data/bench``, the recorded ``tests/render/data`` run), for every
scenario, with the estimator's real figures (the quick suite: every report on three
machines, none and their own on the rest; the slow step: every pair). Whatever fires together must agree: the
rules' machine-readable ``recommends`` tags are compared, not their words, and so are the
bench's own conclusions ("prefer fp32 here" is avoiding that format on the CPU). A
verdict rule recommends its device.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest
from tests.engine.recorded import recorded_machines

from hwadvisor.engine import RuleSet
from hwadvisor.estimate import build_workload
from hwadvisor.models.advice import Advice
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.facts import Facts
from hwadvisor.models.rules import Numeric, Recommends, Scope
from hwadvisor.models.workload import Scenario, Workload
from hwadvisor.pipeline import advise, estimate_for_advice

DATA = Path(__file__).parents[1] / "data"
RECORDED_BENCH = Path(__file__).parents[1] / "render" / "data" / "bench-epyc-kvm.json"

#: Two workloads per scenario where the advice can go either way: a tiny job and a big one.
WORKLOADS: dict[Scenario, list[dict[str, Any]]] = {
    Scenario.PROTOTYPING: [
        {"model": "resnet50", "task": "train", "dataset_size": 1000, "epochs": 1}
    ],
    Scenario.TRAINING: [
        {
            "model": "resnet50",
            "task": "train",
            "dataset_size": 1281167,
            "epochs": 1,
            "deadline_hours": 8,
        },
        {
            "params": 1_000_000,
            "flops_per_sample": 2_000_000,
            "dataset_size": 10_000,
            "epochs": 1,
            "deadline_hours": 1,
        },
        {
            "model": "llama-7b",
            "task": "train",
            "dataset_size": 100000,
            "epochs": 1,
            "deadline_hours": 24,
        },
    ],
    Scenario.DISTRIBUTED: [
        {"model": "llama-7b", "task": "train", "dataset_size": 100000, "epochs": 1}
    ],
    Scenario.INFERENCE: [
        {"model": "bert-base", "task": "infer", "qps": 5},
        {"model": "bert-base", "task": "infer", "qps": 300, "latency_ms": 10},
    ],
    Scenario.EDGE: [{"model": "yolov5n", "task": "infer", "latency_ms": 100, "batch_size": 1}],
    Scenario.PREPROCESSING: [{"task": "train"}],
}


@cache
def machines() -> dict[str, Facts]:
    """Every recorded machine, by a name for the test id."""
    return recorded_machines(synthetic=True)


@cache
def benches() -> dict[str, BenchReport | None]:
    """Every recorded bench report (and none), by name; the machine's own is added per test."""
    out: dict[str, BenchReport | None] = {"none": None}
    for p in [*sorted((DATA / "bench").glob("*.json")), RECORDED_BENCH]:
        out[p.stem] = BenchReport.model_validate_json(p.read_text(encoding="utf-8"))
    return out


@cache
def workload(scenario: Scenario, i: int) -> Workload:
    return build_workload(**WORKLOADS[scenario][i])


def _evidence_tags(report: BenchReport | None) -> list[tuple[str, Recommends]]:
    """The bench's own conclusions as tags: a CPU format it says to avoid ("prefer fp32")."""
    out = []
    for d in report.derived if report is not None else []:
        device, _, what = d.id.partition(".")
        dtype = what.removesuffix("_over_fp32")
        formats = {n.value for n in Numeric}
        if device == "cpu" and dtype in formats and "prefer fp32" in d.text:
            tag = Recommends(where=Scope.CPU, avoid=[Numeric(dtype)])
            out.append((f"bench evidence {d.id}", tag))
    return out


def contradictions(advice: Advice, rules: RuleSet) -> list[str]:
    """Every pair of fired findings (and bench conclusions) whose tags disagree."""
    fired = {f.rule for f in advice.findings} | {m.rule for m in advice.migration}
    if advice.verdict.rule:
        fired.add(advice.verdict.rule)
    tagged = [(rid, rules.rules[rid].recommendation()) for rid in sorted(fired)]
    said = [(rid, tag) for rid, tag in tagged if tag is not None] + _evidence_tags(advice.bench)
    out = []
    for i, (a, ta) in enumerate(said):
        for b, tb in said[i + 1 :]:
            out += [f"{a} vs {b}: {c}" for c in ta.conflicts(tb)]
    return out


#: The machines the quick suite runs with every bench report: a CPU laptop, a CPU server
#: with AMX, a cloud GPU. The others get none and their own there; the slow step runs
#: every machine with every report.
EVERY_BENCH_ON = ("facts/laptop", "facts/cpu-server-amx", "facts/t4-cloud")


def _cases(*, full: bool) -> list[Any]:
    params = []
    for machine, facts in machines().items():
        if full or machine in EVERY_BENCH_ON:
            names = [*benches(), *(["own"] if facts.bench is not None else [])]
        else:
            names = ["none", *(["own"] if facts.bench is not None else [])]
        for scenario, rows in WORKLOADS.items():
            for i in range(len(rows)):
                case = (machine, scenario, i, tuple(names))
                params.append(pytest.param(*case, id=f"{machine}-{scenario.value}-{i}"))
    return params


def _check(
    machine: str, scenario: Scenario, i: int, names: tuple[str, ...], rules: RuleSet
) -> None:
    facts = machines()[machine]
    wl = workload(scenario, i)
    runs = {**benches(), "own": facts.bench}
    problems = []
    for name in names:
        bench = runs[name]
        estimates = estimate_for_advice(wl, facts=facts, bench=bench)
        advice = advise(
            facts=facts,
            scenario=scenario,
            workload=wl,
            estimates=estimates,
            bench=bench,
            rules=rules,
        )
        problems += [f"bench {name}: {c}" for c in contradictions(advice, rules)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize(("machine", "scenario", "i", "names"), _cases(full=False))
def test_fired_findings_never_recommend_opposite_things(
    machine: str, scenario: Scenario, i: int, names: tuple[str, ...], shipped_rules: RuleSet
) -> None:
    _check(machine, scenario, i, names, shipped_rules)


@pytest.mark.slow  # every machine with every bench report: 1,700 advice runs
@pytest.mark.parametrize(("machine", "scenario", "i", "names"), _cases(full=True))
def test_no_machine_and_bench_pair_recommends_opposite_things(
    machine: str, scenario: Scenario, i: int, names: tuple[str, ...], shipped_rules: RuleSet
) -> None:
    _check(machine, scenario, i, names, shipped_rules)


def test_the_grid_covers_the_edges() -> None:
    # The fixtures exist and say what they are meant to: each edge is in some bench file.
    ratios: dict[str, set[str]] = {}
    for name, report in benches().items():
        for d in report.derived if report is not None else []:
            if d.id in ("cpu.bf16_over_fp32", "cpu.int8_over_fp32"):
                side = "faster" if d.ratio >= 1.5 else "slower" if d.ratio < 1.2 else "middle"
                ratios.setdefault(f"{d.id}:{side}", set()).add(name)
    wanted = {
        "cpu.bf16_over_fp32:faster",
        "cpu.bf16_over_fp32:slower",
        "cpu.int8_over_fp32:faster",
        "cpu.int8_over_fp32:slower",
    }
    assert wanted <= set(ratios), sorted(ratios)
    unreliable = [
        n
        for n, r in benches().items()
        if r is not None and any(x.reliable is False for x in r.results)
    ]
    assert len(unreliable) >= 2
    kinds = {m.split("/")[0] for m in machines()}
    assert kinds == {"facts", "reports", "hosts", "gpu_hosts"}
    assert any(f.gpus for f in machines().values()) and any(not f.gpus for f in machines().values())
    assert set(EVERY_BENCH_ON) <= set(machines())


def test_a_contradiction_is_caught_by_the_tags() -> None:
    # The check itself: the issue's own pair (int8 "324x slower, prefer fp32" beside
    # "INT8 is the fastest path here") disagrees by tag.
    slow = Recommends(where=Scope.CPU, avoid=[Numeric.INT8])
    fast = Recommends(where=Scope.CPU, prefer=[Numeric.INT8])
    assert fast.conflicts(slow) == ["int8 on cpu: preferred and avoided"]
    assert Recommends(where=Scope.GPU, prefer=[Numeric.INT8]).conflicts(slow) == []
    from hwadvisor.models.advice import DeviceClass

    assert Recommends(device=DeviceClass.CPU).conflicts(Recommends(device=DeviceClass.GPU))
