"""Property tests of the engine: determinism, order independence, unknown never fires,
and hostile rules files rejected cleanly."""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hwadvisor.engine import RuleSet, Truth, apply_rules, build_context, evaluate, parse_rules_text
from hwadvisor.errors import RulesError
from hwadvisor.models.facts import Facts
from hwadvisor.models.rules import Condition
from hwadvisor.models.workload import Scenario, Workload

FACTS = Path(__file__).parents[1] / "data" / "facts"
PATHS = [
    "cpu.usable_cores",
    "gpu.count",
    "memory.total_bytes",
    "estimate.here.total_time_s",
    "workload.qps",
]
OPS = ["==", "!=", "<", "<=", ">", ">="]

leaves = st.builds(
    lambda f, o, v: {"fact": f, "op": o, "value": v},
    st.sampled_from(PATHS),
    st.sampled_from(OPS),
    st.integers(-5, 50),
)
conditions = st.recursive(
    leaves,
    lambda kids: st.one_of(
        st.builds(lambda k: {"all": k}, st.lists(kids, min_size=1, max_size=4)),
        st.builds(lambda k: {"any": k}, st.lists(kids, min_size=1, max_size=4)),
        st.builds(lambda k: {"not": k}, kids),
    ),
    max_leaves=12,
)
contexts = st.dictionaries(st.sampled_from(PATHS), st.one_of(st.none(), st.integers(-5, 50)))


@given(conditions)
def test_unknown_facts_never_make_a_condition_true(cond: dict[str, Any]) -> None:
    # Without `exists`, a condition over facts nobody measured is unknown, never true,
    # however it is negated or combined.
    assert evaluate(Condition.model_validate(cond), {}) is Truth.UNKNOWN


@given(conditions, contexts)
def test_evaluation_is_deterministic(cond: dict[str, Any], ctx: dict[str, Any]) -> None:
    c = Condition.model_validate(cond)
    assert evaluate(c, ctx) is evaluate(c, dict(reversed(list(ctx.items()))))


@given(conditions, contexts)
def test_adding_a_fact_never_turns_true_into_false(
    cond: dict[str, Any], ctx: dict[str, Any]
) -> None:
    # Monotonicity of Kleene logic: learning a missing fact only resolves unknowns.
    c = Condition.model_validate(cond)
    partial = {k: v for k, v in ctx.items() if v is not None}
    fewer = dict(list(partial.items())[: len(partial) // 2])
    before, after = evaluate(c, fewer), evaluate(c, partial)
    if before is not Truth.UNKNOWN:
        assert after is before


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.randoms(use_true_random=False),
    st.sampled_from(list(Scenario)),
    st.sampled_from(sorted(p.stem for p in FACTS.glob("*.json"))),
)
def test_outcome_does_not_depend_on_rule_order(
    shipped_rules: RuleSet, rnd: random.Random, scenario: Scenario, machine: str
) -> None:
    facts = Facts.model_validate(json.loads((FACTS / f"{machine}.json").read_text()))
    ctx = build_context(facts=facts, workload=Workload(), scenario=scenario)
    ids = list(shipped_rules.rules)
    rnd.shuffle(ids)
    shuffled = RuleSet(
        rules={i: shipped_rules.rules[i] for i in ids}, origin=dict(shipped_rules.origin)
    )
    a, b = apply_rules(shipped_rules, ctx, scenario), apply_rules(shuffled, ctx, scenario)
    assert a.verdict == b.verdict and a.findings == b.findings and a.migration == b.migration


def _nest(depth: int) -> dict[str, Any]:
    node: dict[str, Any] = {"fact": "gpu.count", "op": ">", "value": 0}
    for _ in range(depth):
        node = {"not": node}
    return node


def _rule_file(when: Any) -> str:
    rule = {
        "id": "XX001",
        "title": "t",
        "message": "m",
        "source": ["W1"],
        "rationale": "r",
        "when": when,
    }
    return yaml.safe_dump({"rules": [rule]})


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=30, max_value=120))
def test_deep_nesting_is_refused(depth: int) -> None:
    try:
        parse_rules_text(_rule_file(_nest(depth)), where="deep.yaml")
    except RulesError as exc:
        assert "deep.yaml" in exc.line()
    else:
        raise AssertionError("a condition nested this deep must be refused")


@settings(max_examples=15, deadline=None)
@given(st.integers(min_value=65, max_value=500))
def test_huge_lists_are_refused(size: int) -> None:
    when = {"fact": "options.budget", "op": "in", "value": ["low"] * size}
    try:
        parse_rules_text(_rule_file(when), where="big.yaml")
    except RulesError as exc:
        assert "limit" in exc.line() or "at most" in exc.line()
    else:
        raise AssertionError("a list this long must be refused")


@given(
    st.sampled_from(
        [
            "__import__('os').system('id')",
            "eval",
            "lambda: 0",
            "os.system",
            "cpu.__class__",
            "exec(open('x'))",
        ]
    ),
    st.sampled_from(["fact", "op", "message", "ref"]),
)
def test_code_strings_are_refused_wherever_they_appear(code: str, where: str) -> None:
    when: dict[str, Any] = {"fact": "gpu.count", "op": ">", "value": 0}
    message = "m"
    if where == "message":
        message = "{" + code + "}"
    elif where == "ref":
        when = {"fact": "gpu.count", "op": ">", "ref": code}
    else:
        when[where] = code
    rule = {
        "id": "XX001",
        "title": "t",
        "message": message,
        "source": ["W1"],
        "rationale": "r",
        "when": when,
    }
    try:
        parse_rules_text(yaml.safe_dump({"rules": [rule]}), where="evil.yaml")
    except RulesError as exc:
        assert "evil.yaml" in exc.line()
    else:
        raise AssertionError(f"{code!r} in {where} must be refused")


@given(st.text(max_size=300))
def test_arbitrary_text_is_a_rules_error_or_valid(text: str) -> None:
    with contextlib.suppress(RulesError):
        parse_rules_text(text, where="junk.yaml")


@given(
    st.recursive(
        st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=10)),
        lambda kids: st.one_of(
            st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=6), kids, max_size=4)
        ),
        max_leaves=30,
    )
)
def test_arbitrary_documents_are_a_rules_error_or_valid(data: Any) -> None:
    with contextlib.suppress(RulesError):
        parse_rules_text(yaml.safe_dump({"rules": [data]}), where="junk.yaml")


def _has_exists(cond: Condition) -> bool:
    if cond.op is not None and cond.op.value == "exists":
        return True
    return any(_has_exists(c) for c in cond.children())


def test_no_shipped_rule_fires_on_nothing(shipped_rules: RuleSet) -> None:
    # A condition that never asks "is it missing?" cannot be true when nothing is known.
    for rule in shipped_rules.rules.values():
        if rule.when is not None and not _has_exists(rule.when):
            assert evaluate(rule.when, {}) is Truth.UNKNOWN, rule.id
