"""Human view of estimates and catalogs: tables and a bar chart of time per device."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.text import Text

from hwadvisor.render import stdout_console
from hwadvisor.render.cost import picks_of, render_costs
from hwadvisor.render.layout import Col, FitTable, Hanging
from hwadvisor.render.llm import llm_title, render_llm
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.catalog.schema import DeviceEntry, ModelEntry
    from hwadvisor.models.band import TimeBand
    from hwadvisor.models.estimate import DeviceEstimate, EstimateReport

BAR_WIDTH = 40


def _fit(est: DeviceEstimate) -> str:
    if est.fits is None:
        return "[yellow]? unknown[/]"
    return "[bold green]✓ fits[/]" if est.fits else "[bold red]✗ does not fit[/]"


def _label(est: DeviceEstimate) -> str:
    label = est.device + (f" x{est.gpus}" if est.gpus > 1 else "")
    return label + (" (measured)" if est.measured else "")


def _table(report: EstimateReport) -> FitTable:
    wl = report.workload
    title = llm_title(report) or (
        f"{wl.model or 'workload'}: {wl.task.value}, batch {wl.batch_size}, {wl.precision.value}"
        + (f", {wl.optimizer.value}" if wl.task.value == "train" else "")
    )
    columns = [
        Col("device", wrap=True),
        Col("step", "right"),
        Col("total", "right"),
        Col("samples/s", "right", fold=1),
        Col("memory", "right"),
        Col("capacity", "right", fold=2),
        Col("fit"),
        Col("basis", wide=True),
    ]
    rows = [
        [
            _label(est),
            with_band(est.step_time_s, est.time_band_s),
            with_band(est.total_time_s, est.total_time_band_s),
            f"{est.throughput_samples_s:,.1f}" if est.throughput_samples_s else "unknown",
            human_bytes(est.memory_bytes),
            human_bytes(est.device_memory_bytes),
            _fit(est),
            f"[dim]{_short_basis(est.basis)}[/]",
        ]
        for est in report.estimates
    ]
    notes = [_fit_note(est) for est in report.estimates]
    return FitTable(columns, rows, title=title, notes=notes)


def _fit_note(est: DeviceEstimate) -> Text | None:
    """Why a row does not (or may not) fit, and the multi-GPU plan that holds it; None
    when it fits."""
    if est.fits:
        return None
    parts = [est.fit_reason] if est.fit_reason else []
    if est.plan is not None:
        timed = ""
        if est.plan.step_time_s is not None:
            total = est.plan.total_time_s
            whole = f", {duration(total)} in all" if total is not None else ""
            timed = f" ({duration(est.plan.step_time_s)} a step{whole})"
        parts.append(f"plan: {est.plan.plan}{timed}")
    return Text("; ".join(parts)) if parts else None


def with_band(seconds: float | None, band: TimeBand | None) -> str:
    """``'2.1 h (1.7-2.6 h)'``: a duration and its error band (the unit said once if shared)."""
    text = duration(seconds)
    if band is None or seconds is None:
        return text
    low, high = duration(band.low), duration(band.high)
    unit = high.rsplit(" ", 1)[-1]
    if low.endswith(" " + unit):
        low = low[: -len(unit) - 1]
    return f"{text} ({low}-{high})"


def _bands(con: Console, report: EstimateReport) -> None:
    """Where each error band shown comes from, and the command that checks it."""
    seen: dict[str, TimeBand] = {}
    for est in report.estimates:
        if est.time_band_s is not None:
            seen.setdefault(est.time_band_s.band_class, est.time_band_s)
    if not seen:
        return
    con.print("\n[bold]error bands[/] (the range validation found for each kind of estimate)")
    for name, b in seen.items():
        con.print(Hanging("  - ", f"{name}: {b.basis}; check: {b.check}"))


def _short_basis(basis: str | None) -> str:
    """The basis without its source in parentheses (the assumptions list it whole)."""
    return (basis or "").split(" (")[0]


#: The least span of the time chart's log axis, in decades.
MIN_DECADES = 1.0


def _chart(console: Console, report: EstimateReport) -> None:
    use_total = all(
        e.total_time_s is not None for e in report.estimates if e.step_time_s is not None
    )
    pairs = [(e, e.total_time_s if use_total else e.step_time_s) for e in report.estimates]
    known = [(e, t) for e, t in pairs if t]
    if not known:
        return
    lo, hi = min(t for _, t in known), max(t for _, t in known)
    # Log scale: a CPU and a large GPU are often 100x apart, a linear bar would hide one.
    # The axis spans at least a decade below the longest, so bars of times close to each
    # other (an estimate and its measurement) are close in length.
    span = max(math.log10(hi / lo), MIN_DECADES)
    lo = hi / 10**span
    what = "total time" if use_total else "time per step"
    console.print()
    console.print(
        Hanging("", f"[bold]{what}[/] (log scale, shorter is faster; colour = memory fit)")
    )
    width = max(len(_label(e)) for e, _ in pairs)
    # The label, two gaps and the longest duration ("12.3 days") beside the bar.
    bar_room = max(8, min(BAR_WIDTH, console.width - width - 16))
    for est, t in pairs:
        if not t:
            console.print(f"  {_label(est):<{width}}  [yellow]unknown[/]")
            continue
        frac = math.log10(t / lo) / span
        n = max(1, round(min(4, bar_room // 4) + frac * (bar_room - min(4, bar_room // 4))))
        colour = "green" if est.fits else ("red" if est.fits is False else "yellow")
        console.print(f"  {_label(est):<{width}}  [{colour}]{'█' * n}[/] {duration(t)}")


def render_estimate(
    report: EstimateReport, *, verbose: bool = False, console: Console | None = None
) -> None:
    """Print the table, the chart, fixes for what does not fit, and the assumptions."""
    con = console or stdout_console()
    con.print(_table(report))
    _chart(con, report)
    render_costs(con, [(_label(e), e.cost) for e in report.estimates], picks_of(report))
    render_llm(con, report)  # tokens/s and priced alternatives of a language model
    for est in report.estimates:
        if est.fixes and est.serving is None and est.finetune is None:
            steps = "; ".join(
                f"{f.fix}: {human_bytes(f.memory_bytes)}{' (fits)' if f.fits else ''}"
                for f in est.fixes
            )
            con.print()
            con.print(
                Hanging(
                    "",
                    f"[bold]{_label(est)}[/] does not fit ({human_bytes(est.memory_bytes)}). "
                    f"Fixes in order: {steps}",
                    indent=2,
                )
            )
    if report.guidance:
        _guidance(con, report)
    con.print("\n[bold]assumptions[/]")
    seen: set[str] = set()
    for est in report.estimates:
        notes = [a for a in est.assumptions if verbose or a not in seen]
        seen.update(est.assumptions)
        if notes:
            head = f"[bold]{_label(est)}[/]" + (f": {est.basis}" if est.basis else "")
            con.print(Hanging("  ", head, indent=4))
            for note in notes:
                con.print(Hanging("    - ", note))
    _bands(con, report)


def _guidance(con: Console, report: EstimateReport) -> None:
    """The findings that apply, most severe first, each with its sources."""
    colours = {"critical": "red", "warning": "yellow", "info": "cyan"}
    options = ", ".join(
        part
        for part in (
            report.scenario and report.scenario.value,
            report.budget and f"budget {report.budget.value}",
            report.team and f"team {report.team.value}",
        )
        if part
    )
    con.print(f"\n[bold]guidance[/] ({options})")
    for f in report.guidance:
        colour = colours.get(f.severity.value, "white")
        head = (
            f"[{colour}]{f.severity.value}[/] [bold]{f.rule}[/] {f.title}"
            f" [dim]({', '.join(f.source)})[/]"
        )
        con.print(Hanging("  ", head, indent=4))
        con.print(Hanging("    ", f.message))


def _num(v: float | None) -> str:
    """A peak or size in at most four characters: 989, 67, 19.5, 0.36; '–' when absent."""
    if v is None:
        return "–"
    return f"{v:.0f}" if v >= 100 else f"{v:.3g}"


def render_devices(devices: dict[str, DeviceEntry], *, console: Console | None = None) -> None:
    """The device catalog as a compact table (the JSON view has every field and source);
    at :data:`~hwadvisor.render.layout.WIDE` columns the full names show too."""
    con = console or stdout_console()
    columns = [Col("id", wrap=True)]
    columns += [Col(c, "right") for c in ("fp32", "tf32", "bf16", "fp16", "fp8", "int8")]
    columns += [Col("GB", "right"), Col("GB/s", "right"), Col("link"), Col("name", wide=True)]
    rows = []
    for d in devices.values():
        p = d.peaks_tflops
        cells = [_num(v) for v in (p.fp32, p.tf32, p.bf16, p.fp16, p.fp8, p.int8)]
        link = {"infinity-fabric": "IF", "ethernet": "eth"}.get(
            d.interconnect.kind, d.interconnect.kind
        )
        rows.append(
            [d.id, *cells, _num(d.memory_bytes / 1e9), _num(d.bandwidth_gb_s), link, d.name]
        )
    title = "devices: dense peaks in TFLOP/s (int8 TOPS), memory GB, bandwidth GB/s"
    con.print(FitTable(columns, rows, title=title))
    con.print("[dim]sources and achieved fractions: hwadvisor catalog devices --json[/]")


def render_models(models: dict[str, ModelEntry], *, console: Console | None = None) -> None:
    """The model catalog as a table; what activation memory is computed from folds below
    each row on a narrow terminal."""
    con = console or stdout_console()
    columns = [
        Col("id", wrap=True),
        Col("kind"),
        Col("params", "right"),
        Col("GFLOPs", "right"),
        Col("input", fold=1),
        Col("activations", fold=2),
    ]
    rows = []
    for m in models.values():
        size = (
            f"seq {m.seq_len}"
            if m.seq_len
            else ("x".join(str(d) for d in m.input_shape) if m.input_shape else "–")
        )
        rows.append(
            [
                m.id,
                m.kind.value,
                f"{m.params / 1e6:,.1f} M",
                f"{m.flops_per_sample / 1e9:,.1f}",
                size,
                _activations(m),
            ]
        )
    title = "models (forward FLOPs per sample, real FLOPs)"
    con.print(FitTable(columns, rows, title=title))


def _activations(m: ModelEntry) -> str:
    """What activation memory is computed from, in a few words."""
    if m.layers and m.hidden:
        return f"s·b·h·L formula (L={m.layers}, h={m.hidden}, a={m.heads})"
    if m.activation_bytes_per_sample:
        return f"{m.activation_bytes_per_sample / 2**20:,.0f} MiB/sample (counted)"
    return "unknown"
