"""Every rule's YAML test cases, and the meta-tests that keep them and the rules honest."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hwadvisor.engine import RuleSet
from hwadvisor.engine.guidance import GUIDANCE

#: A case's run (``conftest.CaseRun``): verdict, findings, migration, fired, explanation.
CaseRun = Any
Runner = Callable[[dict[str, Any]], CaseRun]
WeakCheck = Callable[[dict[str, Any], CaseRun], "str | None"]


def _check_message(case: dict[str, Any], run: CaseRun) -> None:
    """``message: TEXT``: the rule's finding or checklist step contains TEXT."""
    texts = [f.message for f in run.findings if f.rule == case["rule"]]
    texts += [m.step for m in run.migration if m.rule == case["rule"]]
    if run.verdict.rule == case["rule"]:
        texts.append(run.verdict.summary)
    assert any(case["message"] in t for t in texts), (
        f"{case['rule']} '{case['name']}': no message contains {case['message']!r}: {texts}"
    )


def _check_evidence(case: dict[str, Any], run: CaseRun) -> None:
    """``evidence: {path: value}``: the rule's finding carries those facts and values."""
    found = next((f for f in run.findings if f.rule == case["rule"]), None)
    assert found is not None, f"{case['rule']} '{case['name']}': no finding to hold evidence"
    wrong = {
        k: found.evidence.get(k) for k, v in case["evidence"].items() if found.evidence.get(k) != v
    }
    assert not wrong, f"{case['rule']} '{case['name']}': evidence differs: {wrong}"


def test_rule_case(rule_case: dict[str, Any], runner: Runner) -> None:
    run = runner(rule_case)
    case = rule_case
    where = f"{case['_file']}: {case['rule']} '{case['name']}'"
    assert run.observed == case["expect"], (
        f"{where}: expected {case['expect']}, evaluated {run.observed}; fired: "
        f"{sorted(run.fired)}; verdict {run.verdict.device.value} by {run.verdict.rule}"
    )
    assert (case["rule"] in run.fired) is (run.observed == "true"), f"{where}: fired != true"
    if "verdict" in case:
        assert run.verdict.device.value == case["verdict"], where
    if "message" in case:
        _check_message(case, run)
    if "message_absent" in case:
        # ``message_absent: TEXT``: no message of the rule says TEXT (a clause left out).
        said = [f.message for f in run.findings if f.rule == case["rule"]]
        assert not any(case["message_absent"] in t for t in said), (case["name"], said)
    if "evidence" in case:
        _check_evidence(case, run)
    # A message never leaks a raw placeholder.
    for f in run.findings:
        assert "{" not in f.message.replace("{{", ""), f.message


def test_no_negative_case_passes_for_want_of_facts(
    all_cases: list[dict[str, Any]], runner: Runner, weak_negative: WeakCheck
) -> None:
    """An ``expect: false`` case must make the condition false, in the rule's scenario."""
    weak = []
    for case in all_cases:
        why = weak_negative(case, runner(case))
        if why:
            weak.append(f"{case['_file']}: {case['rule']} '{case['name']}': {why}")
    assert not weak, "negative cases that test nothing (give the facts that make the " + (
        "condition false, or say expect: unknown / outside):\n" + "\n".join(weak)
    )


@pytest.mark.parametrize(
    ("case", "why"),
    [
        ({"rule": "HW303", "name": "MIG unknown", "gpus": [{"name": "A100"}]}, "unknown"),
        ({"rule": "HW101", "name": "training", "machine": "laptop"}, "outside"),
        ({"rule": "HW303", "name": "MIG off", "gpus": [{"mig_enabled": False}]}, None),
    ],
)
def test_the_weak_negative_check_refuses_unknown_and_outside(
    case: dict[str, Any], why: str | None, runner: Runner, weak_negative: WeakCheck
) -> None:
    case = {**case, "expect": "false", "scenario": "training"}
    found = weak_negative(case, runner(case))
    if why is None:
        assert found is None
    else:
        assert found is not None and why in found


def test_every_rule_has_a_true_and_a_false_case(
    shipped_rules: RuleSet, all_cases: list[dict[str, Any]]
) -> None:
    """A rule with a condition needs a case where it is true and one where it is false.

    A rule without one (``when`` omitted) is true wherever it applies: its negative is a
    scenario it does not apply to (``expect: outside``).
    """
    kinds: dict[str, set[str]] = {}
    for c in all_cases:
        kinds.setdefault(c["rule"], set()).add(c["expect"])
    missing = {}
    for rid, rule in shipped_rules.rules.items():
        need = {"true", "false"} if rule.when is not None else {"true", "outside"}
        if need - kinds.get(rid, set()):
            missing[rid] = sorted(need - kinds.get(rid, set()))
    assert not missing, f"rules lacking cases (expect: ...): {missing}"


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
