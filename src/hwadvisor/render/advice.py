"""Human view of an advice document: verdict, fit, evidence, findings, checklist."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from rich.markup import escape

from hwadvisor.render import stdout_console, yes_no
from hwadvisor.render.chosen import chosen_line
from hwadvisor.render.cost import picks_of, render_costs
from hwadvisor.render.estimate import with_band
from hwadvisor.render.layout import Col, FitTable, Hanging
from hwadvisor.render.llm import render_advice_serving
from hwadvisor.units import human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.advice import Advice, Alternative, Verdict
    from hwadvisor.models.bench import BenchResult

_SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_DEVICE_TEXT = {"cpu": "CPU", "gpu": "one GPU", "multi_gpu": "several GPUs"}


def _verdict(doc: Advice, con: Console) -> None:
    from rich.panel import Panel

    v = doc.verdict
    # The plan the verdict names (how many of which GPU, the strategy, the fixes).
    plan = f": [bold]{v.plan.text}[/]" if v.plan is not None else ""
    fits = yes_no(v.fits_here) + (
        f", with {escape(', '.join(v.fixes))}" if v.fits_here and v.fixes else ""
    )
    head = (
        f"[bold]{_DEVICE_TEXT[v.device.value]}[/] for {doc.scenario.value}{plan}"
        f"  ·  fits this machine: {fits}  ·  confidence: {v.confidence.value}"
    )
    body = f"{head}\n\n{v.summary}"
    chosen = chosen_line(doc)
    if chosen is not None:
        body += f"\n[bold]chosen:[/] {escape(chosen)}"
    if v.fits_reasons:
        body += "\n[dim]" + "; ".join(v.fits_reasons) + "[/]"
    if v.confidence_reasons:
        body += "\n[dim]confidence: " + "; ".join(v.confidence_reasons) + "[/]"
    rule = decided_by(v)
    con.print(
        Panel(body, title=f"Verdict{rule}", border_style="green" if v.fits_here else "yellow")
    )


def decided_by(v: Verdict) -> str:
    """What decided the verdict, for its title: a rule, the estimate table, or neither."""
    if v.rule and v.option is not None:
        return f" (rule {v.rule}, from the estimate table)"
    if v.rule:
        return f" (rule {v.rule})"
    if v.option is not None:
        return " (read off the estimate table)"
    return " (nothing decided)"


def _evidence(doc: Advice, con: Console) -> None:
    m = doc.machine
    machine = f"{m.cpu_model or 'unknown CPU'}, {m.usable_cores or '?'} usable cores, {human_bytes(m.memory_total_bytes)}"
    gpus = ", ".join(m.gpus) if m.gpus else "no GPU"
    con.print(
        Hanging(
            "[bold]Machine[/] ",
            f"{machine}; {gpus}; torch {m.torch or 'not installed'}"
            + (f" [dim](from {m.from_file})[/]" if m.from_file else ""),
            indent=2,
        )
    )
    w = doc.workload
    # A deadline and epochs are a training job's; a served model has neither.
    training = w.task.value in ("train", "finetune")
    con.print(
        Hanging(
            "[bold]Workload[/] ",
            f"{w.model or 'unnamed'} ({w.task.value}), batch {w.batch_size}, precision {w.precision.value}"
            + (
                f", {w.dataset_size:,} samples x {w.epochs:g} epochs"
                if w.dataset_size and training
                else ""
            )
            + (f", {w.qps:g} QPS" if w.qps else "")
            + (f", {w.latency_ms:g} ms target" if w.latency_ms else "")
            + (f", deadline {w.deadline_hours:g} h" if training else ""),
            indent=2,
        )
    )
    if doc.bench is not None:
        best: dict[tuple[str, str], BenchResult] = {}
        for r in doc.bench.results:  # one figure of each, as the rules read it
            key, have = (r.kernel, r.dtype), best.get((r.kernel, r.dtype))
            if r.device == "cpu" and (have is None or _rank(r) > _rank(have)):
                best[key] = r
        figures = sorted(best.values(), key=_figure_order)
        shown = ", ".join(f"{r.kernel} {r.dtype} {r.value:.0f} {r.unit}" for r in figures[:6])
        con.print(Hanging("[bold]Measured here[/] ", shown or "nothing", indent=2))
    else:
        con.print("[bold]Measured here[/] nothing (no microbenchmark)")
    _estimates(doc, con)


#: The figures the estimates rest on most, shown first on the "Measured here" line.
_KEY_FIGURES = ("matmul", "conv2d", "triad", "copy")


def _rank(r: BenchResult) -> tuple[bool, float, float]:
    """Reliable first; a bandwidth figure at its largest buffer (the DRAM one), any other
    the fastest."""
    size = float(math.prod(r.shape)) if r.kernel in ("copy", "triad") and r.shape else 0.0
    return (r.reliable is not False, size, r.value)


def _figure_order(r: BenchResult) -> tuple[int, str, str]:
    key = _KEY_FIGURES.index(r.kernel) if r.kernel in _KEY_FIGURES else len(_KEY_FIGURES)
    return (key, r.kernel, r.dtype)


def _estimates(doc: Advice, con: Console) -> None:
    here = doc.estimates.here
    rows = (
        [
            (
                "this machine (CPU)",
                here.total_time_s,
                here.memory_bytes,
                _fit(here.fits, here.fits_planned),
                here.basis,
            )
        ]
        if here
        else []
    )
    # Each time with its error band (catalog/data/error_bands.yaml).
    bands = ([here.total_time_band_s] if here else []) + [
        a.time_band_s for a in doc.estimates.alternatives
    ]
    rows += [
        (_alt_name(a), a.time_s, a.memory_bytes, _fit(a.memory_fit, a.fits_planned), a.basis)
        for a in doc.estimates.alternatives
    ]
    if not rows:
        con.print(
            Hanging(
                "[bold]Estimates[/] ",
                "none (give --model or --params/--flops-per-sample)",
                indent=2,
            )
        )
        return
    columns = [
        Col("device", wrap=True, min_width=12),
        Col("time", "right"),
        Col("memory", "right"),
        Col("fits"),
        # The basis names its source in parentheses; the JSON keeps it whole.
        Col("basis", wide=True),
    ]
    table = [
        [
            name,
            with_band(t, bands[i]),
            human_bytes(mem),
            fits,
            f"[dim]{(basis or '').split(' (')[0]}[/]",
        ]
        for i, (name, t, mem, fits, basis) in enumerate(rows)
    ]
    con.print(FitTable(columns, table, title="Estimates"))
    render_advice_serving(doc, con)  # a language model served: tokens/s


def _fit(as_written: bool | None, planned: bool | None) -> str:
    """``yes`` as written, ``with fixes`` when only the job as recommended fits, else no."""
    if not as_written and planned:
        return "with fixes"
    return yes_no(as_written)


def _alt_name(a: Alternative) -> str:
    name = a.name or a.device
    if a.gpus > 1:
        name = f"{a.gpus} x {name}"
    return f"{name} (this machine)" if a.device.startswith("local:") else name


def _findings(doc: Advice, con: Console) -> None:
    for severity in ("critical", "warning", "info"):
        group = [f for f in doc.findings if f.severity.value == severity]
        if not group:
            continue
        style = _SEVERITY_STYLE[severity]
        con.print(f"\n[{style}]{severity.upper()}[/]")
        for f in group:
            head = f"[{style}]{f.rule}[/] [bold]{f.title}[/] [dim]({', '.join(f.source)})[/]"
            con.print(Hanging("  ", head, indent=4))
            con.print(Hanging("    ", f.message))


def _migration(doc: Advice, con: Console) -> None:
    if not doc.migration:
        return
    con.print("\n[bold]Moving from CPU to GPU: checklist[/]")
    for i, step in enumerate(doc.migration, 1):
        head = f"[bold]{step.title}[/] [dim]({step.rule}; {', '.join(step.source)})[/]"
        con.print(Hanging(f"  {i}. ", head, indent=5))
        con.print(Hanging("     ", step.step))


def render_advice(doc: Advice, console: Console | None = None) -> None:
    """Print the advice for a person: verdict first, then why."""
    con = console or stdout_console()
    _verdict(doc, con)
    _evidence(doc, con)
    est = doc.estimates
    costs = [("this machine", est.here.cost if est.here else None)]
    costs += [(a.device + (f" x{a.gpus}" if a.gpus > 1 else ""), a.cost) for a in est.alternatives]
    render_costs(con, costs, picks_of(est))
    _findings(doc, con)
    _migration(doc, con)
