"""Derived evidence, peak lookup, device parsing and the rich view, from built reports."""

from __future__ import annotations

import io
from types import SimpleNamespace
from typing import Any

import pytest

from hwadvisor.bench.derived import derive
from hwadvisor.bench.devices import Target, parse_device, resolve
from hwadvisor.bench.peaks import gpu_peak, peak_for
from hwadvisor.errors import UsageError
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Cpu, CpuFeatures, Facts, PeakGflops


def result(device: str, kernel: str, dtype: str, value: float, **kw: Any) -> BenchResult:
    unit = "GB/s" if kernel in ("copy", "triad") else "GFLOP/s"
    return BenchResult(
        device=device, kernel=kernel, dtype=dtype, shape=[512, 512, 512], value=value,
        unit=unit, median_s=0.01, iqr_s=0.001, runs=10, threads=2, **kw,
    )  # fmt: skip


def facts_with(**features: bool) -> Facts:
    return Facts(cpu=Cpu(features=CpuFeatures(**features), usable_cores=2))


def by_id(items: list[Any]) -> dict[str, Any]:
    return {d.id: d for d in items}


def test_amx_speedup_names_amx_only_when_the_cpu_has_it() -> None:
    res = [result("cpu", "matmul", "fp32", 300.0), result("cpu", "matmul", "bf16", 2940.0)]
    amx = by_id(derive(res, facts_with(amx_bf16=True, amx_tile=True)))["cpu.bf16_over_fp32"]
    assert amx.ratio == pytest.approx(9.8)
    assert "9.8x faster" in amx.text and "(AMX)" in amx.text
    plain = by_id(derive(res, facts_with(avx2=True)))["cpu.bf16_over_fp32"]
    assert "AMX" not in plain.text.replace("no AMX", "")


def test_bf16_slower_than_fp32_is_said_plainly_with_the_reason() -> None:
    res = [result("cpu", "matmul", "fp32", 120.0), result("cpu", "matmul", "bf16", 1.2)]
    d = by_id(derive(res, facts_with(avx2=True, fma=True)))["cpu.bf16_over_fp32"]
    assert d.ratio == pytest.approx(0.01)
    assert "100.0x slower" in d.text
    assert "no AMX, no AVX-512 BF16" in d.text
    assert "prefer fp32" in d.text


def test_a_figure_past_the_peak_says_the_peak_is_understated() -> None:
    """A VM hides the top clock; the peak then assumes the base clock, and boost beats it."""
    over = [result("cpu", "matmul", "fp32", 162.0, efficiency=1.038, peak=156.0)]
    d = by_id(derive(over, facts_with(avx2=True)))["cpu.fp32_matmul_of_peak"]
    assert d.ratio == pytest.approx(1.038)
    assert "104% of this CPU's theoretical peak (156 GFLOP/s)" in d.text
    assert "the clock the peak assumes is too low" in d.text
    under = [result("cpu", "matmul", "fp32", 120.0, efficiency=0.77, peak=156.0)]
    assert "too low" not in by_id(derive(under, None))["cpu.fp32_matmul_of_peak"].text


def test_without_facts_no_cause_is_claimed() -> None:
    res = [result("cpu", "matmul", "fp32", 100.0), result("cpu", "matmul", "int8", 50.0)]
    d = by_id(derive(res, None))["cpu.int8_over_fp32"]
    assert "not probed" in d.text and "VNNI" not in d.text


def test_gpu_against_cpu_and_busy_machine() -> None:
    res = [
        result("cpu", "matmul", "fp32", 100.0),
        result("cpu", "copy", "fp32", 10.0),
        result("cuda:0", "matmul", "fp16", 4100.0),
        result("cuda:0", "matmul", "fp32", 1000.0),
        result("cuda:0", "copy", "fp32", 4000.0),
    ]
    got = by_id(derive(res, None, load_1m=5.0))
    assert got["cuda:0.fp16_over_cpu_fp32"].ratio == pytest.approx(41.0)
    assert "41x this CPU's fp32" in got["cuda:0.fp16_over_cpu_fp32"].text
    assert got["cuda:0.fp16_over_fp32"].ratio == pytest.approx(4.1)
    assert got["cuda:0.copy_over_cpu_copy"].ratio == pytest.approx(400.0)
    assert got["cpu.load_over_threads"].ratio == pytest.approx(2.5)
    assert "cpu.load_over_threads" not in by_id(derive(res, None, load_1m=1.0))
    busy_cpu = [result("cpu", "matmul", "fp32", 100.0), result("cpu", "matmul", "bf16", 50.0)]
    assert "busy machine" in by_id(derive(busy_cpu, None, load_1m=5.0))["cpu.bf16_over_fp32"].text
    assert "busy" not in by_id(derive(busy_cpu, None, load_1m=0.5))["cpu.bf16_over_fp32"].text


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA A10", "a10"),
        ("NVIDIA A100-SXM4-80GB", "a100-80gb"),
        ("NVIDIA A100-SXM4-40GB", "a100-40gb"),
        ("NVIDIA H100 PCIe", "h100-pcie"),
        ("NVIDIA H100 80GB HBM3", "h100-sxm"),
        ("NVIDIA H200", "h200"),
        ("Tesla T4", "t4"),
        ("NVIDIA GeForce RTX 4090", "rtx-4090"),
        ("AMD Instinct MI300X", "mi300x"),
    ],
)
def test_gpu_peak_matches_names_torch_reports(name: str, expected: str) -> None:
    entry = gpu_peak(name)
    assert entry is not None and entry.id == expected


def test_unknown_gpu_and_missing_facts_give_no_peak() -> None:
    gpu = Target("cuda:0", "cuda", 0, "Some Future GPU", None, 1)
    cpu = Target("cpu", "cpu", None, "x", None, 2)
    assert gpu_peak("Some Future GPU") is None
    assert peak_for(gpu, "matmul", "fp16", None) is None
    assert peak_for(cpu, "matmul", "fp32", None) is None


def test_peaks_in_the_figure_unit() -> None:
    h200 = Target("cuda:0", "cuda", 0, "NVIDIA H200", None, 1)
    assert peak_for(h200, "matmul", "bf16", None) == pytest.approx(989_000.0)
    assert peak_for(h200, "copy", "fp32", None) == pytest.approx(4800.0)
    assert peak_for(h200, "h2d", "uint8", None) is None
    facts = Facts(cpu=Cpu(peak_gflops=PeakGflops(fp32=156.5, bf16=156.5, int8=313.0)))
    cpu = Target("cpu", "cpu", None, "x", None, 2)
    assert peak_for(cpu, "conv2d", "bf16", facts) == pytest.approx(156.5)
    assert peak_for(cpu, "matmul", "int8", facts) == pytest.approx(313.0)
    assert peak_for(cpu, "matmul", "fp16", facts) is None
    assert peak_for(cpu, "copy", "fp32", facts) is None


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("cpu", ("cpu", None)),
        ("CUDA:1", ("cuda", 1)),
        ("all", ("all", None)),
        ("xpu", ("xpu", None)),
    ],
)
def test_parse_device(spec: str, parsed: tuple[str, int | None]) -> None:
    assert parse_device(spec) == parsed


@pytest.mark.parametrize("spec", ["tpu", "cpu:0", "cuda:x", "", "mps:1", "all:2"])
def test_parse_device_refuses_nonsense(spec: str) -> None:
    with pytest.raises(UsageError, match="unknown device"):
        parse_device(spec)


def fake_torch(cuda_count: int = 0) -> Any:
    props = SimpleNamespace(name="NVIDIA H200", uuid="1234")
    cuda = SimpleNamespace(
        is_available=lambda: cuda_count > 0,
        device_count=lambda: cuda_count,
        get_device_properties=lambda i: props,
    )
    mps = SimpleNamespace(is_available=lambda: False)
    return SimpleNamespace(cuda=cuda, backends=SimpleNamespace(mps=mps), get_num_threads=lambda: 7)


def test_resolve_absent_devices_are_usage_errors() -> None:
    with pytest.raises(UsageError, match="no cuda device"):
        resolve(fake_torch(0), "cuda", None)
    with pytest.raises(UsageError, match=r"cuda:3 does not exist"):
        resolve(fake_torch(2), "cuda:3", None)
    with pytest.raises(UsageError, match="no mps"):
        resolve(fake_torch(0), "mps", None)


def test_resolve_all_and_threads() -> None:
    targets = resolve(fake_torch(2), "all", facts_with())
    assert [t.device for t in targets] == ["cpu", "cuda:0", "cuda:1"]
    assert targets[0].threads == 2  # usable cores from the facts, not torch's 7
    assert targets[1].uuid == "GPU-1234" and targets[1].name == "NVIDIA H200"
    assert resolve(fake_torch(0), "cpu", None)[0].threads == 7


def test_render_shows_table_bars_evidence_and_skips() -> None:
    from rich.console import Console

    from hwadvisor.models.bench import BenchSkip
    from hwadvisor.render.bench import bar_lines, render_bench

    res = [
        result("cpu", "matmul", "fp32", 120.0, efficiency=0.77, peak=156.5),
        result("cpu", "matmul", "bf16", 1.2),
    ]
    report = BenchReport(
        budget_s=9.0, elapsed_s=8.7, results=res, derived=derive(res, facts_with()),
        skipped=[BenchSkip(device="cpu", kernel="matmul", dtype="fp16", reason="not implemented for 'Half'")],
    )  # fmt: skip
    buf = io.StringIO()
    render_bench(report, Console(file=buf, width=120, color_system=None))
    text = buf.getvalue()
    assert "512³" in text and "77%" in text
    assert "100.0x slower than fp32 at 512³" in text
    assert "not implemented for 'Half'" in text
    bars = bar_lines(report, width=40)
    assert bars[0].count("█") == 40 and "█" not in bars[1]  # 100x smaller: a sliver only
    assert "over the budget" not in text


def test_an_overrun_budget_is_explained() -> None:
    from rich.console import Console

    from hwadvisor.render.bench import render_bench

    res = [result("cpu", "matmul", "fp32", 120.0)]
    report = BenchReport(budget_s=0.5, elapsed_s=4.0, torch_import_s=2.1, results=res)
    buf = io.StringIO()
    render_bench(report, Console(file=buf, width=200, color_system=None))
    text = " ".join(buf.getvalue().split())
    assert "over the budget: importing torch took most of it" in text
    assert "torch's import 2.1 s" in text


def test_a_report_with_kernels_an_older_version_measured_still_loads() -> None:
    import json
    from pathlib import Path

    from hwadvisor.models.bench import drifted

    data = Path(__file__).resolve().parents[1] / "data" / "bench"
    old = json.loads((data / "recorded-xeon-amx-kvm.json").read_text(encoding="utf-8"))
    old["results"].append(
        {**old["results"][0], "kernel": "matmul_rows_cold", "level": "dram", "working_set_bytes": 1}
    )
    report = BenchReport.model_validate(old)
    assert any(r.kernel == "matmul_rows_cold" for r in report.results)
    assert report.best("cpu", "matmul", "fp32") is not None
    # the drift verdict the engine reads lives with the document, not the bench
    assert drifted(0.7) and drifted(1.3) and not drifted(0.9) and not drifted(1.15)
