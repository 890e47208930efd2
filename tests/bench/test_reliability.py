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
    assert doubt.ratio == 0.5 and "matmul int8" in doubt.text and "theoretical peak" in doubt.text


def test_the_doubt_says_what_the_estimate_does_with_unreliable_sweep_figures() -> None:
    swept = _fig("fp32", 20.0, reliable=False).model_copy(
        update={"kernel": "dropout", "unit": "GB/s", "level": "dram", "working_set_bytes": 1 << 26}
    )
    alone = {d.id: d for d in derive([_fig("fp32", 100.0), swept], None)}
    text = alone["cpu.unreliable_figures"].text
    assert "nearest reliable figure" in text and "theoretical peak" not in text
    both = {d.id: d for d in derive([_fig("int8", 0.3, reliable=False), swept], None)}
    text = both["cpu.unreliable_figures"].text
    assert "theoretical peak for the products" in text and "memory sweep's families" in text


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


def test_the_estimator_uses_the_theoretical_peak_for_an_unreliable_fp32_figure() -> None:
    from hwadvisor.estimate.timing.cpu import ASSUMED_HERE_GEMM, here_rates
    from hwadvisor.models.workload import Precision

    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0)))
    report = BenchReport(
        budget_s=1.0, elapsed_s=1.0, results=[_fig("fp32", 3.0, reliable=False, peak=150.0)]
    )
    rates = here_rates(facts, report, Precision.FP32)
    assert rates.basis.startswith("assumed efficiency x theoretical peak")
    assert rates.gemm(1024.0) == pytest.approx(150e9 * ASSUMED_HERE_GEMM)
    assert any("unreliable" in a for a in rates.assumptions)
    steady = BenchReport(budget_s=1.0, elapsed_s=1.0, results=[_fig("fp32", 100.0, peak=150.0)])
    assert here_rates(facts, steady, Precision.FP32).basis.startswith("measured here")


def test_steady_small_products_still_price_when_only_the_sized_figure_is_unreliable() -> None:
    # As on a Xeon guest: the 2,048 matmul unsteady, its small squares and rows steady.
    from hwadvisor.estimate.timing.cpu import ASSUMED_HERE_GEMM, here_rates
    from hwadvisor.models.workload import Precision

    def small(kernel: str, shape: list[int], value: float) -> BenchResult:
        return _fig("fp32", value).model_copy(update={"kernel": kernel, "shape": shape})

    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0)))
    results = [
        _fig("fp32", 3.0, reliable=False, peak=150.0).model_copy(update={"shape": [2048] * 3}),
        small("matmul_small", [64, 64, 64], 30.0),
        small("matmul_small", [256, 256, 256], 80.0),
        small("matmul_rows", [4, 1024, 1024], 20.0),
        small("matmul_rows", [16, 1024, 1024], 40.0),
    ]
    rates = here_rates(
        facts, BenchReport(budget_s=1.0, elapsed_s=1.0, results=results), Precision.FP32
    )
    assert rates.basis.startswith("measured here")
    # Large products from the peak's assumed share; the small ones from their own figures.
    assert rates.gemm(2048.0) == pytest.approx(150e9 * ASSUMED_HERE_GEMM)
    assert rates.gemm(64.0) == pytest.approx(30e9) and rates.gemm(256.0) == pytest.approx(80e9)
    assert rates.rows_points == [(4.0, 20e9), (16.0, 40e9)]
    assert any("sized fp32 matmul figure was unreliable" in a for a in rates.assumptions)


def test_an_unsteady_figure_above_the_base_clock_peak_raises_the_peak() -> None:
    # interference only slows a run: a figure over the base-clock peak shows the boost
    from hwadvisor.estimate.timing.cpu import ASSUMED_HERE_GEMM, here_rates
    from hwadvisor.models.workload import Precision

    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0, bf16=300.0)))
    fast = BenchReport(
        budget_s=1.0, elapsed_s=1.0, results=[_fig("fp32", 220.0, reliable=False, peak=150.0)]
    )
    rates = here_rates(facts, fast, Precision.FP32)
    # The peak rises to it, and the products run no slower than the figure itself did.
    assert rates.gemm(1024.0) == pytest.approx(220e9)
    assert any("faster than base" in a for a in rates.assumptions)
    assert any("it is the floor used" in a for a in rates.assumptions)
    slow = BenchReport(
        budget_s=1.0, elapsed_s=1.0, results=[_fig("fp32", 80.0, reliable=False, peak=150.0)]
    )
    assert here_rates(facts, slow, Precision.FP32).gemm(1024.0) == pytest.approx(
        150e9 * ASSUMED_HERE_GEMM
    )
    between = BenchReport(
        budget_s=1.0, elapsed_s=1.0, results=[_fig("fp32", 120.0, reliable=False, peak=150.0)]
    )
    assert here_rates(facts, between, Precision.FP32).gemm(1024.0) == pytest.approx(120e9)


def test_the_fallback_takes_the_peak_of_the_jobs_precision() -> None:
    from hwadvisor.estimate.timing.cpu import ASSUMED_HERE_GEMM, here_rates
    from hwadvisor.models.workload import Precision

    with_bf16 = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0, bf16=300.0)))
    assert here_rates(with_bf16, None, Precision.BF16).gemm(1024.0) == pytest.approx(
        300e9 * ASSUMED_HERE_GEMM
    )
    assert here_rates(with_bf16, None, Precision.FP32).gemm(1024.0) == pytest.approx(
        150e9 * ASSUMED_HERE_GEMM
    )
    fp32_only = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0)))
    rates = here_rates(fp32_only, None, Precision.BF16)
    assert rates.gemm(1024.0) == pytest.approx(150e9 * ASSUMED_HERE_GEMM)
    assert any("no native bf16" in a for a in rates.assumptions)


def test_emulated_bf16_is_priced_at_this_runs_share_of_fp32() -> None:
    from hwadvisor.estimate.timing.cpu import here_rates
    from hwadvisor.models.workload import Precision

    # As the probe writes a CPU without a bf16 dot product: the bf16 peak is the fp32 one.
    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0, bf16=150.0)))
    both = [_fig("fp32", 120.0, reliable=False, peak=150.0)]
    bench = BenchReport(
        budget_s=1.0, elapsed_s=1.0, results=[*both, _fig("bf16", 30.0, reliable=False)]
    )
    fp32 = here_rates(facts, bench, Precision.FP32).gemm(1024.0)
    bf16 = here_rates(facts, bench, Precision.BF16)
    assert bf16.gemm(1024.0) == pytest.approx(0.25 * fp32)
    assert any("0.25x the fp32 rate" in a for a in bf16.assumptions)
    # No bf16 figure to compare: the fp32 rate, said to be a ceiling.
    alone = here_rates(
        facts, BenchReport(budget_s=1.0, elapsed_s=1.0, results=both), Precision.BF16
    )
    assert alone.gemm(1024.0) == pytest.approx(fp32)
    assert any("a ceiling" in a for a in alone.assumptions)
    # A bf16 figure above fp32 on such a CPU is noise: the share is capped at 1.
    over = BenchReport(
        budget_s=1.0, elapsed_s=1.0, results=[*both, _fig("bf16", 200.0, reliable=False)]
    )
    assert here_rates(facts, over, Precision.BF16).gemm(1024.0) == pytest.approx(fp32)
    # A native bf16 peak (above fp32) is the bf16 path's own: no share is taken.
    native = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0, bf16=300.0)))
    rates = here_rates(native, bench, Precision.BF16)
    assert not any("x the fp32 rate" in a for a in rates.assumptions)


def _square(
    kernel: str, n: int, value: float, *, reliable: bool, dtype: str = "fp32"
) -> BenchResult:
    return _fig(dtype, value, reliable=reliable).model_copy(
        update={"kernel": kernel, "shape": [n, n, n]}
    )


def test_unsteady_figures_raise_the_curve_they_lie_above() -> None:
    from hwadvisor.estimate.timing.cpu import here_rates
    from hwadvisor.models.workload import Precision

    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=333.0, bf16=333.0)))
    steady = [
        _square("matmul", 1024, 216.0, reliable=True),
        _square("matmul_small", 64, 55.0, reliable=True),
    ]
    alone = here_rates(
        facts, BenchReport(budget_s=1.0, elapsed_s=1.0, results=steady), Precision.FP32
    )
    read_between = alone.gemm(256.0)
    assert read_between is not None and read_between < 150e9
    # The 256 square ran at 225 but too unsteadily to price with: a floor all the same.
    unsteady = [*steady, _square("matmul_small", 256, 225.0, reliable=False)]
    rates = here_rates(
        facts, BenchReport(budget_s=1.0, elapsed_s=1.0, results=unsteady), Precision.FP32
    )
    assert rates.gemm(256.0) == pytest.approx(225e9)
    assert rates.gemm(1024.0) == pytest.approx(216e9)
    assert any("raised to the bench's unsteady figures at 256" in a for a in rates.assumptions)
    # One below the curve is no evidence against it: the curve stands.
    low = [*steady, _square("matmul_small", 256, 40.0, reliable=False)]
    kept = here_rates(facts, BenchReport(budget_s=1.0, elapsed_s=1.0, results=low), Precision.FP32)
    assert kept.gemm(256.0) == pytest.approx(read_between)
    assert not any("raised" in a for a in kept.assumptions)


def test_a_steady_curve_prices_emulated_bf16_at_the_unsteady_bf16_figures_share() -> None:
    from hwadvisor.estimate.timing.cpu import here_rates
    from hwadvisor.models.workload import Precision

    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=333.0, bf16=333.0)))
    results = [
        _square("matmul", 512, 200.0, reliable=True),
        _square("matmul", 1024, 220.0, reliable=True),
        _square("matmul", 512, 50.0, reliable=False, dtype="bf16"),
    ]
    bench = BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)
    fp32 = here_rates(facts, bench, Precision.FP32)
    bf16 = here_rates(facts, bench, Precision.BF16)
    assert bf16.gemm(1024.0) == pytest.approx(0.25 * fp32.gemm(1024.0))
    assert any("0.25x the fp32 rate" in a for a in bf16.assumptions)
    # With a native bf16 dot product an unsteady bf16 figure is no share of fp32.
    amx = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=333.0, bf16=5300.0)))
    assert here_rates(amx, bench, Precision.BF16).gemm(1024.0) == pytest.approx(220e9)
