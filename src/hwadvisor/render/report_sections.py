"""The HTML pieces of the report other than charts: verdict, findings, tables, style (pure).

Every value from a document passes through :func:`esc`; nothing here builds markup from
unescaped text.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from hwadvisor.render.chosen import chosen_line
from hwadvisor.render.cost import on_nodes
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice, MigrationStep
    from hwadvisor.models.bench import BenchReport, BenchResult
    from hwadvisor.models.estimate import EstimateReport
    from hwadvisor.models.finding import Finding
    from hwadvisor.models.workload import Workload

__all__ = ["CSS", "duration"]

DEVICE_TEXT = {"cpu": "CPU", "gpu": "One GPU", "multi_gpu": "Several GPUs"}
SEVERITY_ORDER = {"critical": 0, "warning": 1, "info": 2}
#: Bytes per element of the bandwidth kernels' buffers (fp32 streams, uint8 host copies).
STREAM_BYTES = {"copy": 4, "triad": 4, "h2d": 1, "d2h": 1}

CSS = """
:root { --fg: #212529; --muted: #5c636a; --line: #dee2e6; --bg: #f8f9fa; --card: #fff;
  --ok: #2f9e44; --bad: #c92a2a; --warn: #e8590c; --info: #1c7ed6; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
header, main, footer { max-width: 1040px; margin: 0 auto; padding: 0 24px; }
header { padding-top: 28px; }
h1 { font-size: 26px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 18px; margin: 0 0 12px; }
.sub, .caption, footer { color: var(--muted); }
.caption { font-size: 13px; margin: 8px 0 0; }
.card { background: var(--card); border: 1px solid var(--line); border-radius: 10px;
  padding: 18px 20px; margin: 16px 0; }
.verdict { border-left: 6px solid var(--info); }
.verdict.fits-yes { border-left-color: var(--ok); }
.verdict.fits-no { border-left-color: var(--warn); }
.verdict .device { font-size: 24px; font-weight: 700; margin: 0 0 6px; }
.verdict .summary { font-size: 17px; margin: 0 0 10px; }
.badges { display: flex; flex-wrap: wrap; gap: 8px; margin: 0 0 6px; padding: 0; list-style: none; }
.badge { display: inline-block; border-radius: 999px; padding: 1px 10px; font-size: 13px;
  font-weight: 600; background: #e9ecef; color: var(--fg); white-space: nowrap; }
.badge.ok { background: #d3f9d8; color: #1b5e20; }
.badge.bad { background: #ffe3e3; color: #8a1c1c; }
.badge.critical { background: var(--bad); color: #fff; }
.badge.warning { background: #ffe8cc; color: #8a3b00; }
.badge.info { background: #d0ebff; color: #0b4f8a; }
.vis { width: 100%; min-height: 60px; }
.vis.vega-embed { display: block; }
.finding { border-top: 1px solid var(--line); padding: 12px 0; }
.finding:first-of-type { border-top: 0; padding-top: 0; }
.finding h3 { font-size: 16px; margin: 0 0 4px; }
.finding p { margin: 4px 0; }
code { font: 13px ui-monospace, "DejaVu Sans Mono", monospace; background: #f1f3f5;
  padding: 1px 5px; border-radius: 4px; }
.meta { font-size: 13px; color: var(--muted); }
dl.facts { display: grid; grid-template-columns: max-content 1fr max-content 1fr; gap: 2px 16px; margin: 0; }
@media (max-width: 700px) { dl.facts { grid-template-columns: max-content 1fr; } }
dl.facts dt { color: var(--muted); } dl.facts dd { margin: 0; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; font-size: 14px; }
th { white-space: nowrap; }
th, td { text-align: left; padding: 6px 8px; border-bottom: 1px solid var(--line); vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
details { margin-top: 6px; } summary { cursor: pointer; color: var(--muted); font-size: 13px; }
ol.steps li { margin: 6px 0; }
h3 { font-size: 15px; margin: 16px 0 6px; }
.verdict .chosen { margin: 0 0 10px; }
.scroll { overflow-x: auto; }
footer { font-size: 13px; padding-bottom: 28px; }
"""


def esc(text: object) -> str:
    """``text`` escaped for HTML element content and quoted attributes."""
    return html.escape(str(text), quote=True)


def _badge(text: str, kind: str = "") -> str:
    return f'<li class="badge {esc(kind)}">{esc(text)}</li>'


def _facts(pairs: Sequence[tuple[str, str]]) -> str:
    rows = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs)
    return f'<dl class="facts">{rows}</dl>'


def note(text: str) -> str:
    """A short note section."""
    return f'<section class="card"><p class="meta">{esc(text)}</p></section>'


def footer() -> str:
    """Which hwadvisor made the page."""
    from hwadvisor import __version__
    from hwadvisor.models.plain import SCHEMA_VERSION

    return (
        f"<footer>Made by hwadvisor {esc(__version__)} (document schema {esc(SCHEMA_VERSION)}). "
        "Self-contained: this page fetches nothing.</footer>"
    )


def machine_line(advice: Advice) -> str:
    """Hostname, CPU, memory and GPUs of the machine the advice is for."""
    m = advice.machine
    gpus = ", ".join(m.gpus) if m.gpus else "no GPU"
    parts = [
        m.hostname or "unknown host",
        m.cpu_model or "unknown CPU",
        f"{m.usable_cores or '?'} usable cores",
        human_bytes(m.memory_total_bytes),
        gpus,
    ]
    text = " · ".join(parts)
    return text + (f" (from {m.from_file})" if m.from_file else "")


def verdict(advice: Advice) -> str:
    """The verdict card: device class, summary, the row chosen, fit, confidence, deciding
    rule, reasons."""
    v = advice.verdict
    fits = "unknown" if v.fits_here is None else "yes" if v.fits_here else "no"
    kind = "" if v.fits_here is None else "ok" if v.fits_here else "bad"
    with_fixes = f", with {', '.join(v.fixes)}" if v.fits_here and v.fixes else ""
    decided = (
        "rule " + v.rule if v.rule else "the estimate table" if v.option else "nothing decided"
    )
    badges = [
        _badge(f"fits this machine: {fits}{with_fixes}", kind),
        _badge(f"confidence: {v.confidence.value}"),
        _badge(decided),
    ]
    reasons = "".join(f"<li>{esc(r)}</li>" for r in v.fits_reasons)
    chosen = chosen_line(advice)
    return (
        f'<section class="card verdict fits-{fits}"><h2>Verdict</h2>'
        f'<p class="device">{esc(DEVICE_TEXT.get(v.device.value, v.device.value))}'
        f" for {esc(advice.scenario.value)}</p>"
        f'<p class="summary">{esc(v.summary)}</p>'
        + (f'<p class="chosen"><strong>chosen:</strong> {esc(chosen)}</p>' if chosen else "")
        + f'<ul class="badges">{"".join(badges)}</ul>'
        + (f'<ul class="meta">{reasons}</ul>' if reasons else "")
        + f'<p class="meta">{advice.rules_evaluated} rules evaluated.</p></section>'
    )


def workload_line(wl: Workload) -> str:
    """The workload in one line: model, task, batch, precision."""
    text = f"{wl.model or 'unnamed workload'}: {wl.task.value}, batch {wl.batch_size}, {wl.precision.value}"
    return text + (f", {wl.optimizer.value}" if wl.task.value == "train" else "")


def workload(wl: Workload) -> str:
    """The workload's figures as a definition list."""
    pairs = [("model", wl.model or "unnamed"), ("task", wl.task.value)]
    pairs += [("batch", f"{wl.batch_size:,}"), ("precision", wl.precision.value)]
    if wl.params:
        pairs.append(("parameters", f"{wl.params:,}"))
    if wl.flops_per_sample:
        pairs.append(("FLOPs per sample", f"{wl.flops_per_sample / 1e9:,.3g} G"))
    if wl.dataset_size:
        pairs.append(("data", f"{wl.dataset_size:,} samples x {wl.epochs:g} epochs"))
    if wl.qps:
        pairs.append(("QPS", f"{wl.qps:g}"))
    if wl.latency_ms:
        pairs.append(("latency target", f"{wl.latency_ms:g} ms"))
    pairs.append(("deadline", duration(wl.deadline_hours * 3600)))
    if wl.source:
        pairs.append(("figures from", wl.source))
    return f'<section class="card"><h2>Workload</h2>{_facts(pairs)}</section>'


def _evidence(finding: Finding) -> str:
    if not finding.evidence:
        return ""
    rows = "".join(
        f"<tr><td><code>{esc(k)}</code></td><td>{esc(v)}</td></tr>"
        for k, v in finding.evidence.items()
    )
    return f"<details><summary>evidence</summary><table>{rows}</table></details>"


def findings(items: Sequence[Finding], heading: str) -> str:
    """Each finding with its severity, rule id, title, message and sources, worst first."""
    if not items:
        return f'<section class="card"><h2>{esc(heading)}</h2><p class="meta">No rule fired.</p></section>'
    ordered = sorted(items, key=lambda f: SEVERITY_ORDER.get(f.severity.value, 3))
    body = "".join(
        f'<article class="finding"><ul class="badges">{_badge(f.severity.value, f.severity.value)}'
        f"<li><code>{esc(f.rule)}</code></li></ul><h3>{esc(f.title)}</h3><p>{esc(f.message)}</p>"
        f'<p class="meta">sources: {esc(", ".join(f.source) or "none")}</p>{_evidence(f)}</article>'
        for f in ordered
    )
    return f'<section class="card"><h2>{esc(heading)} ({len(items)})</h2>{body}</section>'


def migration(steps: Sequence[MigrationStep]) -> str:
    """The CPU-to-GPU checklist as an ordered list ('' when empty)."""
    if not steps:
        return ""
    items = "".join(
        f"<li><strong>{esc(s.title)}</strong> <code>{esc(s.rule)}</code><br>{esc(s.step)}</li>"
        for s in steps
    )
    return f'<section class="card"><h2>Checklist</h2><ol class="steps">{items}</ol></section>'


#: The priced picks an estimate (or an advice's estimates) may carry, in the order shown.
CHOICES = (
    ("cheapest", "cheapest that meets the deadline"),
    ("fastest", "fastest"),
    ("budget_low", "low-budget pick"),
    ("cheapest_cpu", "cheapest CPU"),
    ("cheapest_gpu", "cheapest GPU"),
)


def _choice_row(title: str, choice: object) -> str:
    usd = getattr(choice, "usd", None)
    meets = getattr(choice, "meets_deadline", None)
    spot = " (spot)" if getattr(choice, "spot", False) else ""
    date, source = getattr(choice, "price_date", None), getattr(choice, "price_source", None)
    price = ", ".join(str(p) for p in (date, source) if p)
    why = "; ".join(getattr(choice, "why", None) or [])
    where = on_nodes(getattr(choice, "instance", None), getattr(choice, "nodes", 1))
    what = getattr(choice, "plan", None) or getattr(choice, "device", "")
    cells = [
        f"<td>{esc(title)}</td>",
        f"<td>{esc(what)}<br><span class='meta'>{esc(where)}{esc(spot)}</span></td>",
        f'<td class="num">{esc(f"${usd:,.2f}" if usd is not None else "unpriced")}</td>',
        f'<td class="num">{esc(duration(getattr(choice, "time_s", None)))}</td>',
        f"<td>{esc('meets' if meets else 'misses' if meets is not None else 'unknown')}</td>",
        f"<td class='meta'>{esc(price)}{'<br>' if price and why else ''}{esc(why)}</td>",
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def choices(holder: object) -> str:
    """The priced picks (cheapest, fastest, ...) as a table; '' when none is carried."""
    rows = [
        _choice_row(title, choice)
        for attr, title in CHOICES
        if (choice := getattr(holder, attr, None)) is not None
    ]
    if not rows:
        return ""
    head = "".join(
        f"<th>{t}</th>" for t in ("pick", "option", "on demand", "time", "deadline", "price")
    )
    return f'<section class="card"><h2>Cost picks</h2><table><tr>{head}</tr>{"".join(rows)}</table></section>'


def estimates_table(report: EstimateReport) -> str:
    """Every device estimate as a table row, with its assumptions folded below."""
    head = "".join(
        f'<th class="{c}">{esc(t)}</th>' if c else f"<th>{esc(t)}</th>"
        for t, c in (
            ("device", ""),
            ("step", "num"),
            ("total", "num"),
            ("samples/s", "num"),
            ("memory", "num"),
            ("capacity", "num"),
            ("fit", ""),
        )
    )
    rows = []
    for e in report.estimates:
        fit = "unknown" if e.fits is None else "fits" if e.fits else "does not fit"
        tput = f"{e.throughput_samples_s:,.3g}" if e.throughput_samples_s else "unknown"
        cells = [
            f"<td>{esc(e.name or e.device)}{' ×' + str(e.gpus) if e.gpus > 1 else ''}<br><span class='meta'>{esc(e.basis or '')}</span></td>",
            f'<td class="num">{esc(duration(e.step_time_s))}</td>',
            f'<td class="num">{esc(duration(e.total_time_s))}</td>',
            f'<td class="num">{esc(tput)}</td>',
            f'<td class="num">{esc(human_bytes(e.memory_bytes))}</td>',
            f'<td class="num">{esc(human_bytes(e.device_memory_bytes))}</td>',
            f"<td>{esc(fit)}</td>",
        ]
        rows.append("<tr>" + "".join(cells) + "</tr>")
    notes = "".join(
        f"<li><strong>{esc(e.device)}</strong>: {esc('; '.join(e.assumptions))}</li>"
        for e in report.estimates
        if e.assumptions
    )
    fold = f"<details><summary>assumptions</summary><ul>{notes}</ul></details>" if notes else ""
    return f'<section class="card"><h2>Estimates</h2><table><tr>{head}</tr>{"".join(rows)}</table>{fold}</section>'


def bench_line(bench: BenchReport) -> str:
    """When and how the bench ran, in one line."""
    parts = [f"torch {bench.torch_version or 'unknown'}", bench.generated_at]
    parts.append(f"budget {duration(bench.budget_s)}, took {duration(bench.elapsed_s)}")
    if bench.load_avg_1m is not None:
        parts.append(f"load {bench.load_avg_1m:g} at the start")
    if bench.interrupted:
        parts.append("interrupted: the figures measured so far")
    return " · ".join(parts)


def _figure_row(r: BenchResult) -> str:
    eff = f"{r.efficiency:.1%}" if r.efficiency is not None else "unknown"
    peak = f"{r.peak:,.4g} {r.unit}" if r.peak is not None else "unknown"
    shape = "x".join(str(s) for s in r.shape)
    if r.kernel in STREAM_BYTES and r.shape:
        shape = f"{human_bytes(r.shape[0] * STREAM_BYTES[r.kernel])} per buffer"
    cells = [r.device, r.kernel, r.dtype, shape]
    return (
        "<tr>"
        + "".join(f"<td>{esc(c)}</td>" for c in cells)
        + f'<td class="num">{esc(f"{r.value:,.4g} {r.unit}")}</td><td class="num">{esc(peak)}</td>'
        + f'<td class="num">{esc(eff)}</td></tr>'
    )


def bench_table(bench: BenchReport) -> str:
    """Every figure, the comparisons drawn from them, and what was skipped."""
    head = "".join(f"<th>{t}</th>" for t in ("device", "kernel", "dtype", "shape"))
    head += '<th class="num">measured</th><th class="num">peak</th><th class="num">of peak</th>'
    rows = (
        "".join(_figure_row(r) for r in bench.results) or '<tr><td colspan="7">no figures</td></tr>'
    )
    derived = "".join(f"<li>{esc(d.text)}</li>" for d in bench.derived)
    skipped = "".join(
        f"<li>{esc(s.device)} {esc(s.kernel)} {esc(s.dtype)}: {esc(s.reason)}</li>"
        for s in bench.skipped
    )
    return (
        f'<section class="card"><h2>Figures</h2><table><tr>{head}</tr>{rows}</table>'
        + (
            f"<h2 style='margin-top:16px'>What the figures say</h2><ul>{derived}</ul>"
            if derived
            else ""
        )
        + (
            f"<details><summary>skipped ({len(bench.skipped)})</summary><ul>{skipped}</ul></details>"
            if skipped
            else ""
        )
        + "</section>"
    )
