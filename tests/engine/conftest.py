"""Fixtures of the engine tests: saved machines, rule test cases, and a case runner.

Rule test cases live in ``cases/*.yaml`` and are discovered by a glob: adding a case is
adding an entry, never editing a list here. Each case gives a machine (a saved facts
file, or none), overrides, a workload, estimates, bench figures and options; the runner
advises with the shipped rules and reports which rules fired.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from hwadvisor.engine import RuleSet, load_rules
from hwadvisor.models.advice import Advice
from hwadvisor.models.bench import BenchReport, BenchResult, Derived
from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Budget, Scenario, Team, Workload
from hwadvisor.pipeline import advise

HERE = Path(__file__).parent
CASES = HERE / "cases"
FACTS = HERE.parent / "data" / "facts"
MACHINES = sorted(p.stem for p in FACTS.glob("*.json"))
CASE_KEYS = {
    "rule",
    "name",
    "scenario",
    "fires",
    "machine",
    "facts",
    "gpus",
    "workload",
    "estimates",
    "bench",
    "options",
    "verdict",
}


def load_cases() -> list[dict[str, Any]]:
    """Every case of every ``cases/*.yaml`` file, with its file name attached."""
    out: list[dict[str, Any]] = []
    for path in sorted(CASES.glob("*.yaml")):
        for i, case in enumerate(yaml.safe_load(path.read_text(encoding="utf-8")) or []):
            unknown = set(case) - CASE_KEYS
            assert not unknown, f"{path.name} case {i}: unknown keys {sorted(unknown)}"
            out.append({**case, "_file": path.name})
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


def run_case(case: dict[str, Any], rules: RuleSet) -> Advice:
    """Advise on the case's inputs with ``rules``."""
    workload = Workload.model_validate(case.get("workload") or {})
    est_rows = case.get("estimates")
    estimates = (
        EstimateReport(
            workload=workload, estimates=[DeviceEstimate.model_validate(e) for e in est_rows]
        )
        if est_rows
        else None
    )
    options = case.get("options") or {}
    return advise(
        facts=case_facts(case),
        scenario=Scenario(case.get("scenario", "training")),
        workload=workload,
        estimates=estimates,
        bench=case_bench(case),
        rules=rules,
        budget=Budget(options.get("budget", "normal")),
        team=Team(options["team"]) if options.get("team") else None,
    )


def fired(advice: Advice) -> set[str]:
    """Ids of the rules that fired (findings, migration steps and the verdict's rule)."""
    ids = {f.rule for f in advice.findings} | {m.rule for m in advice.migration}
    return ids | ({advice.verdict.rule} if advice.verdict.rule else set())


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
def runner(shipped_rules: RuleSet) -> Callable[[dict[str, Any]], Advice]:
    """Run a case dict with the shipped rules."""
    return lambda case: run_case(case, shipped_rules)


@pytest.fixture(scope="session")
def all_cases() -> list[dict[str, Any]]:
    """Every rule test case found by the glob."""
    return load_cases()


@pytest.fixture
def fired_ids() -> Callable[[Advice], set[str]]:
    """The ids of the rules that fired in an advice."""
    return fired


@pytest.fixture
def facts_of() -> Callable[[str], Facts]:
    """Load a saved machine by name."""
    return saved_facts
