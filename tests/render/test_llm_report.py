"""Language-model rows in the HTML report and the terminal: serving per device (tokens/s,
TTFT, concurrency, requests/s, a batching curve where carried), fine-tuning per device
(memory by part, tokens/s, method, framework, checkpointing, the fixes, the row's
answers), the row the verdict chose; user text stays text; a page without charts works.

The documents are real: built by ``hwadvisor.pipeline`` from the recorded facts in
``tests/data/facts`` and the catalog models llama-3-8b and mixtral-8x7b.
"""

from __future__ import annotations

import functools
import importlib.util
import io
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.models.advice import Advice
from hwadvisor.models.estimate import EstimateReport
from hwadvisor.models.options import RunOptions, WorkloadOptions
from hwadvisor.models.workload import Scenario
from hwadvisor.pipeline import estimate, recommend
from hwadvisor.render.report_data import label_of
from hwadvisor.units import duration, human_bytes

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "data" / "facts"
CHROMIUM = Path("/usr/bin/chromium")
INJECTED = '<img src=x onerror="alert(1)">&amp;'
needs_report = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("altair", "vl_convert")),
    reason="the report extra is not installed (pip install 'hwadvisor[report]')",
)


class Page(HTMLParser):
    """A page's sections (h2 heading -> text), its tags, and its chart specs."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.sections: dict[str, str] = {}
        self.charts = 0
        self._heading: str | None = None
        self._in: list[str] = []
        self._skip = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._in.append(tag)
        self._skip = tag in ("script", "style")
        if tag == "script" and dict(attrs).get("data-chart"):
            self.charts += 1
        if tag == "h2":
            self._heading = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "h2" and self._heading is not None:
            self.sections[self._heading] = ""
        self._skip = False

    def handle_data(self, data: str) -> None:
        if self._skip:
            return
        if self._in and self._in[-1] == "h2" and self._heading == "":
            self._heading = data
        elif self._heading:
            self.sections[self._heading] = self.sections.get(self._heading, "") + data + " "

    def section(self, heading: str) -> str:
        """The text of the section under ``heading``."""
        assert heading in self.sections, f"no {heading!r} in {list(self.sections)}"
        return self.sections[heading]


def _rate(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


@functools.cache
def _advice(facts: str, scenario: Scenario, **workload: Any) -> Advice:
    options = RunOptions(
        workload=WorkloadOptions(**workload), facts_file=str(FACTS / facts), no_bench=True
    )
    return recommend(scenario=scenario, options=options).advice


@functools.cache
def _estimate(*on: str, **workload: Any) -> EstimateReport:
    return estimate(
        workload=WorkloadOptions(**workload),
        on=list(on),
        no_bench=True,
        facts_file=str(FACTS / "a100-cloud.json"),
    )


def qlora_advice() -> Advice:
    return _advice(
        "a100-cloud.json",
        Scenario.TRAINING,
        model="llama-3-8b",
        task="finetune",
        method="qlora",
        dataset_size=10_000,
    )


def serving_advice() -> Advice:
    return _advice("t4-cloud.json", Scenario.INFERENCE, model="mixtral-8x7b", qps=20.0)


def full_estimate() -> EstimateReport:
    return _estimate(
        "t4",
        "a100-80gb",
        model="llama-3-8b",
        task="finetune",
        method="full",
        batch_size=4,
        dataset_size=10_000,
    )


def lora_estimate() -> EstimateReport:
    return _estimate(
        "a100-80gb", model="llama-3-8b", task="finetune", method="lora", dataset_size=10_000
    )


# -- the row the verdict chose ------------------------------------------------------------


def test_the_chosen_row_is_one_line_of_the_verdict_in_words() -> None:
    from hwadvisor.render.chosen import chosen_line

    advice = qlora_advice()
    o = advice.verdict.option
    assert o is not None and o.here
    line = chosen_line(advice)
    assert line is not None
    assert line.startswith(f"this machine's {o.gpus} × {o.name}, {duration(o.time_s)}")
    # This machine's own GPU, given no price: what it costs is its owner's, not a cloud bill.
    assert o.usd is None and "unpriced" in line
    assert f"one of {o.feasible} options that fit and finish within the 24 h deadline" in line
    served = serving_advice()
    so = served.verdict.option
    assert so is not None and not so.here and so.per == "month"
    text = chosen_line(served)
    assert text is not None and f"{so.gpus} × {so.name}" in text
    assert f"${so.usd:,.2f} a month" in text
    assert f"fits and serves 20 requests/s, of {so.feasible} that do" in text


def test_no_chosen_line_when_the_verdict_chose_no_row() -> None:
    from hwadvisor.render.chosen import chosen_line

    advice = qlora_advice()
    none = advice.model_copy(update={"verdict": advice.verdict.model_copy(update={"option": None})})
    assert chosen_line(none) is None


def test_the_terminal_verdict_names_the_chosen_row() -> None:
    from rich.console import Console

    from hwadvisor.render.advice import render_advice
    from hwadvisor.render.chosen import chosen_line

    advice = qlora_advice()
    con = Console(file=io.StringIO(), width=200, record=True)
    render_advice(advice, con)
    text = con.export_text()
    verdict = text.split("Machine ")[0]  # the panel comes first
    assert f"chosen: {chosen_line(advice)}" in verdict


# -- terminal: fine-tuning fixes and answers ----------------------------------------------


def _estimate_text(report: EstimateReport) -> str:
    from rich.console import Console

    from hwadvisor.render.llm import render_llm

    con = Console(file=io.StringIO(), width=200, record=True)
    render_llm(con, report)
    return con.export_text()


def test_the_terminal_lists_each_fix_itself_in_order() -> None:
    report = full_estimate()
    text = _estimate_text(report)
    for est in report.estimates:
        assert est.finetune is not None and est.finetune.options
        block = text.split(f"{est.device} does not fit")[1].split("does not fit")[0]
        lines = [ln.strip() for ln in block.splitlines() if ln.strip()[:2].rstrip(".").isdigit()]
        assert len(lines) == len(est.finetune.options)
        for i, (line, o) in enumerate(zip(lines, est.finetune.options, strict=True), 1):
            assert o.fix is not None
            assert line.startswith(f"{i}. {o.fix}: {human_bytes(o.memory_bytes)}")
            assert line.endswith("(fits)") is o.fits
    # the micro-batch fix of batch 4 runs one sequence with 4 steps of accumulation
    t4 = report.estimates[0].finetune
    assert t4 is not None
    assert any(o.batch_size == 1 and o.grad_accumulation == 4 for o in t4.options)
    assert "micro-batch 1 with 4 steps of gradient accumulation" in text


def test_the_fine_tune_line_carries_the_rows_answers() -> None:
    report = lora_estimate()
    (est,) = report.estimates
    ft = est.finetune
    assert ft is not None and ft.longest_seq_batch1 and ft.largest_micro_batch is not None
    assert ft.hours is not None and ft.dataset_tokens and ft.tokens_per_s
    line = " ".join(_estimate_text(report).split())
    assert line.startswith("LoRA, rank 16 on attn:")
    assert f"{ft.dataset_tokens:,} tokens of data" in line
    assert (
        f"on {est.device}: {_rate(ft.tokens_per_s)} tokens/s, {duration(ft.hours * 3600)}" in line
    )
    assert f"longest sequence at micro-batch 1: {ft.longest_seq_batch1:,} tokens" in line
    assert f"largest micro-batch at 2,048 tokens: {ft.largest_micro_batch:,}" in line


# -- HTML ---------------------------------------------------------------------------------


@needs_report
def test_the_advice_page_shows_fine_tuning_and_the_chosen_row() -> None:
    from hwadvisor.render.chosen import chosen_line
    from hwadvisor.render.html import advice_html

    advice = qlora_advice()
    page = Page(advice_html(advice))
    assert f"chosen: {chosen_line(advice)}" in " ".join(page.section("Verdict").split())
    here = advice.estimates.here
    assert here is not None and here.finetune is not None and here.memory is not None
    ft, mem = here.finetune, here.memory
    text = page.section("Fine-tuning")
    assert "QLoRA, rank 16 on attn" in text and ft.framework == "hf"
    assert " hf " in text and " on " in text  # framework; checkpointing on
    assert ft.tokens_per_s is not None and _rate(ft.tokens_per_s) in text
    assert ft.longest_seq_batch1 and f"micro-batch 1: {ft.longest_seq_batch1:,} tokens" in text
    assert f"tokens of data: {ft.dataset_tokens:,}" in text
    # the memory by part: adapters and logits apart from the weights and activations
    assert ft.adapter_bytes and ft.logits_bytes
    for size in (
        mem.weights_bytes - ft.adapter_bytes,
        ft.adapter_bytes,
        mem.optimizer_bytes,
        (mem.activations_bytes or 0) - ft.logits_bytes,
        ft.logits_bytes,
        mem.runtime_bytes,
        mem.total_bytes,
    ):
        assert f" {human_bytes(size)} " in text
    assert "Fine-tuning memory by part" in page.sections


@needs_report
def test_memory_parts_add_up_to_the_total_on_every_row() -> None:
    from hwadvisor.render.report_llm import estimate_finetune, memory_parts

    for row in estimate_finetune(full_estimate()) + estimate_finetune(lora_estimate()):
        parts = memory_parts(row.finetune, row.memory)
        assert row.memory is not None
        assert sum(parts.values()) == row.memory.total_bytes
        assert all(v > 0 for v in parts.values())


@needs_report
def test_the_estimate_page_lists_the_fixes_and_marks_the_plan() -> None:
    from hwadvisor.render.html import estimate_html

    report = full_estimate()
    page = Page(estimate_html(report))
    text = " ".join(page.section("Fine-tuning").split())
    for est in report.estimates:
        assert est.finetune is not None
        name = est.name or est.device
        fixes = text.split(f"{name}: the fixes in order")[1].split("the fixes in order")[0]
        at = [fixes.index(o.fix or "") for o in est.finetune.options]
        assert at == sorted(at)  # in the ladder's order
        plan = next(o for o in est.finetune.options if o.fits)
        assert f"{plan.fix} the plan" in fixes
        assert fixes.count("the plan") == 1
        assert f"{est.finetune.tokens_per_s:,.0f}" in text
    assert "1 × 4" in text  # micro-batch x accumulation of the fix that splits the batch


@needs_report
def test_the_serving_page_shows_each_device() -> None:
    from hwadvisor.render.html import advice_html

    advice = serving_advice()
    page = Page(advice_html(advice))
    text = page.section("Serving")
    rows = [a for a in advice.estimates.alternatives if a.serving is not None]
    assert len(rows) >= 5
    for a in rows:
        s = a.serving
        assert s is not None and s.prefill_tokens_per_s and s.decode_tokens_per_s
        assert s.ttft_s is not None and s.requests_per_s is not None
        cells = f"{_rate(s.prefill_tokens_per_s)} {_rate(s.decode_tokens_per_s)}"
        assert cells in text, cells
        assert duration(s.ttft_s) in text and f"{s.requests_per_s:.3g}" in text
        # the row's inter-token latency, else one sequence's alone
        assert duration(s.itl_s if s.itl_s is not None else 1 / s.decode_tokens_per_s) in text
        assert s.concurrency is not None and f" {s.concurrency:,} " in text
    eight = next(a.serving for a in rows if a.gpus == 8)
    assert eight is not None and eight.requests_per_s_per_gpu is not None
    assert f"{eight.requests_per_s_per_gpu:.3g} per GPU" in text
    assert "the most the memory holds" in text  # the concurrency chosen by batching
    assert "lighter formats, in order" in text
    # each row with a batching curve: its points in a table and a chart
    curved = [a for a in rows if a.serving is not None and a.serving.curve]
    assert curved
    for a in curved:
        assert a.serving is not None
        label = label_of(a.device, a.name, a.gpus)
        assert f"batching curve of {label} (per replica)" in text
        assert f"Batching curve of {label}" in page.sections
        for p in a.serving.curve:
            assert (
                f"{p.concurrency:,} {_rate(p.aggregate_tokens_per_s)} {duration(p.ttft_s)}" in text
            )


@needs_report
def test_injected_text_stays_text() -> None:
    from hwadvisor.render.html import advice_html, estimate_html

    report = full_estimate()
    est = report.estimates[0]
    assert est.finetune is not None
    fixes = [o.model_copy(update={"fix": INJECTED}) for o in est.finetune.options]
    finetune = est.finetune.model_copy(update={"options": fixes, "framework": INJECTED})
    bad = est.model_copy(update={"name": INJECTED, "finetune": finetune})
    wl = report.workload.model_copy(update={"model": INJECTED})
    report = report.model_copy(update={"workload": wl, "estimates": [bad]})
    advice = serving_advice()
    alts = [a.model_copy(update={"name": INJECTED}) for a in advice.estimates.alternatives]
    assert advice.verdict.option is not None
    option = advice.verdict.option.model_copy(update={"name": INJECTED})
    advice = advice.model_copy(
        update={
            "estimates": advice.estimates.model_copy(update={"alternatives": alts}),
            "verdict": advice.verdict.model_copy(update={"option": option}),
        }
    )
    for text in (estimate_html(report), advice_html(advice)):
        page = Page(text)
        assert not [t for t, _ in page.tags if t == "img"]
        assert not [a for _, a in page.tags if "onerror" in a]
        assert INJECTED in " ".join(page.sections.values())
    serving = Page(advice_html(advice)).section("Serving")
    assert INJECTED in serving
    assert INJECTED in Page(advice_html(advice)).section("Verdict")


@needs_report
def test_a_page_without_charts_still_shows_the_rows() -> None:
    """No time, no price, no memory parts: no chart and no script, the tables all there."""
    from hwadvisor.render.html import estimate_html

    report = lora_estimate()
    bare = [
        e.model_copy(
            update={
                "step_time_s": None,
                "total_time_s": None,
                "cost": None,
                "memory": None,
                "memory_bytes": None,
            }
        )
        for e in report.estimates
    ]
    plain = report.model_copy(
        update={"estimates": bare, "cheapest": None, "fastest": None, "cheapest_gpu": None}
    )
    text = estimate_html(plain)
    page = Page(text)
    assert page.charts == 0 and not [t for t, _ in page.tags if t == "script"]
    ft = bare[0].finetune
    assert ft is not None and ft.tokens_per_s
    section = page.section("Fine-tuning")
    assert _rate(ft.tokens_per_s) in section and "LoRA, rank 16 on attn" in section
    assert "Memory per GPU, by part" not in section  # no parts to show


@needs_report
def test_a_batching_curve_becomes_a_table_and_a_chart() -> None:
    from hwadvisor.catalog import find_device
    from hwadvisor.llm import DeviceSpec, find_engine, find_format, resolve_model
    from hwadvisor.llm.serving import batching_curve
    from hwadvisor.render.llm_charts import curve_chart
    from hwadvisor.render.report_llm import curve_points

    a100 = DeviceSpec.from_catalog(find_device("a100-80gb"))
    arch = resolve_model("llama-3-8b").arch
    points = batching_curve(arch, find_format("bf16"), find_engine("vllm"), a100)
    assert len(points) > 3
    rows = curve_points(points)
    assert [r.concurrency for r in rows] == [p.concurrency for p in points]
    assert [r.tokens_s for r in rows] == [p.aggregate_tokens_s for p in points]
    assert [r.itl_s for r in rows] == [p.itl_s for p in points]
    values = [v for layer in _layers(curve_chart(rows)) for v in layer]
    assert {v["concurrency"] for v in values} == {p.concurrency for p in points}
    assert {v["ttft_ms"] for v in values} == {p.ttft_s * 1000 for p in points}


def _layers(spec: dict[str, Any]) -> list[list[dict[str, Any]]]:
    """The inline data of every layer of a spec."""
    out = [spec.get("data", {}).get("values", [])]
    out += [v for d in spec.get("datasets", {}).values() for v in [d]]
    for layer in spec.get("layer", []):
        out += _layers(layer)
    return [v for v in out if v]


@pytest.mark.slow  # starts Chromium
@needs_report
@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium")
def test_chromium_renders_the_language_model_pages(tmp_path: Path) -> None:
    from hwadvisor.render.html import advice_html, estimate_html

    pages = {
        "finetune-advice.html": advice_html(qlora_advice()),
        "serving-advice.html": advice_html(serving_advice()),
        "finetune-estimate.html": estimate_html(full_estimate()),
    }
    for name, text in pages.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    script = ROOT / "scripts" / "check_html_report.py"
    shot = tmp_path / "shot.png"
    args = [sys.executable, str(script), "--screenshot", str(shot)]
    done = subprocess.run(
        [*args, *(str(tmp_path / n) for n in pages)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for name in pages:
        assert f"{name}: " in done.stdout and "ok" in done.stdout
