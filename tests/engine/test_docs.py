"""docs/rules.md is generated from the rules and kept up to date; writing-rules.md exists."""

from __future__ import annotations

import runpy
from pathlib import Path

from hwadvisor.engine import RuleSet

ROOT = Path(__file__).resolve().parents[2]


def test_rules_doc_is_up_to_date() -> None:
    render = runpy.run_path(str(ROOT / "scripts" / "gen_rules_doc.py"))["render_doc"]
    committed = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    assert committed == render(), (
        "docs/rules.md is out of date: run .venv/bin/python scripts/gen_rules_doc.py"
    )


def test_every_rule_is_documented(shipped_rules: RuleSet) -> None:
    text = (ROOT / "docs" / "rules.md").read_text(encoding="utf-8")
    for rid, rule in shipped_rules.rules.items():
        assert f"### {rid}: {rule.title}" in text


def test_writing_rules_guide_names_every_operator_and_filter() -> None:
    from hwadvisor.engine.template import FILTERS
    from hwadvisor.models.rules import Op

    text = (ROOT / "docs" / "writing-rules.md").read_text(encoding="utf-8")
    for op in Op:
        assert f"`{op.value}`" in text, op
    for name in FILTERS:
        assert f"`{name}`" in text, name
