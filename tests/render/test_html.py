"""The --html report: one self-contained page, the documents' values in its charts,
user text escaped, nothing written when altair is missing; Chromium renders it cleanly."""

from __future__ import annotations

import functools
import importlib.util
import json
import subprocess
import sys
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.models.advice import Advice
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.estimate import DeviceEstimate, EstimateReport, MemoryBreakdown
from hwadvisor.render.html import advice_html, bench_html, estimate_html

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

ROOT = Path(__file__).resolve().parents[2]
FACTS = ROOT / "tests" / "data" / "reports" / "recorded-epyc-milan-kvm.json"
BENCH = Path(__file__).parent / "data" / "bench-epyc-kvm.json"
CHROMIUM = Path("/usr/bin/chromium")
needs_report = pytest.mark.skipif(
    not all(importlib.util.find_spec(m) for m in ("altair", "vl_convert")),
    reason="the report extra is not installed (pip install 'hwadvisor[report]')",
)


class Page(HTMLParser):
    """The tags of a page with their attributes, and each chart's spec."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.specs: dict[str, dict[str, Any]] = {}
        self._chart: str | None = None
        self._text: list[str] = []
        self.text = ""
        self.feed(text)
        self.text = "".join(self._text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        self._chart = dict(attrs).get("data-chart") if tag == "script" else None

    def handle_data(self, data: str) -> None:
        if self._chart:
            self.specs[self._chart] = json.loads(data)
        elif not self.tags or self.tags[-1][0] not in ("script", "style"):
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        self._chart = None


def _values(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """Every inline data row of a (layered) spec."""
    rows = list(spec.get("data", {}).get("values", []))
    for layer in spec.get("layer", []):
        rows += _values(layer)
    rows += [v for d in spec.get("datasets", {}).values() for v in d]
    return rows


def _chart(page: Page, field: str) -> list[dict[str, Any]]:
    """The rows having ``field`` of the one chart whose data has it."""
    found = [rows for rows in map(_values, page.specs.values()) if any(field in r for r in rows)]
    assert len(found) == 1, f"{len(found)} charts carry {field!r}"
    return [r for r in found[0] if field in r]


@pytest.fixture(scope="module")
def advice_run(cli: Cli, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    """recommend --json --html for the recorded EPYC guest with its recorded bench."""
    out = tmp_path_factory.mktemp("advice") / "advice.html"
    args = ["recommend", "--scenario", "training", "--model", "resnet50", "--facts", str(FACTS)]
    result = cli(*args, "--bench-file", str(BENCH), "--json", "--html", str(out))
    assert result.code == 0, result.err
    return result.json(), out.read_text(encoding="utf-8")


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
@needs_report
def test_the_page_is_self_contained(advice_run: tuple[dict[str, Any], str]) -> None:
    _, text = advice_run
    page = Page(text)
    scripts = [a for t, a in page.tags if t == "script"]
    assert scripts and all("src" not in a for a in scripts)
    for tag, attrs in page.tags:
        for name, value in attrs.items():
            if name in ("src", "href", "data", "action", "poster"):
                assert not (value or "").lower().startswith(("http:", "https:", "//")), (tag, name)
    assert not [a for t, a in page.tags if t == "link"]
    csp = [a["content"] for t, a in page.tags if a.get("http-equiv") == "Content-Security-Policy"]
    assert csp and "default-src 'none'" in (csp[0] or "")
    assert "vegaEmbed" in text and "window.vegaEmbed" in text  # the library is inlined
    fields = [{k for r in _values(spec) for k in r} for spec in page.specs.values()]
    for field in ("seconds", "used_gib", "intensity"):  # time, memory, roofline
        assert sum(field in f for f in fields) == 1
    assert all("$schema" not in s for s in page.specs.values())


@needs_report
def test_the_verdict_and_findings_are_on_the_page(advice_run: tuple[dict[str, Any], str]) -> None:
    doc, text = advice_run
    page = Page(text)
    assert doc["verdict"]["summary"] in page.text
    assert f"rule {doc['verdict']['rule']}" in page.text
    assert doc["findings"]
    for finding in doc["findings"]:
        assert finding["rule"] in page.text and finding["severity"] in page.text
        assert finding["title"] in page.text
        assert f"sources: {', '.join(finding['source'])}" in page.text


@needs_report
def test_time_and_memory_charts_hold_every_option(advice_run: tuple[dict[str, Any], str]) -> None:
    doc, text = advice_run
    page = Page(text)
    times = _chart(page, "seconds")
    here = doc["estimates"]["here"]
    want = [here["total_time_s"]] + [a["time_s"] for a in doc["estimates"]["alternatives"]]
    assert sorted(r["seconds"] for r in times) == pytest.approx(sorted(want))
    assert any(r["label"] == "this machine (AMD EPYC)" for r in times)
    assert any(r["label"] == "NVIDIA H100 SXM 80GB ×8" for r in times)
    memory = _chart(page, "used_gib")
    mine = next(r for r in memory if r["label"].startswith("this machine"))
    assert mine["used_gib"] == pytest.approx(here["memory_bytes"] / 2**30)
    assert mine["capacity_gib"] == pytest.approx(here["device_memory_bytes"] / 2**30)
    t4 = next(r for r in memory if r["label"] == "NVIDIA T4 16GB")
    assert t4["capacity_gib"] == pytest.approx(16e9 / 2**30) and t4["status"] == "fits"


@needs_report
def test_the_roofline_places_each_figure(advice_run: tuple[dict[str, Any], str]) -> None:
    _, text = advice_run
    points = _chart(Page(text), "intensity")
    bench = json.loads(BENCH.read_text())
    on_roof = [r for r in bench["results"] if r["kernel"] in ("matmul", "conv2d", "triad")]
    assert len(points) == len(on_roof)
    mm = next(p for p in points if p["label"] == "matmul fp32 2048x2048x2048")
    assert mm["intensity"] == pytest.approx(2048 / 6)  # 2n³ FLOPs over 3 n² fp32 matrices
    triad = next(p for p in points if p["kernel"] == "triad")
    measured = next(r["value"] for r in bench["results"] if r["kernel"] == "triad")
    assert triad["intensity"] == pytest.approx(1 / 6)  # 2 FLOPs per 12 bytes
    assert triad["flops"] == pytest.approx(measured * 1e9 / 6)


@needs_report
def test_user_text_is_escaped(advice_run: tuple[dict[str, Any], str]) -> None:
    doc, _ = advice_run
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>&amp;'
    doc = json.loads(json.dumps(doc))
    doc["machine"]["hostname"] = hostile
    doc["workload"]["model"] = hostile
    doc["estimates"]["alternatives"][0]["name"] = hostile
    text = advice_html(Advice.model_validate(doc))
    assert hostile not in text and "<img src=x" not in text and 'alert("x")</script>' not in text
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in text
    page = Page(text)
    assert hostile in page.text  # the reader sees the name as typed
    assert any(r.get("label") == hostile for r in _chart(page, "seconds"))  # and the chart too


@needs_report
def test_estimate_html_charts_each_device(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "estimate.html"
    args = ["estimate", "--model", "resnet50", "--on", "t4", "--on", "a100-80gb", "--no-bench"]
    result = cli(*args, "--json", "--html", str(out))
    assert result.code == 0, result.err
    doc = result.json()
    page = Page(out.read_text(encoding="utf-8"))
    times = {r["label"]: r["seconds"] for r in _chart(page, "seconds")}
    for est in doc["estimates"]:
        assert times[est["name"]] == pytest.approx(est["total_time_s"])
        assert est["name"] in page.text
    assert {r["label"] for r in _chart(page, "used_gib")} == {e["name"] for e in doc["estimates"]}
    assert [p.name for p in tmp_path.iterdir()] == ["estimate.html"]  # no temporary file left


@pytest.fixture
def canned_bench(monkeypatch: pytest.MonkeyPatch) -> None:
    """bench through the real runner with canned timings (run_bench's ``measure`` seam)."""
    pytest.importorskip("torch")
    import hwadvisor.bench
    import hwadvisor.pipeline.commands as commands
    from hwadvisor.bench import runner
    from hwadvisor.bench.sizing import SizingOutcome, Timing

    def measure(torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        timing = Timing(median_s=0.25, iqr_s=0.01, runs=5)
        return SizingOutcome(shape=case.ladder[case.start], timing=timing)

    monkeypatch.setattr(commands, "probe_or_none", lambda: None)
    monkeypatch.setattr(
        hwadvisor.bench, "run_bench", functools.partial(runner.run_bench, measure=measure)
    )


@needs_report
def test_bench_html_is_a_roofline(cli: Cli, tmp_path: Path, canned_bench: None) -> None:
    out = tmp_path / "bench.html"
    result = cli("bench", "--device", "cpu", "--budget", "2", "--json", "--html", str(out))
    assert result.code == 0, result.err
    doc = result.json()
    page = Page(out.read_text(encoding="utf-8"))
    points = _chart(page, "intensity")
    on_roof = [r for r in doc["results"] if r["kernel"] in ("matmul", "conv2d", "triad")]
    assert {(p["kernel"], p["dtype"]) for p in points} == {
        (r["kernel"], r["dtype"]) for r in on_roof
    }
    assert all(r["kernel"] in page.text for r in doc["results"])


@needs_report
@pytest.mark.skipif("cost" not in DeviceEstimate.model_fields, reason="estimates carry no cost yet")
def test_cost_is_charted_when_the_estimate_is_priced(cli: Cli) -> None:
    args = ["estimate", "--model", "resnet50", "--on", "t4", "--on", "a100-80gb", "--no-bench"]
    doc = cli(*args, "--json").json()
    for i, est in enumerate(doc["estimates"]):
        est["cost"] = {"instance": f"inst-{i}", "on_demand_usd": 10.0 + i, "spot_usd": 4.0 + i}
        est["cost"] |= {"price_date": "2026-11-01"}
    doc["cheapest"] = {"device": "t4", "instance": "inst-0", "usd": 10.0, "meets_deadline": True}
    page = Page(estimate_html(EstimateReport.model_validate(doc)))
    costs = {r["label"]: r for r in _chart(page, "usd")}
    assert costs["NVIDIA T4 16GB"]["usd"] == 10.0 and costs["NVIDIA T4 16GB"]["spot_usd"] == 4.0
    assert costs["NVIDIA A100 SXM 80GB"]["cost_text"] == "$11.00 on inst-1 (2026-11-01 price)"
    assert "Cost picks" in page.text and "cheapest that meets the deadline" in page.text
    plan = "32 × NVIDIA H100 SXM 80GB with FSDP (ZeRO-3)"
    doc["cheapest"] |= {"plan": plan, "nodes": 4, "instance": "p5.48xlarge"}
    page = Page(estimate_html(EstimateReport.model_validate(doc)))
    assert plan in page.text and "4 x p5.48xlarge" in page.text


@needs_report
def test_unpriced_estimates_have_no_cost_chart(cli: Cli) -> None:
    args = ["estimate", "--model", "resnet50", "--on", "t4", "--no-bench", "--json"]
    doc = cli(*args).json()
    for est in doc["estimates"]:
        est.pop("cost", None)
    page = Page(estimate_html(EstimateReport.model_validate(doc)))
    assert not any(any("usd" in r for r in _values(spec)) for spec in page.specs.values())
    assert "Cost per option" not in page.text


@needs_report
@pytest.mark.skipif(
    "lower_bytes" not in MemoryBreakdown.model_fields, reason="no memory bounds in estimates yet"
)
def test_memory_bounds_are_drawn_when_carried(advice_run: tuple[dict[str, Any], str]) -> None:
    doc, text = advice_run
    memory = doc["estimates"]["here"]["memory"]
    mine = next(r for r in _chart(Page(text), "used_gib") if r["label"].startswith("this machine"))
    assert mine["lower_gib"] == pytest.approx(memory["lower_bytes"] / 2**30)
    assert mine["upper_gib"] == pytest.approx(memory["upper_bytes"] / 2**30)
    assert "range" in mine["text"]


def test_missing_altair_exits_3_and_writes_nothing(
    cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "altair", None)
    out, doc = tmp_path / "r.html", tmp_path / "r.json"
    args = ["estimate", "--model", "resnet50", "--on", "t4", "--no-bench"]
    result = cli(*args, "--html", str(out), "--output", str(doc))
    assert result.code == 3
    lines = result.error_lines()
    assert len(lines) == 1 and "pip install 'hwadvisor[report]'" in lines[0]  # before any work
    assert "Traceback" not in result.err
    assert list(tmp_path.iterdir()) == []  # neither the page nor the JSON was written
    as_json = cli(*args, "--json", "--html", str(out))
    assert as_json.code == 3 and as_json.json()["error"]["kind"] == "missing_dependency"


@needs_report
def test_an_unwritable_path_is_one_line(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "no-such-folder" / "r.html"
    result = cli("estimate", "--model", "resnet50", "--on", "t4", "--no-bench", "--html", str(out))
    assert result.code == 2
    errors = [ln for ln in result.error_lines() if "error:" in ln]
    assert len(errors) == 1 and "no-such-folder" in errors[0]
    assert not out.parent.exists()


@needs_report
def test_an_unwritable_report_leaves_one_json_document_and_keeps_the_output(
    cli: Cli, tmp_path: Path
) -> None:
    # found by the argument fuzzer: the document was printed, then the error after it.
    # The JSON --output is written before the page (issue 44: a failed --html must not
    # lose it); stdout still carries one document, the error.
    out, doc = tmp_path / "no-such-folder" / "r.html", tmp_path / "doc.json"
    args = ["estimate", "--model", "resnet50", "--on", "t4", "--no-bench", "--json"]
    result = cli(*args, "--output", str(doc), "--html", str(out))
    assert result.code == 2
    assert json.loads(result.out)["error"]["where"] == str(out)  # one document, the error
    assert json.loads(doc.read_text())["workload"]["model"] == "resnet50"


@needs_report
def test_a_bench_without_bandwidth_says_why_there_is_no_roofline() -> None:
    bench = BenchReport.model_validate_json(BENCH.read_text())
    compute_only = bench.model_copy(
        update={"results": [r for r in bench.results if r.kernel not in ("copy", "triad")]}
    )
    page = Page(bench_html(compute_only))
    assert "no bandwidth figure was measured" in page.text
    assert not page.specs


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)")
@needs_report
def test_chromium_renders_every_page_without_a_console_error(tmp_path: Path) -> None:
    script = ROOT / "scripts" / "check_html_report.py"
    shot = tmp_path / "shot.png"
    args = [sys.executable, str(script), "--chromium", str(CHROMIUM), "--screenshot", str(shot)]
    done = subprocess.run(
        [*args, "--keep", str(tmp_path)], capture_output=True, text=True, timeout=240, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count(", ok") == 3
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 50_000


@pytest.mark.slow
@pytest.mark.skipif(not CHROMIUM.exists(), reason="no /usr/bin/chromium (apt-get install chromium)")
@needs_report
def test_chromium_check_fails_on_a_fetch_and_a_broken_chart(tmp_path: Path) -> None:
    text = bench_html(BenchReport.model_validate_json(BENCH.read_text()))
    fetch = tmp_path / "fetch.html"
    fetch.write_text(text.replace("<main>", '<main><img src="https://example.invalid/x.png">', 1))
    broken = tmp_path / "broken.html"
    start = text.index('data-chart="chart-1">') + len('data-chart="chart-1">')
    end = text.index("</script>", start)
    broken.write_text(text[:start] + '{"layer": 5}' + text[end:])
    script = ROOT / "scripts" / "check_html_report.py"
    for page, expected in ((fetch, "request: https://example.invalid"), (broken, "no SVG")):
        args = [sys.executable, str(script), "--screenshot", str(tmp_path / "s.png"), str(page)]
        done = subprocess.run(args, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 1, done.stdout
        assert expected in done.stdout


@needs_report
def test_a_gpu_roofline_uses_the_catalog_peaks() -> None:
    from hwadvisor.render.report_data import roof_points, roofs

    def figure(kernel: str, dtype: str, shape: list[int], value: float, peak: float | None) -> Any:
        unit = "GB/s" if kernel in ("copy", "triad") else "GFLOP/s"
        return {"device": "cuda:0", "kernel": kernel, "dtype": dtype, "shape": shape,
                "value": value, "unit": unit, "median_s": 0.01, "iqr_s": 0.0, "runs": 5,
                "peak": peak}  # fmt: skip

    doc = {
        "schema_version": "1.0",
        "budget_s": 10.0,
        "elapsed_s": 10.0,
        "devices": [{"device": "cuda:0", "name": "NVIDIA H100 80GB HBM3"}],
        "results": [
            figure("matmul", "bf16", [8192, 8192, 8192], 700e3, 989e3),
            figure("matmul", "fp32", [8192, 8192, 8192], 50e3, 67e3),
            figure("copy", "fp32", [268435456], 3000.0, 3350.0),
            figure("triad", "fp32", [268435456], 3100.0, 3350.0),
            figure("h2d", "uint8", [268435456], 50.0, None),  # no peak (NaN is refused)
        ],
    }
    bench = BenchReport.model_validate(doc)
    ceilings = {r.dtype: r for r in roofs(bench, "cuda:0")}
    assert set(ceilings) == {"bf16", "fp32"}
    bf16 = ceilings["bf16"]
    assert not bf16.measured and not bf16.bandwidth_measured  # both from the peaks
    assert bf16.peak_flops == 989e12 and bf16.bandwidth_bytes_s == 3350e9
    assert bf16.label == "bf16 989 TFLOP/s peak"
    assert ceilings["fp32"].label == "fp32 67 TFLOP/s peak"
    points = {p.label: p for p in roof_points(bench, "cuda:0")}
    assert set(points) == {
        "matmul bf16 8192x8192x8192",
        "matmul fp32 8192x8192x8192",
        "triad fp32 268435456",
    }
    assert points["matmul bf16 8192x8192x8192"].intensity == pytest.approx(8192 / 3)
    page = Page(bench_html(bench))
    assert "Roofline of cuda:0: NVIDIA H100 80GB HBM3" in page.text


def _scales(node: Any) -> list[dict[str, Any]]:
    """Every scale of a spec that lists both a domain and a range."""
    found = []
    if isinstance(node, dict):
        scale = node.get("scale")
        if isinstance(scale, dict) and "domain" in scale and "range" in scale:
            found.append(scale)
        for value in node.values():
            found += _scales(value)
    elif isinstance(node, list):
        for value in node:
            found += _scales(value)
    return found


@needs_report
def test_inference_times_per_batch_against_the_latency_target(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "infer.html"
    args = ["estimate", "--model", "resnet50", "--task", "infer", "--latency-ms", "20"]
    result = cli(*args, "--on", "t4", "--on", "l4", "--no-bench", "--json", "--html", str(out))
    assert result.code == 0, result.err
    doc = result.json()
    page = Page(out.read_text(encoding="utf-8"))
    times = {r["label"]: r for r in _chart(page, "seconds")}
    for est in doc["estimates"]:
        row = times[est["name"]]
        assert row["seconds"] == pytest.approx(est["step_time_s"])
        met = est["step_time_s"] <= 0.020
        assert row["status"] == ("meets" if met else "misses") + " the latency target"
    assert "latency target 20 ms" in json.dumps(page.specs)
    # A status without a colour once left a scale with an empty range: the chart grew to
    # 2^25 px in Chromium. Every listed domain has its colours.
    for spec in page.specs.values():
        for scale in _scales(spec):
            assert scale["domain"] and len(scale["domain"]) == len(scale["range"])
