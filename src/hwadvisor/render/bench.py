"""Human view of a bench report: a table of figures, a bar chart by dtype, the evidence."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.text import Text

from hwadvisor.render import stdout_console
from hwadvisor.render.layout import Col, FitTable, Hanging
from hwadvisor.units import duration

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.bench import BenchReport, BenchResult

BAR_WIDTH = 40
#: After a bar whose figure the bench judged too unsteady to use.
UNRELIABLE = " (unreliable)"


def _number(r: BenchResult) -> str:
    return f"{r.value:,.1f}" if r.value >= 10 else f"{r.value:,.3g}"


def _value(r: BenchResult) -> str:
    return f"{_number(r)} {r.unit}"


def _spread(r: BenchResult) -> str:
    return f"±{r.iqr_s / r.median_s:.0%}" if r.median_s > 0 and r.runs > 1 else "-"


def _unreliable(r: BenchResult) -> str | None:
    """The note under a figure the bench judged too unsteady to use; None for one it
    trusts (or one from before the judgement: taken as reliable)."""
    if r.reliable is not False:
        return None
    spread = f"±{r.spread:.0%} " if r.spread is not None else ""
    runs = "" if r.spread is not None else f" ({r.runs} timed runs, too few to judge)"
    if r.level is not None:
        return (
            f"{spread}unreliable{runs}: its family is priced from its nearest reliable "
            "figure (from this one where slower, or if it has none)"
        )
    return f"{spread}unreliable{runs}: the advice uses the theoretical peak instead"


def _efficiency(r: BenchResult) -> str:
    if r.efficiency is None:
        return "[dim]?[/]"
    pct = r.efficiency * 100
    return f"{pct:.0f}%" if pct >= 10 else f"{pct:.1f}%"


def _shape(r: BenchResult) -> str:
    if r.kernel in ("copy", "triad", "h2d", "d2h"):
        per_elem = 1 if r.dtype == "uint8" else 4
        return f"{r.shape[0] * per_elem / 2**20:,.0f} MiB"
    if r.kernel == "matmul" and len(set(r.shape)) == 1:
        return f"{r.shape[0]}³"
    return "x".join(str(d) for d in r.shape)


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
        [
            r.device,
            r.kernel,
            r.dtype,
            _shape(r),
            _value(r) if r.reliable is not False else f"[yellow]{_value(r)}[/]",
            _efficiency(r),
            _spread(r),
            str(r.runs),
            str(r.threads) if r.threads is not None else "-",
        ]
        for r in report.results
    ]
    notes = [_unreliable(r) for r in report.results]
    return FitTable(columns, rows, title="Measured throughput", notes=notes)


def bar_lines(report: BenchReport, *, width: int = BAR_WIDTH) -> list[str]:
    """Horizontal bars of compute throughput by device and dtype (matmul and conv2d).

    Bars share one linear scale per unit so the dtypes compare at a glance; a figure too
    small for one cell still gets a sliver, so a 100x slow-down stays visible.
    """
    rows = [r for r in report.results if r.kernel in ("matmul", "conv2d")]
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
    rows = [r for r in report.results if r.kernel in ("matmul", "conv2d")]
    if not rows:
        return BAR_WIDTH
    label = max(len(f"{r.device} {r.kernel} {r.dtype}") for r in rows)
    figure = max(len(_value(r)) + (len(UNRELIABLE) if r.reliable is False else 0) for r in rows)
    return max(8, min(BAR_WIDTH, width - label - figure - 2))


def render_bench(report: BenchReport, console: Console | None = None) -> None:
    """Print the report: table, bar chart, derived evidence, skips, and the budget used."""
    con = console or stdout_console()
    con.print(results_table(report))
    bars = bar_lines(report, width=_bar_room(report, con.width))
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
        for s in report.skipped:
            con.print(Hanging("  • ", Text(f"{s.device} {s.kernel} {s.dtype}: {s.reason}")))
    footer = f"\n{duration(report.elapsed_s)} of a {duration(report.budget_s)} budget, torch {report.torch_version}"
    if report.interrupted:
        footer += " [bold yellow](interrupted: partial figures)[/]"
    elif report.elapsed_s > report.budget_s * 1.1:
        footer += (
            "\n[yellow]over the budget: every kernel is measured at least once"
            + (
                f", and importing torch alone took {duration(report.torch_import_s)}"
                if report.torch_import_s
                else ""
            )
            + "[/]"
        )
    con.print(footer)
