"""Three-valued evaluation of conditions (Kleene logic): true, false, or unknown.

A leaf whose fact is missing is UNKNOWN, never FALSE, so a rule cannot fire, or be
"not"-ed into firing, on data it does not have. ``all`` is false if any child is false,
else unknown if any is unknown; ``any`` is true if any child is true, else unknown if any
is unknown; ``not`` swaps true and false and keeps unknown. ``exists`` is the one leaf
that is never unknown. Nothing is executed: every operator is a fixed Python function.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from hwadvisor.engine.context import Context
from hwadvisor.engine.versions import compare, parse_version
from hwadvisor.models.rules import Condition, Op


class Truth(str, Enum):
    """A three-valued truth value."""

    TRUE = "true"
    FALSE = "false"
    UNKNOWN = "unknown"

    @classmethod
    def of(cls, value: bool) -> Truth:
        """TRUE or FALSE from a bool."""
        return cls.TRUE if value else cls.FALSE


@dataclass
class Trace:
    """How one node evaluated: for ``rules explain``, and the evidence of a finding."""

    label: str
    truth: Truth
    actual: dict[str, Any] = field(default_factory=dict)
    children: list[Trace] = field(default_factory=list)


def _norm(value: Any) -> Any:
    """Compare enum-like values by their text and numbers as numbers."""
    return value.value if isinstance(value, Enum) else value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b if isinstance(a, bool) and isinstance(b, bool) else False
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return float(a) == float(b)
    if isinstance(a, str) and isinstance(b, str):
        return a.casefold() == b.casefold()
    return bool(a == b)


def _version_op(op: Op, a: Any, b: Any) -> Truth:
    pa, pb = parse_version(a), parse_version(b)
    if pa is None or pb is None:
        return Truth.UNKNOWN
    c = compare(pa, pb)
    result = {
        Op.VERSION_LT: c < 0,
        Op.VERSION_LE: c <= 0,
        Op.VERSION_GT: c > 0,
        Op.VERSION_GE: c >= 0,
    }[op]
    return Truth.of(result)


def _order_op(op: Op, a: Any, b: Any) -> Truth:
    if (
        isinstance(a, bool)
        or isinstance(b, bool)
        or not isinstance(a, (int, float))
        or not isinstance(b, (int, float))
    ):
        return Truth.UNKNOWN
    result = {Op.LT: a < b, Op.LE: a <= b, Op.GT: a > b, Op.GE: a >= b}[op]
    return Truth.of(result)


def compare_leaf(op: Op, actual: Any, expected: Any) -> Truth:
    """Apply ``op`` to a known ``actual`` value and the rule's ``expected`` value."""
    actual, expected = _norm(actual), _norm(expected)
    if op is Op.EQ:
        return Truth.of(_equal(actual, expected))
    if op is Op.NE:
        return Truth.of(not _equal(actual, expected))
    if op in (Op.IN, Op.NOT_IN):
        hit = any(_equal(actual, item) for item in expected)
        return Truth.of(hit if op is Op.IN else not hit)
    if op is Op.CONTAINS:
        if not isinstance(actual, list):
            return Truth.UNKNOWN
        return Truth.of(any(_equal(item, expected) for item in actual))
    if op.value.startswith("version_"):
        return _version_op(op, actual, expected)
    return _order_op(op, actual, expected)


def _leaf(cond: Condition, ctx: Context) -> Trace:
    assert cond.fact is not None and cond.op is not None
    actual = ctx.get(cond.fact)
    label = f"{cond.fact} {cond.op.value}"
    if cond.op is Op.EXISTS:
        wanted = True if cond.value is None else bool(cond.value)
        return Trace(
            f"{label} {str(wanted).lower()}",
            Truth.of((actual is not None) == wanted),
            {cond.fact: actual},
        )
    if cond.ref is not None:
        expected = ctx.get(cond.ref)
        label += f" {cond.ref}"
        seen = {cond.fact: actual, cond.ref: expected}
    else:
        expected = cond.value
        label += f" {json.dumps(expected)}"
        seen = {cond.fact: actual}
    if actual is None or expected is None:
        return Trace(label, Truth.UNKNOWN, seen)
    return Trace(label, compare_leaf(cond.op, actual, expected), seen)


def trace(cond: Condition, ctx: Context) -> Trace:
    """Evaluate ``cond`` over ``ctx``, keeping every node's value for explanation."""
    if cond.fact is not None:
        return _leaf(cond, ctx)
    if cond.not_ is not None:
        inner = trace(cond.not_, ctx)
        flipped = {Truth.TRUE: Truth.FALSE, Truth.FALSE: Truth.TRUE, Truth.UNKNOWN: Truth.UNKNOWN}[
            inner.truth
        ]
        return Trace("not", flipped, children=[inner])
    kids = [trace(c, ctx) for c in cond.children()]
    truths = {k.truth for k in kids}
    if cond.all is not None:
        return Trace("all", _kleene(truths, Truth.FALSE, Truth.TRUE), children=kids)
    return Trace("any", _kleene(truths, Truth.TRUE, Truth.FALSE), children=kids)


def _kleene(truths: set[Truth], decisive: Truth, otherwise: Truth) -> Truth:
    """Three-valued ``all`` (decisive FALSE) or ``any`` (decisive TRUE): the decisive
    truth when one child has it, else unknown when one child is unknown, else the other."""
    if decisive in truths:
        return decisive
    return Truth.UNKNOWN if Truth.UNKNOWN in truths else otherwise


def evaluate(cond: Condition | None, ctx: Context) -> Truth:
    """The truth of ``cond`` over ``ctx``; no condition is always true."""
    return Truth.TRUE if cond is None else trace(cond, ctx).truth


def evidence(t: Trace) -> dict[str, Any]:
    """Every fact a trace read, with its value (known values only, first seen wins)."""
    out: dict[str, Any] = {}
    stack = [t]
    while stack:
        node = stack.pop(0)
        for key, value in node.actual.items():
            if value is not None:
                out.setdefault(key, value)
        stack.extend(node.children)
    return out
