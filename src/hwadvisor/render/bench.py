"""Human view of a bench report: the best figure of each kernel, the evidence, the budget.

By default one screen: a row per device, kernel and dtype (its best figure), the evidence,
what was not measured, and the time used. ``verbose`` adds every figure (each size of the
ladders, with its spread, runs and threads) and a bar chart of compute by dtype.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from rich.text import Text

from hwadvisor.models.bench import shape_text
from hwadvisor.render import stdout_console
from hwadvisor.render.layout import Col, FitTable, Hanging
from hwadvisor.units import duration

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.bench import BenchReport, BenchResult, BenchSkip

BAR_WIDTH = 40
#: After a bar whose figure the bench judged too unsteady to carry a conclusion alone.
UNRELIABLE = " (unreliable)"
#: The skip reason the runner gives a figure the budget had no time for.
NO_TIME = "no time left in the budget"


def _number(r: BenchResult) -> str:
    return f"{r.value:,.1f}" if r.value >= 10 else f"{r.value:,.3g}"


def _value(r: BenchResult) -> str:
    return f"{_number(r)} {r.unit}"


def _rate(r: BenchResult) -> str:
    return _value(r) if r.reliable is not False else f"[yellow]{_value(r)}[/]"


def _spread(r: BenchResult) -> str:
    if r.spread is not None:
        return f"±{r.spread:.0%}"
    return f"±{r.iqr_s / r.median_s:.0%}" if r.median_s > 0 and r.runs > 1 else "-"


def _unreliable(r: BenchResult) -> str | None:
    """The note under a figure the bench judged unsteady; None for one it trusts (or
    one from before the judgement: taken as reliable)."""
    if r.reliable is not False:
        return None
    spread = f"±{r.spread:.0%} " if r.spread is not None else ""
    runs = "" if r.spread is not None else f" ({r.runs} timed runs, too few to judge)"
    return f"{spread}unreliable{runs}: kept with its spread, not compared"


def _efficiency(r: BenchResult) -> str:
    if r.efficiency is None:
        return "[dim]?[/]"
    pct = r.efficiency * 100
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"


def _best(report: BenchReport) -> list[BenchResult]:
    """The best figure of each device, kernel and dtype, in the report's order."""
    groups: dict[tuple[str, str, str], list[BenchResult]] = {}
    for r in report.results:
        groups.setdefault((r.device, r.kernel, r.dtype), []).append(r)
    return [max(rs, key=lambda r: r.value) for rs in groups.values()]


def summary_table(report: BenchReport) -> FitTable:
    """One row per device, kernel and dtype: its best figure, and at which size."""
    columns = [
        Col("device"),
        Col("kernel"),
        Col("dtype"),
        Col("best", "right"),
        Col("size", "right"),
        Col("of peak", "right"),
        Col("IQR", "right", fold=1),
    ]
    rows = [
        [r.device, r.kernel, r.dtype, _rate(r), shape_text(r.kernel, r.shape), _efficiency(r),
         _spread(r)]
        for r in _best(report)
    ]  # fmt: skip
    title = "Measured throughput [dim](best of each; --verbose lists every figure)[/]"
    return FitTable(columns, rows, title=title)


def results_table(report: BenchReport) -> FitTable:
    """One row per figure; the spread, runs and threads fold below a row on a narrow
    terminal, and the rate never parts from its unit."""
    columns = [
        Col("device"),
        Col("kernel"),
        Col("dtype"),
        Col("size", "right"),
        Col("rate", "right"),
        Col("of peak", "right"),
        Col("IQR", "right", fold=3),
        Col("runs", "right", fold=2),
        Col("threads", "right", fold=1),
    ]
    rows = [
        [r.device, r.kernel, r.dtype, shape_text(r.kernel, r.shape), _rate(r), _efficiency(r),
         _spread(r), str(r.runs), str(r.threads) if r.threads is not None else "-"]
        for r in report.results
    ]  # fmt: skip
    notes = [_unreliable(r) for r in report.results]
    return FitTable(columns, rows, title="Measured throughput", notes=notes)


def bar_lines(report: BenchReport, *, width: int = BAR_WIDTH) -> list[str]:
    """Horizontal bars of compute throughput by device and dtype (matmul and conv2d, the
    best size of each).

    Bars share one linear scale so the dtypes compare at a glance; a figure too small
    for one cell still gets a sliver, so a 100x slow-down stays visible.
    """
    rows = [r for r in _best(report) if r.kernel in ("matmul", "conv2d")]
    if not rows:
        return []
    top = max(r.value for r in rows)
    label_w = max(len(f"{r.device} {r.kernel} {r.dtype}") for r in rows)
    lines = []
    for r in rows:
        cells = r.value / top * width if top > 0 else 0.0
        bar = "█" * int(cells) or "▏"
        label = f"{r.device} {r.kernel} {r.dtype}".ljust(label_w)
        mark = UNRELIABLE if r.reliable is False else ""
        lines.append(f"{label} {bar} {_value(r)}{mark}")
    return lines


def _bar_room(report: BenchReport, width: int) -> int:
    """The longest bar that leaves room for the label and the figure on one line."""
    rows = [r for r in _best(report) if r.kernel in ("matmul", "conv2d")]
    if not rows:
        return BAR_WIDTH
    label = max(len(f"{r.device} {r.kernel} {r.dtype}") for r in rows)
    figure = max(len(_value(r)) + (len(UNRELIABLE) if r.reliable is False else 0) for r in rows)
    return max(8, min(BAR_WIDTH, width - label - figure - 2))


def _skip_lines(skipped: list[BenchSkip], verbose: bool) -> list[str]:
    """What was not measured: each with its reason, but the figures the budget had no
    time for in one line unless ``verbose``."""
    late = [s for s in skipped if s.reason.endswith(NO_TIME)]
    if verbose or not late:
        return [f"{s.device} {s.kernel} {s.dtype}: {s.reason}" for s in skipped]
    kinds = Counter(f"{s.kernel} {s.dtype}" for s in late)
    names = ", ".join(k if n == 1 else f"{k} ({n} sizes)" for k, n in kinds.items())
    rest = [f"{s.device} {s.kernel} {s.dtype}: {s.reason}" for s in skipped if s not in late]
    return [*rest, f"for lack of time ({names}): a longer --budget measures them"]


def _footer(report: BenchReport) -> str:
    footer = f"\n{duration(report.elapsed_s)} of a {duration(report.budget_s)} budget"
    if report.torch_import_s is not None:
        footer += f" (torch's import {duration(report.torch_import_s)} of it)"
    if report.torch_version:
        footer += f", torch {report.torch_version}"
    if report.interrupted:
        footer += " [bold yellow](interrupted: partial figures)[/]"
    elif report.elapsed_s > report.budget_s * 1.1:
        footer += (
            "\n[yellow]over the budget: importing torch took most of it, and the first "
            "figure is measured however short the budget is[/]"
        )
    return footer


def render_bench(report: BenchReport, console: Console | None = None, *, verbose: bool = False) -> None:  # fmt: skip
    """Print the report: the best figures (``verbose``: every figure and a bar chart), the
    evidence, what was not measured, and the budget used."""
    con = console or stdout_console()
    con.print(results_table(report) if verbose else summary_table(report))
    if not verbose and any(r.reliable is False for r in _best(report)):
        con.print("[yellow]yellow[/][dim]: unsteady (a spread over 10%, fewer than 4 runs, or a busy machine); kept with its spread[/]")  # fmt: skip
    bars = bar_lines(report, width=_bar_room(report, con.width)) if verbose else []
    if bars:
        con.print("\n[bold]Compute throughput by dtype[/]")
        for line in bars:
            con.print(line, markup=False)
    if report.derived:
        con.print("\n[bold]Evidence[/]")
        for d in report.derived:
            con.print(Hanging("  • ", Text(d.text)))
    if report.skipped:
        con.print("\n[bold]Not measured[/]")
        for line in _skip_lines(report.skipped, verbose):
            con.print(Hanging("  • ", Text(line)))
    con.print(_footer(report))
