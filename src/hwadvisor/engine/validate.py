"""Checks a rule beyond its schema: fact paths, operator/type fit, sources, templates.

Each problem is reported as ``(field, message)`` so the loader can name the file, the
rule id and the field in one line.
"""

from __future__ import annotations

from collections.abc import Iterator

from hwadvisor.engine.guidance import GUIDANCE
from hwadvisor.engine.paths import FactSpec, FactType, lookup, unknown_path_message
from hwadvisor.engine.template import placeholders
from hwadvisor.models.rules import LIST_OPS, ORDER_OPS, VERSION_OPS, Condition, Op, Rule

Problem = tuple[str, str]


def _op_problem(spec: FactSpec, op: Op) -> str | None:
    """Whether operator ``op`` fits the type of the fact it reads."""
    if op in ORDER_OPS and spec.type is not FactType.NUMBER:
        return f"`{op.value}` needs a number, but {spec.path} is a {spec.type.value}"
    if op in VERSION_OPS and spec.type not in (FactType.VERSION, FactType.STRING):
        return f"`{op.value}` needs a version, but {spec.path} is a {spec.type.value}"
    if op is Op.CONTAINS and spec.type is not FactType.LIST:
        return f"`contains` needs a list, but {spec.path} is a {spec.type.value}"
    if spec.type is FactType.LIST and op is not Op.CONTAINS:
        return f"{spec.path} is a list: use `contains` (or `exists`)"
    return None


def _value_problem(spec: FactSpec, op: Op, v: object) -> str | None:
    """Whether the constant ``v`` can be a value of the fact (its type, its choices)."""
    if spec.type is FactType.BOOL and not isinstance(v, bool):
        return f"{spec.path} is true/false, not {v!r}"
    if spec.type is FactType.NUMBER and (isinstance(v, bool) or not isinstance(v, (int, float))):
        return f"{spec.path} is a number, not {v!r}"
    if spec.choices and op in (Op.EQ, Op.NE, *LIST_OPS) and str(v) not in spec.choices:
        return f"{v!r} is not a value of {spec.path} (one of: {', '.join(spec.choices)})"
    return None


def _type_problem(spec: FactSpec, cond: Condition) -> str | None:
    op = cond.op
    assert op is not None
    if op is Op.EXISTS:
        return None
    problem = _op_problem(spec, op)
    if problem:
        return problem
    if isinstance(cond.value, list):
        values = cond.value
    else:
        values = [cond.value] if cond.value is not None else []
    return next((p for v in values if (p := _value_problem(spec, op, v))), None)


def _conditions(cond: Condition, where: str) -> Iterator[tuple[Condition, str]]:
    yield cond, where
    for key, kids in (("all", cond.all), ("any", cond.any)):
        for i, child in enumerate(kids or []):
            yield from _conditions(child, f"{where}.{key}.{i}")
    if cond.not_ is not None:
        yield from _conditions(cond.not_, f"{where}.not")


def _condition_problems(rule: Rule) -> tuple[list[Problem], bool]:
    """Unknown paths and operator/value misfits in the condition; whether it reads verdict.*."""
    problems: list[Problem] = []
    reads_verdict = False
    for cond, where in _conditions(rule.when, "when") if rule.when is not None else []:
        for key in ("fact", "ref"):
            path = getattr(cond, key)
            if path is None:
                continue
            reads_verdict |= path.startswith("verdict.")
            spec = lookup(path)
            if spec is None:
                problems.append((f"{where}.{key}", unknown_path_message(path)))
            elif key == "fact" and (issue := _type_problem(spec, cond)):
                problems.append((f"{where}.op", issue))
    return problems, reads_verdict


def _template_problems(rule: Rule) -> tuple[list[Problem], bool]:
    """Bad placeholders in the message and summary; whether the summary reads verdict.*."""
    problems: list[Problem] = []
    reads_verdict = False
    texts = [("message", rule.message)] + (
        [("verdict.summary", rule.verdict.summary)] if rule.verdict else []
    )
    for field, text in texts:
        try:
            phs = placeholders(text)
        except ValueError as exc:
            problems.append((field, str(exc)))
            continue
        for ph in phs:
            if lookup(ph.path) is None:
                problems.append((field, unknown_path_message(ph.path)))
            reads_verdict |= ph.path.startswith("verdict.") and field == "verdict.summary"
    return problems, reads_verdict


def check_rule(rule: Rule) -> list[Problem]:
    """Every problem with ``rule`` that its schema cannot see."""
    problems: list[Problem] = [
        (f"source.{i}", f"unknown source id {src!r}")
        for i, src in enumerate(rule.source)
        if src not in GUIDANCE
    ]
    in_when, when_reads = _condition_problems(rule)
    in_text, text_reads = _template_problems(rule)
    problems += in_when + in_text
    if rule.verdict is not None and (when_reads or text_reads):
        problems.append(
            ("verdict", "a rule that sets the verdict cannot read verdict.* (it is decided after)")
        )
    return problems
