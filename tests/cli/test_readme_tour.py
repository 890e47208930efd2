"""README.md's tour, run at 80 columns: no cut value, no internal document, and the
example outputs are what the program prints now (``scripts/gen_readme_tour.py``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest
from rich.cells import cell_len

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"SPEC\b|§|GUIDANCE|REFERENCE\.md|shared/")


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "gen_readme_tour", ROOT / "scripts" / "gen_readme_tour.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _gen()
README = (ROOT / "README.md").read_text(encoding="utf-8")
TOUR = GEN.commands(README)


def test_the_tour_shows_more_than_check() -> None:
    shown = [command.split()[1] for command, _ in TOUR]
    assert shown[0] == "check"
    assert {"recommend", "estimate", "fleet", "rules"} <= set(shown)


@pytest.mark.parametrize(("command", "shown"), TOUR, ids=[c for c, _ in TOUR])
def test_each_tour_output_fits_80_columns_and_names_no_internal_document(
    command: str, shown: str
) -> None:
    out = GEN.run(command) if GEN.replayable(command) else shown
    assert out.strip(), command
    for line in out.splitlines():
        assert "…" not in line and cell_len(line) <= 80, f"{command}: cut at 80 columns: {line}"
    found = INTERNAL.search(out)
    assert found is None, f"{command} names {found.group(0)!r}"


def test_the_tour_outputs_are_current() -> None:
    assert GEN.render(README) == README, (
        "README.md's tour shows outputs the program no longer prints: "
        "run python scripts/gen_readme_tour.py"
    )
