"""Fixtures of the engine tests: saved machines, rule test cases, and a case runner.

Rule test cases live in ``cases/*.yaml`` and are discovered by a glob: adding a case is
adding an entry, never editing a list here. Each case gives a machine (a saved facts
file, or none), overrides, a workload, estimates (with their costs), the priced report's
picks, bench figures and options, and what
the case's rule must evaluate to there (``expect``). The runner builds the context,
applies the shipped rules (both passes) and explains the case's rule over the context
it was evaluated in, so a case checks the rule's three-valued truth, not only whether
it fired.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.engine import Explanation, RuleSet, apply_rules, build_context, explain, load_rules
from hwadvisor.engine.context import with_verdict
from hwadvisor.engine.run import second_pass
from hwadvisor.io import load_yaml
from hwadvisor.models.advice import MigrationStep, Verdict
from hwadvisor.models.bench import BenchReport, BenchResult, Derived
from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
from hwadvisor.models.facts import Facts
from hwadvisor.models.finding import Finding
from hwadvisor.models.workload import Budget, Scenario, Team, Workload

HERE = Path(__file__).parent
CASES = HERE / "cases"
FACTS = HERE.parent / "data" / "facts"
MACHINES = sorted(p.stem for p in FACTS.glob("*.json"))
CASE_KEYS = {
    "rule",
    "name",
    "scenario",
    "expect",
    "message",
    "message_absent",
    "evidence",
    "machine",
    "facts",
    "gpus",
    "workload",
    "estimates",
    "bench",
    "options",
    "verdict",
    "picks",
}
#: What a case's rule may evaluate to: its condition's truth, or ``outside`` when the
#: case's scenario is not one of the rule's (the rule is then never evaluated).
EXPECTATIONS = ("true", "false", "unknown", "outside")


def _expectation(case: dict[str, Any], where: str) -> str:
    """``expect`` as text: YAML reads ``true``/``false`` as booleans, the rest as words."""
    assert "fires" not in case, f"{where}: 'fires' is gone; say expect: {'|'.join(EXPECTATIONS)}"
    value = case.get("expect")
    text = str(value).lower() if isinstance(value, bool) else value
    assert text in EXPECTATIONS, f"{where}: expect must be one of {EXPECTATIONS}, not {value!r}"
    return str(text)


def load_cases() -> list[dict[str, Any]]:
    """Every case of every ``cases/*.yaml`` file, with its file name attached."""
    out: list[dict[str, Any]] = []
    for path in sorted(CASES.glob("*.yaml")):
        for i, case in enumerate(load_yaml(path.read_text(encoding="utf-8")) or []):
            where = f"{path.name} case {i} ({case.get('rule')} {case.get('name')!r})"
            unknown = set(case) - CASE_KEYS - {"fires"}
            assert not unknown, f"{where}: unknown keys {sorted(unknown)}"
            out.append({**case, "expect": _expectation(case, where), "_file": path.name})
    return out


def saved_facts(name: str) -> Facts:
    """The saved facts of machine ``name`` (``tests/data/facts/<name>.json``)."""
    return Facts.model_validate(json.loads((FACTS / f"{name}.json").read_text(encoding="utf-8")))


def _merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        out[key] = (
            _merge(out[key], value)
            if isinstance(value, dict) and isinstance(out.get(key), dict)
            else value
        )
    return out


def case_facts(case: dict[str, Any]) -> Facts:
    """The case's machine: a saved one or an empty one, with its overrides merged in."""
    base = (
        saved_facts(case["machine"]).model_dump(mode="json")
        if case.get("machine")
        else Facts().model_dump(mode="json")
    )
    data = _merge(base, case.get("facts") or {})
    if "gpus" in case:
        data["gpus"] = [{"index": i, "vendor": "nvidia", **g} for i, g in enumerate(case["gpus"])]
    return Facts.model_validate(data)


def case_bench(case: dict[str, Any]) -> BenchReport | None:
    """Bench figures ``{"cpu.matmul.fp32": 300.0}`` and ratios ``{"cpu.load_over_threads": 3.0}`` as a report."""
    figures = case.get("bench")
    if not figures:
        return None
    results, derived = [], []
    for key, value in figures.items():
        if key.count(".") == 1:
            derived.append(Derived(id=key, ratio=value, text=key))
            continue
        device, kernel, dtype = key.split(".")
        results.append(
            BenchResult(
                device=device,
                kernel=kernel,
                dtype=dtype,
                shape=[1024],
                value=value,
                unit="GB/s" if kernel in ("copy", "triad") else "GFLOP/s",
                median_s=0.01,
                iqr_s=0.0,
                runs=5,
            )
        )
    return BenchReport(budget_s=1.0, elapsed_s=1.0, results=results, derived=derived)


@dataclass
class CaseRun:
    """What the shipped rules concluded for one case, and how the case's rule evaluated."""

    verdict: Verdict
    findings: list[Finding]
    migration: list[MigrationStep]
    fired: set[str]
    explanation: Explanation

    @property
    def observed(self) -> str:
        """The case's rule: ``outside`` its scenarios, else its condition's truth."""
        exp = self.explanation
        return exp.truth.value if exp.applies else "outside"


def _catalog_gpu_ids() -> frozenset[str]:
    """Catalog ids of kind ``gpu`` (so ``estimate.best_gpu`` never picks a catalog CPU)."""
    return frozenset(d.id for d in load_devices().values() if d.kind.value == "gpu")


def run_case(case: dict[str, Any], rules: RuleSet) -> CaseRun:
    """Apply ``rules`` to the case's inputs and explain the case's rule."""
    workload = Workload.model_validate(case.get("workload") or {})
    est_rows = case.get("estimates")
    estimates = (
        EstimateReport(
            workload=workload,
            estimates=[DeviceEstimate.model_validate(e) for e in est_rows],
            # The priced report's picks (cheapest, fastest, budget_low, ...), as pricing gives them.
            **(case.get("picks") or {}),
        )
        if est_rows
        else None
    )
    options = case.get("options") or {}
    facts = case_facts(case)
    scenario = Scenario(case.get("scenario", "training"))
    ctx = build_context(
        facts=facts,
        workload=workload,
        scenario=scenario,
        bench=case_bench(case) or facts.bench,
        estimates=estimates,
        budget=Budget(options.get("budget", "normal")),
        team=Team(options["team"]) if options.get("team") else None,
        gpu_ids=_catalog_gpu_ids(),
    )
    outcome = apply_rules(rules, ctx, scenario)
    rule = rules.rules[case["rule"]]
    read = with_verdict(ctx, outcome.verdict) if second_pass(rule) else ctx
    fired = set(outcome.fired) | ({outcome.verdict.rule} if outcome.verdict.rule else set())
    return CaseRun(
        verdict=outcome.verdict,
        findings=outcome.findings,
        migration=outcome.migration,
        fired=fired,
        explanation=explain(rule, read, scenario),
    )


def why_weak(case: dict[str, Any], run: CaseRun) -> str | None:
    """Why an ``expect: false`` case does not test its rule's negative, or None if it does.

    A negative passes for three reasons and only one of them tests the rule: its
    condition is false. Unknown (a fact missing) or outside (another scenario) would pass
    whatever the condition said.
    """
    if case["expect"] != "false" or run.observed == "false":
        return None
    if run.observed == "outside":
        scen = ", ".join(s.value for s in run.explanation.rule.scenarios)
        return f"scenario {case.get('scenario', 'training')} is outside the rule's ({scen})"
    missing = sorted(
        {
            path
            for line in run.explanation.lines
            if line.truth.value == "unknown"
            for path, value in line.actual.items()
            if value is None
        }
    )
    return f"the condition is {run.observed} (unknown: {', '.join(missing) or 'none'})"


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize ``rule_case`` over every case found by the glob."""
    if "rule_case" in metafunc.fixturenames:
        cases = load_cases()
        metafunc.parametrize(
            "rule_case", cases, ids=[f"{c['rule']}-{c['name']}".replace(" ", "_") for c in cases]
        )


@pytest.fixture(scope="session")
def shipped_rules() -> RuleSet:
    """The shipped rules only (no HWADVISOR_RULES_PATH from the environment)."""
    return load_rules(env={})


@pytest.fixture
def runner(shipped_rules: RuleSet) -> Callable[[dict[str, Any]], CaseRun]:
    """Run a case dict with the shipped rules."""
    return lambda case: run_case(case, shipped_rules)


@pytest.fixture(scope="session")
def all_cases() -> list[dict[str, Any]]:
    """Every rule test case found by the glob."""
    return load_cases()


@pytest.fixture
def weak_negative() -> Callable[[dict[str, Any], CaseRun], str | None]:
    """Why an ``expect: false`` case tests nothing (unknown, or outside), or None."""
    return why_weak


@pytest.fixture
def facts_of() -> Callable[[str], Facts]:
    """Load a saved machine by name."""
    return saved_facts
