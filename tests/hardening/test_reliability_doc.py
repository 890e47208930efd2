"""docs/reliability.md stays true: every test it names exists, and its counts are the
tables' real sizes."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
DOC = (ROOT / "docs" / "reliability.md").read_text()


def _module(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(f"_doc_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_named_test_exists() -> None:
    named = re.findall(r"((?:tests/[\w/]+/)?test_\w+\.py)::(\w+)", DOC)
    assert len(named) > 20
    for file, func in named:
        path = ROOT / file if file.startswith("tests/") else HERE / file
        assert path.is_file(), file
        assert f"def {func}(" in path.read_text(), f"{file}::{func}"
    for file in set(re.findall(r"`(tests/[\w/]+\.py)`", DOC)):
        assert (ROOT / file).is_file(), file
    # "`::name`" continues the file named just before it in the same paragraph.
    ours = "".join(p.read_text() for p in HERE.glob("test_*.py"))
    for func in re.findall(r"`::(\w+)", DOC):
        assert f"def {func}(" in ours, func


def test_counts_match_the_tables() -> None:
    values = _module("test_bad_values")
    facts = _module("test_bad_facts")
    rules = _module("test_bad_rules")
    hosts = _module("test_host_faults")
    assert f"{len(values.BAD_VALUES)} bad argument lists" in DOC
    assert f"{len(values.REAL_PROCESS)}\nof them also in a child process" in DOC
    assert f"{len(facts.BAD_FACTS) * len(facts.READERS)} cases)" in DOC
    assert f"{len(rules.BAD_RULES) * len(rules.COMMANDS)} cases)" in DOC
    assert f"{len(facts.BAD_CATALOGS) * len(facts.CATALOG_READERS)} cases)" in DOC
    for case in [*facts.BAD_FACTS, *facts.BAD_CATALOGS, *rules.BAD_RULES, *hosts.DAMAGE]:
        assert f"`{case}`" in DOC, case
    fuzz = (HERE / "test_fuzz.py").read_text()
    assert "40 per property" in DOC and "max_examples=40," in fuzz
    assert "300 per property" in DOC and "max_examples=300," in fuzz
