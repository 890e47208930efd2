"""The bench's terminal view marks the figures it judged too unsteady to use."""

from __future__ import annotations

import io

import pytest
from rich.cells import cell_len
from rich.console import Console

from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.render.bench import bar_lines, render_bench


def _result(dtype: str, value: float, **kw: object) -> BenchResult:
    fields: dict[str, object] = {"runs": 10, **kw}
    return BenchResult(
        device="cpu", kernel="matmul", dtype=dtype, shape=[512, 512, 512], value=value,
        unit="GFLOP/s", median_s=0.01, iqr_s=0.003, threads=2, **fields,
    )  # fmt: skip


def _text(report: BenchReport, width: int, *, verbose: bool = True) -> str:
    buf = io.StringIO()
    render_bench(report, Console(file=buf, width=width, color_system=None), verbose=verbose)
    return buf.getvalue()


def _steady_and_unsteady() -> BenchReport:
    """A steady fp32 figure and an unsteady bf16 one (27% spread)."""
    return BenchReport(
        budget_s=9.0,
        elapsed_s=5.0,
        results=[
            _result("fp32", 120.0, reliable=True, spread=0.02),
            _result("bf16", 300.0, reliable=False, spread=0.27),
        ],
    )


@pytest.mark.parametrize("width", [80, 160])
def test_the_summary_keeps_an_unreliable_figures_spread_and_says_so(width: int) -> None:
    report = _steady_and_unsteady()
    text = _text(report, width, verbose=False)
    bf16 = next(ln for ln in text.splitlines() if ln.startswith("cpu") and "bf16" in ln)
    assert "300.0 GFLOP/s" in bf16 and "±27%" in bf16
    assert "unsteady" in text and "kept with its spread" in " ".join(text.split())
    steady = BenchReport(budget_s=9.0, elapsed_s=5.0, results=report.results[:1])
    assert "unsteady" not in _text(steady, width, verbose=False)


@pytest.mark.parametrize("width", [80, 160])
def test_an_unreliable_figure_is_marked_with_its_spread(width: int) -> None:
    report = _steady_and_unsteady()
    text = _text(report, width)
    lines = text.splitlines()
    bf16 = next(k for k, ln in enumerate(lines) if ln.startswith("cpu") and "bf16" in ln)
    note = " ".join(" ".join(lines[bf16 + 1 : bf16 + 4]).split())
    assert "±27% unreliable" in note
    assert text.count("unreliable") == 2  # the bf16 row's note and its bar, not fp32's
    assert all(cell_len(ln) <= width for ln in lines)


def test_unreliable_without_a_spread_says_why() -> None:
    report = BenchReport(
        budget_s=9.0, elapsed_s=5.0, results=[_result("fp32", 120.0, reliable=False, runs=2)]
    )
    assert "unreliable (2 timed runs, too few to judge)" in " ".join(_text(report, 120).split())


def test_reliable_and_unassessed_figures_carry_no_mark() -> None:
    report = BenchReport(
        budget_s=9.0,
        elapsed_s=5.0,
        results=[_result("fp32", 120.0, reliable=True), _result("bf16", 300.0)],
    )
    assert "unreliable" not in _text(report, 120)
    assert not any(line.endswith("(unreliable)") for line in bar_lines(report))
