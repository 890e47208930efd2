"""Human view of an advice document: verdict, fit, evidence, findings, checklist."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.render import stdout_console, yes_no
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.advice import Advice, Alternative

_SEVERITY_STYLE = {"critical": "bold red", "warning": "yellow", "info": "cyan"}
_DEVICE_TEXT = {"cpu": "CPU", "gpu": "one GPU", "multi_gpu": "several GPUs"}


def _verdict(doc: Advice, con: Console) -> None:
    from rich.panel import Panel

    v = doc.verdict
    head = (
        f"[bold]{_DEVICE_TEXT[v.device.value]}[/] for {doc.scenario.value}"
        f"  ·  fits this machine: {yes_no(v.fits_here)}  ·  confidence: {v.confidence.value}"
    )
    body = f"{head}\n\n{v.summary}"
    if v.fits_reasons:
        body += "\n[dim]" + "; ".join(v.fits_reasons) + "[/]"
    rule = f" (rule {v.rule})" if v.rule else " (no rule decided: scenario default)"
    con.print(
        Panel(body, title=f"Verdict{rule}", border_style="green" if v.fits_here else "yellow")
    )


def _evidence(doc: Advice, con: Console) -> None:
    from rich.table import Table

    m = doc.machine
    machine = f"{m.cpu_model or 'unknown CPU'}, {m.usable_cores or '?'} usable cores, {human_bytes(m.memory_total_bytes)}"
    gpus = ", ".join(m.gpus) if m.gpus else "no GPU"
    con.print(
        f"[bold]Machine[/] {machine}; {gpus}; torch {m.torch or 'not installed'}"
        + (f" [dim](from {m.from_file})[/]" if m.from_file else "")
    )
    w = doc.workload
    con.print(
        f"[bold]Workload[/] {w.model or 'unnamed'} ({w.task.value}), batch {w.batch_size}, precision {w.precision.value}"
        + (f", {w.dataset_size:,} samples x {w.epochs:g} epochs" if w.dataset_size else "")
        + (f", {w.qps:g} QPS" if w.qps else "")
        + (f", {w.latency_ms:g} ms target" if w.latency_ms else "")
        + f", deadline {w.deadline_hours:g} h"
    )
    if doc.bench is not None:
        figures = sorted(
            {(r.kernel, r.dtype): r for r in doc.bench.results if r.device == "cpu"}.values(),
            key=lambda r: (r.kernel, r.dtype),
        )
        shown = ", ".join(f"{r.kernel} {r.dtype} {r.value:.0f} {r.unit}" for r in figures[:6])
        con.print(f"[bold]Measured here[/] {shown or 'nothing'}")
    else:
        con.print("[bold]Measured here[/] nothing (no microbenchmark)")
    rows = (
        [
            (
                "this machine (CPU)",
                doc.estimates.here.total_time_s,
                doc.estimates.here.memory_bytes,
                doc.estimates.here.fits,
                doc.estimates.here.basis,
            )
        ]
        if doc.estimates.here
        else []
    )
    rows += [
        (_alt_name(a), a.time_s, a.memory_bytes, a.memory_fit, a.basis)
        for a in doc.estimates.alternatives
    ]
    if not rows:
        con.print("[bold]Estimates[/] none (give --model or --params/--flops-per-sample)")
        return
    table = Table(title="Estimates", title_justify="left", show_edge=False)
    for col in ("device", "time", "memory", "fits", "basis"):
        table.add_column(col)
    for name, t, mem, fits, basis in rows:
        # The basis names its source in parentheses; the JSON keeps it whole.
        short = (basis or "").split(" (")[0]
        table.add_row(name, duration(t), human_bytes(mem), yes_no(fits), f"[dim]{short}[/]")
    con.print(table)


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
            con.print(f"  [{style}]{f.rule}[/] [bold]{f.title}[/] [dim]({', '.join(f.source)})[/]")
            con.print(f"    {f.message}", soft_wrap=False)


def _migration(doc: Advice, con: Console) -> None:
    if not doc.migration:
        return
    con.print("\n[bold]Moving from CPU to GPU: checklist[/]")
    for i, step in enumerate(doc.migration, 1):
        con.print(f"  {i}. [bold]{step.title}[/] [dim]({step.rule}; {', '.join(step.source)})[/]")
        con.print(f"     {step.step}")


def render_advice(doc: Advice, console: Console | None = None) -> None:
    """Print the advice for a person: verdict first, then why."""
    con = console or stdout_console()
    _verdict(doc, con)
    _evidence(doc, con)
    _findings(doc, con)
    _migration(doc, con)
