"""Figures that know when they are unreliable, and what the advice does with them (issue 14.3)."""

from __future__ import annotations

from typing import Any

import pytest

from hwadvisor.bench.derived import derive
from hwadvisor.bench.reliability import BUSY_LOAD, Load, busy_reason, mark, mark_busy
from hwadvisor.bench.sizing import Reliability, SizingOutcome, Timing
from hwadvisor.engine.derived import BENCH
from hwadvisor.engine.derived.bench import AMX_FRACTION, FP32_FRACTION, BenchView
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Cpu, CpuFeatures, Facts, PeakGflops


def _fig(
    dtype: str, value: float, *, reliable: bool | None = True, peak: float | None = None
) -> BenchResult:
    return BenchResult(
        device="cpu",
        kernel="matmul",
        dtype=dtype,
        shape=[512, 512, 512],
        value=value,
        unit="GOP/s" if dtype == "int8" else "GFLOP/s",
        median_s=0.01,
        iqr_s=0.0005,
        runs=8,
        threads=2,
        peak=peak,
        efficiency=value / peak if peak else None,
        reliable=reliable,
    )


def test_mark_sets_reliability_and_says_why() -> None:
    r = _fig("fp32", 100.0, reliable=None)
    good = mark(r, Reliability(True, 0.02))
    assert good.reliable is True and good.spread == 0.02 and good.note is None
    bad = mark(r, Reliability(False, 0.4, "spread (IQR / median) 40%, over 10%"))
    assert bad.reliable is False and bad.spread == 0.4 and "40%" in (bad.note or "")


def test_a_busy_machine_marks_every_cpu_figure() -> None:
    reason = busy_reason(4.0, 2)
    assert reason is not None and "load average 4.0 on 2 cores" in reason
    assert busy_reason(2.0, 2) is None and busy_reason(None, 2) is None
    assert busy_reason(BUSY_LOAD * 8, 8) is not None
    marked = mark_busy([_fig("fp32", 100.0), _fig("bf16", 50.0)], reason)
    assert all(r.reliable is False and "busy" in (r.note or "") for r in marked)
    assert mark_busy([_fig("fp32", 100.0)], None)[0].reliable is True


def test_load_at_the_end_leaves_out_the_runs_own_threads() -> None:
    # After 60 s, two benchmark threads have put 2·(1 - 1/e) = 1.26 into the average.
    assert Load(0.5, 1.76).others(2, 60.0) == pytest.approx(0.5, abs=0.01)
    assert Load(0.5, 5.0).others(2, 60.0) == pytest.approx(3.74, abs=0.01)
    assert Load(None, None).others(2, 10.0) is None


def test_bench_evidence_compares_only_reliable_figures() -> None:
    results = [_fig("fp32", 100.0), _fig("int8", 0.3, reliable=False)]
    out = {d.id: d for d in derive(results, None)}
    assert "cpu.int8_over_fp32" not in out  # no "324x slower, prefer fp32" from a toy figure
    doubt = out["cpu.unreliable_figures"]
    assert (
        doubt.ratio == 0.5 and "matmul int8" in doubt.text and "kept with its spread" in doubt.text
    )


def test_dtypes_are_compared_at_a_size_both_were_measured_at() -> None:
    def at(dtype: str, n: int, value: float) -> BenchResult:
        return _fig(dtype, value).model_copy(update={"shape": [n, n, n]})

    # fp32 reaches 100 only at 2048; at 256, where bf16 was measured too, it ran at 20
    results = [at("fp32", 256, 20.0), at("fp32", 2048, 100.0), at("bf16", 256, 40.0)]
    ratio = {d.id: d for d in derive(results, None)}["cpu.bf16_over_fp32"]
    assert ratio.ratio == pytest.approx(2.0) and "256³" in ratio.text


def _ctx(results: list[BenchResult]) -> dict[str, Any]:
    report = BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)
    return BENCH.compute(BenchView.of(report))


def test_unreliable_figures_draw_no_measured_conclusion() -> None:
    ctx = _ctx([_fig("fp32", 100.0), _fig("bf16", 30.0, reliable=False)])
    assert ctx["bench.cpu.matmul.fp32"] == 100.0
    assert ctx.get("bench.cpu.matmul.bf16") is None
    # No peak recorded: no assumed ratio either, so no rule reads one.
    assert ctx.get("bench.cpu.bf16_over_fp32") is None
    # The estimates rest on the fp32 figures (a bf16 job's too, once its own figure is
    # left out): an unsteady bf16 figure is no doubt on them, an unsteady fp32 one is.
    assert ctx["bench.cpu.unreliable_figures"] == 0
    ctx = _ctx([_fig("fp32", 100.0, reliable=False), _fig("bf16", 30.0, reliable=False)])
    assert ctx["bench.cpu.unreliable_figures"] == 1


def test_amx_falls_back_to_the_peaks_times_the_stated_fractions() -> None:
    ctx = _ctx(
        [
            _fig("fp32", 3000.0, peak=4000.0),
            _fig("bf16", 0.5, reliable=False, peak=64000.0),  # AMX: 16x the fp32 peak
        ]
    )
    assert ctx["bench.cpu.bf16_over_fp32"] == pytest.approx(16 * AMX_FRACTION / FP32_FRACTION)
    assert ctx["bench.cpu.bf16_over_fp32"] == pytest.approx(2.0)
    assert ctx["bench.cpu.bf16_over_fp32_assumed"] is True


def test_no_native_path_is_at_most_fp32_and_unsourced_paths_stay_unknown() -> None:
    ctx = _ctx(
        [
            _fig("fp32", 130.0, reliable=False, peak=156.0),
            _fig("bf16", 2.0, peak=156.0),  # no native bf16: the fp32 rate at best
            _fig("int8", 3.0, peak=312.0),  # no dot-product instructions: no published fraction
        ]
    )
    assert ctx["bench.cpu.bf16_over_fp32"] == pytest.approx(1.0)
    assert ctx["bench.cpu.bf16_over_fp32_assumed"] is True
    assert ctx.get("bench.cpu.int8_over_fp32") is None


def test_measured_ratio_is_marked_as_measured() -> None:
    ctx = _ctx([_fig("fp32", 100.0, peak=156.0), _fig("bf16", 2.0, peak=156.0)])
    assert ctx["bench.cpu.bf16_over_fp32"] == pytest.approx(0.02)
    assert ctx["bench.cpu.bf16_over_fp32_assumed"] is False


def test_run_bench_records_the_load_and_marks_a_busy_run() -> None:
    pytest.importorskip("torch")
    from hwadvisor.bench import run_bench

    def steady(torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        return SizingOutcome(
            shape=case.ladder[case.start], timing=Timing(median_s=0.01, iqr_s=0.0001, runs=6)
        )

    facts = Facts(
        cpu=Cpu(usable_cores=2, features=CpuFeatures(), peak_gflops=PeakGflops(fp32=150.0))
    )
    calm = run_bench(facts=facts, quick=True, measure=steady, load_reader=lambda: 0.5)
    assert calm.load_avg_1m == 0.5 and calm.usable_cores == 2
    assert calm.results and all(r.reliable is True for r in calm.results)
    busy = run_bench(facts=facts, quick=True, measure=steady, load_reader=lambda: 4.0)
    assert busy.load_avg_1m == 4.0 and busy.load_avg_1m_end == 4.0
    assert all(r.reliable is False and "busy" in (r.note or "") for r in busy.results)
    ids = {d.id for d in busy.derived}
    assert "cpu.load_over_threads" in ids and "cpu.bf16_over_fp32" not in ids
