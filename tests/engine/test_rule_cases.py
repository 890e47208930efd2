"""Every rule's YAML test cases, and the meta-tests that keep them and the rules honest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwadvisor.engine import RuleSet
from hwadvisor.engine.guidance import GUIDANCE
from hwadvisor.models.advice import Advice


def test_rule_case(
    rule_case: dict[str, Any],
    runner: Callable[[dict[str, Any]], Advice],
    fired_ids: Callable[[Advice], set[str]],
) -> None:
    advice = runner(rule_case)
    fired = fired_ids
    did_fire = rule_case["rule"] in fired(advice)
    assert did_fire is rule_case["fires"], (
        f"{rule_case['_file']}: {rule_case['rule']} '{rule_case['name']}' expected fires={rule_case['fires']}; "
        f"fired: {sorted(fired(advice))}; verdict {advice.verdict.device.value} by {advice.verdict.rule}"
    )
    if "verdict" in rule_case:
        assert advice.verdict.device.value == rule_case["verdict"]
    # A message never leaks a raw placeholder.
    for f in advice.findings:
        assert "{" not in f.message.replace("{{", ""), f.message


def test_every_rule_has_firing_and_quiet_cases(
    shipped_rules: RuleSet, all_cases: list[dict[str, Any]]
) -> None:
    cases = all_cases
    kinds: dict[str, set[bool]] = {}
    for c in cases:
        kinds.setdefault(c["rule"], set()).add(bool(c["fires"]))
    missing = {rid: sorted({True, False} - kinds.get(rid, set())) for rid in shipped_rules.rules}
    missing = {rid: m for rid, m in missing.items() if m}
    assert not missing, f"rules lacking cases (fires=...): {missing}"


def test_every_case_names_a_real_rule(
    shipped_rules: RuleSet, all_cases: list[dict[str, Any]]
) -> None:
    stray = sorted({c["rule"] for c in all_cases} - set(shipped_rules.rules))
    assert not stray, f"cases name rules that do not exist: {stray}"


def test_every_guidance_id_is_cited(shipped_rules: RuleSet) -> None:
    cited = {s for r in shipped_rules.rules.values() for s in r.source}
    assert set(GUIDANCE) - cited == set(), (
        f"GUIDANCE ids no rule cites: {sorted(set(GUIDANCE) - cited)}"
    )


def test_guidance_ids_match_the_shared_document() -> None:
    import re
    from pathlib import Path

    doc = Path(__file__).resolve().parents[3] / "shared" / "GUIDANCE.md"
    if not doc.exists():
        import pytest

        pytest.skip("shared/GUIDANCE.md is not beside this checkout")
    ids = set(re.findall(r"\*\*([A-Z][0-9])\b", doc.read_text(encoding="utf-8")))
    assert ids == set(GUIDANCE)
