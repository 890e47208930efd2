"""The HTML report (``--html FILE``): one self-contained page per document (pure).

:func:`advice_html`, :func:`estimate_html` and :func:`bench_html` take the pydantic
documents and return the page as text; :func:`write_report` writes one atomically. The
page carries everything it needs: the Vega, Vega-Lite and vega-embed JavaScript from
vl-convert-python's bundle, inlined once, and each chart's Vega-Lite spec (built with
altair by :mod:`hwadvisor.render.charts`) as JSON in the page. A Content-Security-Policy
forbids every fetch, so the page works offline and a stray request fails loudly in the
browser's console. Every text from the documents (hostnames, model names, messages) is
HTML-escaped; the specs are JSON with ``<``, ``>`` and ``&`` escaped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from hwadvisor.errors import MissingDependencyError
from hwadvisor.render import report_data as rd
from hwadvisor.render import report_llm as llm
from hwadvisor.render import report_sections as sec
from hwadvisor.render.charts import cost_chart, memory_chart, require, roofline_chart, time_chart
from hwadvisor.render.llm_charts import curve_chart, memory_parts_chart
from hwadvisor.render.report_sections import esc
from hwadvisor.units import duration

if TYPE_CHECKING:
    from collections.abc import Sequence

    from hwadvisor.models.advice import Advice
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.estimate import EstimateReport
    from hwadvisor.models.workload import Workload

__all__ = [
    "advice_html",
    "bench_html",
    "estimate_html",
    "report_html",
    "require",
    "require_for",
    "write_report",
]

CSP = (
    "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
    "img-src data: blob:; font-src data:"
)
#: Runs each chart through vega-embed; the page's body says when all have rendered.
LOADER = """
(function () {
  var opts = {renderer: "svg", ast: true,
              actions: {export: true, source: false, compiled: false, editor: false}};
  var jobs = Array.prototype.map.call(document.querySelectorAll("script[data-chart]"),
    function (el) { return vegaEmbed("#" + el.dataset.chart, JSON.parse(el.textContent), opts); });
  Promise.all(jobs).then(
    function () { document.body.dataset.charts = "rendered"; },
    function (err) { document.body.dataset.charts = "failed"; console.error(err); });
})();
"""


@dataclass
class Page:
    """A report being assembled: its title, HTML sections in order, and chart specs."""

    title: str
    subtitle: str
    parts: list[str] = field(default_factory=list)
    charts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def chart(self, heading: str, caption: str, spec: dict[str, Any]) -> None:
        """Add a chart section: a container for vega-embed and its spec."""
        ident = f"chart-{len(self.charts) + 1}"
        self.charts.append((ident, spec))
        self.parts.append(
            f'<section class="card"><h2>{esc(heading)}</h2>'
            f'<div class="vis" id="{ident}" role="img" aria-label="{esc(heading)}"></div>'
            f'<p class="caption">{esc(caption)}</p></section>'
        )


def spec_json(spec: dict[str, Any]) -> str:
    """A spec as JSON that cannot close its ``<script>`` element."""
    text = json.dumps(spec, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


@lru_cache(maxsize=1)
def javascript_bundle() -> str:
    """vega-embed, Vega-Lite and Vega as one script, for the Vega-Lite altair writes."""
    alt, vlc = require()
    major_minor = "_".join(alt.SCHEMA_VERSION.split(".")[:2])
    try:
        bundle: str = vlc.javascript_bundle(vl_version=major_minor)
    except ValueError as exc:  # a vl-convert older than the Vega-Lite altair writes
        raise MissingDependencyError(
            f"vl-convert-python has no Vega-Lite {alt.SCHEMA_VERSION} ({exc}): upgrade it, "
            "pip install -U 'hwadvisor[report]'"
        ) from exc
    return bundle.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def _render(page: Page) -> str:
    charts = "\n".join(
        f'<script type="application/json" data-chart="{ident}">{spec_json(spec)}</script>'
        for ident, spec in page.charts
    )
    scripts = (
        f"<script>{javascript_bundle()}</script>\n{charts}\n<script>{LOADER}</script>"
        if page.charts
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{esc(page.title)}</title>\n<style>{sec.CSS}</style></head>\n"
        f'<body><header><h1>{esc(page.title)}</h1><p class="sub">{esc(page.subtitle)}</p></header>\n<main>\n'
        + "\n".join(page.parts)
        + f"\n</main>\n{sec.footer()}\n{scripts}\n</body></html>\n"
    )


def _options_charts(
    page: Page, rows: Sequence[Any], title: str, limit: float | None, limit_text: str
) -> None:
    if any(r.seconds for r in rows):
        caption = "Each bar is one way to run the workload; the dashed line is the target."
        page.chart(
            "Time per option",
            caption,
            time_chart(rows, title=title, limit_s=limit, limit_text=limit_text),
        )
    if any(r.usd is not None for r in rows):
        caption = "On-demand price for the estimated time; the black tick is the spot price with its allowance."
        page.chart("Cost per option", caption, cost_chart(rows))


def _memory(page: Page, rows: Sequence[Any]) -> None:
    if rows:
        caption = "Bar: the job's memory on one device; black tick: the device's capacity."
        page.chart("Memory against capacity", caption, memory_chart(rows))


def _language_model(
    page: Page,
    wl: Workload,
    serving: Sequence[llm.ServingRow],
    finetune: Sequence[llm.FinetuneRow],
) -> None:
    """Serving and fine-tuning sections, each with its charts, when the rows carry them."""
    if serving:
        page.parts.append(llm.serving_section(serving, wl))
        for row in serving:
            points = llm.curve_of(row.serving)
            if points:
                caption = (
                    "Continuous batching, per replica: aggregate tokens/s (solid, left axis) "
                    "and time to first token (dashed, right axis) as more requests are in "
                    "flight; a hollow point's KV cache does not fit."
                )
                page.chart(f"Batching curve of {row.label}", caption, curve_chart(points))
    parts = [(r, p) for r in finetune if (p := llm.memory_parts(r.finetune, r.memory))]
    if finetune:
        page.parts.append(llm.finetune_section(finetune, wl))
    if parts:
        caption = (
            "The job as written, per GPU, by part; the black tick is the GPU's capacity. "
            "Host (paged or offloaded) memory is not on the GPU and not in the bar."
        )
        page.chart("Fine-tuning memory by part", caption, memory_parts_chart(parts))


def _rooflines(page: Page, bench: BenchReport) -> None:
    for device, title in rd.bench_devices(bench):
        points, roofs = rd.roof_points(bench, device), rd.roofs(bench, device)
        if points and roofs:
            caption = (
                "Measured figures (points) under each dtype's ceiling: the memory bandwidth "
                "slope, then the compute peak. A dashed ceiling is not a known peak but the "
                "best figure measured."
            )
            if any((r.efficiency or 0) > 1 for r in bench.results if r.device == device):
                caption += (
                    " A point above its ceiling means the peak is understated: a CPU whose "
                    "top clock is unknown gets its peak from the base clock."
                )
            page.chart(f"Roofline of {title}", caption, roofline_chart(points, roofs))
        elif points:
            page.parts.append(
                sec.note(f"No roofline for {title}: no bandwidth figure was measured.")
            )


def advice_html(advice: Advice) -> str:
    """The advice as a page: verdict, time, cost and memory per option, a language model's
    serving or fine-tuning figures, findings, bench."""
    wl = advice.workload
    page = Page(
        f"hwadvisor advice: {wl.model or 'workload'} for {advice.scenario.value}",
        sec.machine_line(advice),
    )
    page.parts.append(sec.verdict(advice))
    page.parts.append(sec.workload(wl))
    deadline = wl.deadline_hours * 3600
    title = "time of the whole job (log scale)"
    _options_charts(
        page, rd.advice_options(advice), title, deadline, f"deadline {duration(deadline)}"
    )
    page.parts.append(sec.choices(advice.estimates))
    _language_model(page, wl, llm.advice_serving(advice), llm.advice_finetune(advice))
    _memory(page, rd.advice_memory(advice))
    page.parts.append(sec.findings(advice.findings, "Findings"))
    if advice.bench is not None:
        _rooflines(page, advice.bench)
    page.parts.append(sec.migration(advice.migration))
    return _render(page)


def estimate_html(report: EstimateReport) -> str:
    """The estimate as a page: time, cost and memory per device, a language model's serving
    or fine-tuning figures, the table, the guidance."""
    wl = report.workload
    page = Page(
        f"hwadvisor estimate: {wl.model or 'workload'} ({wl.task.value})", sec.workload_line(wl)
    )
    page.parts.append(sec.workload(wl))
    title, limit, limit_text = rd.time_basis(wl)
    _options_charts(page, rd.estimate_options(report), title, limit, limit_text)
    page.parts.append(sec.choices(report))
    _language_model(page, wl, llm.estimate_serving(report), llm.estimate_finetune(report))
    _memory(page, rd.estimate_memory(report))
    page.parts.append(sec.estimates_table(report))
    if report.guidance:
        page.parts.append(sec.findings(report.guidance, "Guidance"))
    return _render(page)


def bench_html(bench: BenchReport) -> str:
    """The bench as a page: a roofline per device, every figure, the comparisons."""
    page = Page("hwadvisor bench", sec.bench_line(bench))
    _rooflines(page, bench)
    page.parts.append(sec.bench_table(bench))
    return _render(page)


def report_html(doc: Advice | EstimateReport | BenchReport) -> str:
    """The page for any of the three documents."""
    from hwadvisor.models.advice import Advice
    from hwadvisor.models.bench import BenchReport

    if isinstance(doc, Advice):
        return advice_html(doc)
    if isinstance(doc, BenchReport):
        return bench_html(doc)
    return estimate_html(doc)


def require_for(path: str | None) -> None:
    """Before any work: when ``--html`` is given, fail now if altair is not installed."""
    if path:
        require()


def write_report(path: str | None, doc: Advice | EstimateReport | BenchReport) -> None:
    """Write the page of ``doc`` to ``path`` atomically (nothing when ``path`` is None).

    The whole page is built before anything is written: a missing altair, or any other
    failure, leaves no file behind.
    """
    if not path:
        return
    from hwadvisor.io import atomic_write_text

    atomic_write_text(path, report_html(doc))
