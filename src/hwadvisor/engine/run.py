"""Applying a rule set: first pass (findings + verdict), then the second pass (verdict.*).

Rules that read ``verdict.*`` wait for the second pass; the rest run in the first.
Rules are applied in id order and each one reads only the context, so the result does
not depend on the order of files or of rules inside them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.engine.context import Context, with_verdict
from hwadvisor.engine.loader import RuleSet
from hwadvisor.engine.logic import Truth, evidence, trace
from hwadvisor.engine.template import placeholders, render
from hwadvisor.engine.verdict import decide
from hwadvisor.models.advice import MigrationStep, Verdict
from hwadvisor.models.finding import Finding, Severity
from hwadvisor.models.rules import Rule, RuleKind
from hwadvisor.models.workload import Budget, Scenario

_SEVERITY_ORDER = {Severity.CRITICAL: 0, Severity.WARNING: 1, Severity.INFO: 2}


@dataclass
class RuleOutcome:
    """Everything the rules concluded for one context."""

    verdict: Verdict
    findings: list[Finding] = field(default_factory=list)
    migration: list[MigrationStep] = field(default_factory=list)
    fired: list[str] = field(default_factory=list)
    evaluated: int = 0


def second_pass(rule: Rule) -> bool:
    """Whether ``rule`` reads the verdict (and so runs after it is decided)."""
    paths = rule.when.fact_paths() if rule.when is not None else []
    paths += [p.path for p in placeholders(rule.message)]
    return any(p.startswith("verdict.") for p in paths)


def applies(rule: Rule, scenario: Scenario) -> bool:
    """Whether ``rule`` is meant for ``scenario`` (no scenarios listed: all of them)."""
    return not rule.scenarios or scenario in rule.scenarios


def _fire(rule: Rule, ctx: Context) -> tuple[bool, dict[str, object]]:
    if rule.when is None:
        return True, {}
    t = trace(rule.when, ctx)
    return t.truth is Truth.TRUE, evidence(t)


def _finding(rule: Rule, ctx: Context, seen: dict[str, object]) -> Finding:
    ev = dict(seen)
    for ph in placeholders(rule.message):
        if ctx.get(ph.path) is not None:
            ev.setdefault(ph.path, ctx[ph.path])
    return Finding(
        rule=rule.id,
        severity=rule.severity,
        title=rule.title,
        message=render(rule.message, ctx),
        source=list(rule.source),
        evidence=ev,
    )


def apply_rules(ruleset: RuleSet, ctx: Context, scenario: Scenario) -> RuleOutcome:
    """Evaluate every enabled rule for ``scenario`` over ``ctx``."""
    rules = [r for r in ruleset.sorted() if applies(r, scenario)]
    first = [r for r in rules if not second_pass(r)]
    later = [r for r in rules if second_pass(r)]
    fired_first: list[tuple[Rule, dict[str, object]]] = []
    for rule in first:
        ok, seen = _fire(rule, ctx)
        if ok:
            fired_first.append((rule, seen))
    verdict = decide(
        [r for r, _ in fired_first], ctx, scenario, Budget(ctx.get("options.budget") or "normal")
    )
    ctx2 = with_verdict(ctx, verdict)
    fired_later = [(r, seen) for r in later for ok, seen in [_fire(r, ctx2)] if ok]
    out = RuleOutcome(verdict=verdict, evaluated=len(rules))
    for rule, seen in fired_first + fired_later:
        out.fired.append(rule.id)
        if rule.kind is RuleKind.MIGRATION:
            out.migration.append(
                MigrationStep(
                    rule=rule.id,
                    title=rule.title,
                    step=render(rule.message, ctx2),
                    source=list(rule.source),
                )
            )
        else:
            out.findings.append(_finding(rule, ctx2, seen))
    out.findings.sort(key=lambda f: (_SEVERITY_ORDER[f.severity], f.rule))
    out.migration.sort(key=lambda m: m.rule)
    out.fired.sort()
    return out
