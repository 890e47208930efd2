"""``hwadvisor rules explain``: a rule's condition, node by node, with the actual values."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hwadvisor.engine.context import Context
from hwadvisor.engine.logic import Trace, Truth, trace
from hwadvisor.engine.run import applies
from hwadvisor.models.rules import Rule
from hwadvisor.models.workload import Scenario


@dataclass
class ExplainLine:
    """One node of the explanation, indented by its depth."""

    depth: int
    label: str
    truth: Truth
    actual: dict[str, Any] = field(default_factory=dict)


@dataclass
class Explanation:
    """Why a rule did or did not fire for one context and scenario."""

    rule: Rule
    scenario: Scenario
    applies: bool
    truth: Truth
    lines: list[ExplainLine] = field(default_factory=list)

    @property
    def fires(self) -> bool:
        """The rule fires: it applies to the scenario and its condition is true."""
        return self.applies and self.truth is Truth.TRUE


def _flatten(t: Trace, depth: int, out: list[ExplainLine]) -> None:
    out.append(ExplainLine(depth, t.label, t.truth, dict(t.actual)))
    for child in t.children:
        _flatten(child, depth + 1, out)


def explain(rule: Rule, ctx: Context, scenario: Scenario) -> Explanation:
    """Evaluate ``rule`` over ``ctx`` keeping every node's value and inputs."""
    ok = applies(rule, scenario)
    if rule.when is None:
        return Explanation(
            rule, scenario, ok, Truth.TRUE, [ExplainLine(0, "(no condition: always)", Truth.TRUE)]
        )
    t = trace(rule.when, ctx)
    lines: list[ExplainLine] = []
    _flatten(t, 0, lines)
    return Explanation(rule, scenario, ok, t.truth, lines)
