"""The estimate table says, under a row that does not fit, why and which multi-GPU plan
holds the job; a FitTable note wraps within the width like a folded detail."""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import Any

import pytest
from rich.cells import cell_len
from rich.console import Console

from hwadvisor.render import stdout_console
from hwadvisor.render.layout import Col, FitTable

TRAIN_13B = [
    "estimate",
    "--params",
    "13B",
    "--task",
    "train",
    "--seq-len",
    "2048",
    "--precision",
    "bf16",
    "--on",
    "a100-80gb",
    "--no-bench",
]


def _lines(table: FitTable, width: int) -> list[str]:
    con = Console(file=io.StringIO(), width=width, color_system=None)
    return [ln.plain for ln in table.lines(con, width)]


@pytest.mark.parametrize("width", [30, 80])
def test_a_note_sits_below_its_row_within_the_width(width: int) -> None:
    table = FitTable(
        [Col("device", wrap=True), Col("fit")],
        [["a", "✗ does not fit"], ["b", "✓ fits"]],
        notes=["does not fit: weights alone are 10 GiB, over 8 GiB usable", None],
    )
    lines = _lines(table, width)
    start = next(k for k, ln in enumerate(lines) if ln.startswith("a "))
    assert "does not fit: weights" in lines[start + 1]
    assert lines[-1].startswith("b ")  # the row without a note has no line below it
    assert all(cell_len(ln) <= width for ln in lines)


def test_no_notes_leaves_the_table_as_it_was() -> None:
    rows = [["a", "1"], ["b", "2"]]
    cols = [Col("device", wrap=True), Col("n", "right")]
    assert _lines(FitTable(cols, rows), 80) == _lines(FitTable(cols, rows, notes=[None]), 80)


def test_a_row_that_does_not_fit_shows_its_reason_and_plan(
    cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    stdout_console.cache_clear()
    try:
        human = cli(*TRAIN_13B)
        doc = cli(*TRAIN_13B, "--json").json()
    finally:
        stdout_console.cache_clear()
    assert human.code == 0, human.err
    est = doc["estimates"][0]
    assert est["fits"] is False and est["plan"] is not None
    flat = " ".join(human.out.split())
    assert " ".join(est["fit_reason"].split()) in flat
    assert f"plan: {' '.join(est['plan']['plan'].split())}" in flat
    assert all(cell_len(ln) <= 80 for ln in human.out.splitlines())
