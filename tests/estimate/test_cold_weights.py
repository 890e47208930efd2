"""Products of few rows against weights past the last-level cache: priced from DRAM."""

from __future__ import annotations

import pytest

from hwadvisor.estimate.timing.cpu import here_rates
from hwadvisor.estimate.timing.step import step_time
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Cpu, Facts
from hwadvisor.models.workload import GemmBucket, ModelKind, OpProfile, Precision, Task, Workload

MIB = 2**20
HOT = {1: 25.0, 16: 60.0, 64: 90.0}
COLD = {1: 10.0, 16: 45.0, 64: 90.0}


def _figure(kernel: str, value: float, shape: list[int]) -> BenchResult:
    return BenchResult(
        device="cpu", kernel=kernel, dtype="fp32", shape=shape, value=value, unit="GFLOP/s",
        median_s=1e-3, iqr_s=0.0, runs=5, threads=2,
    )  # fmt: skip


def _bench(cold: dict[int, float] | None = None) -> BenchReport:
    """Squares at 100 GFLOP/s, few-row products hot at HOT and from DRAM at ``cold``."""
    results = [_figure("matmul", 100.0, [n, n, n]) for n in (32, 256, 1024)]
    results += [_figure("matmul_rows", v, [m, 1024, 1024]) for m, v in HOT.items()]
    results += [_figure("matmul_rows_cold", v, [m, 1024, 1024]) for m, v in (cold or {}).items()]
    return BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)


def _facts(l3: int = 32 * MIB) -> Facts:
    return Facts(cpu=Cpu(usable_cores=2, l3_bytes=l3))


def _mlp(params: int, *, batch: int = 1, task: Task = Task.INFER) -> Workload:
    """One 1024-square product per sample: 2 MFLOP, rows = the batch."""
    bucket = GemmBucket(size=round((batch * 1024 * 1024) ** (1 / 3)), flops=2.0 * 1024 * 1024,
                        rows=batch, work_size=round((batch * 1024 * 1024) ** (1 / 3)))  # fmt: skip
    prof = OpProfile(gemm=[bucket], kernels=1)
    return Workload(kind=ModelKind.MLP, task=task, batch_size=batch, params=params,
                    flops_per_sample=2.0 * 1024 * 1024, profile=prof)  # fmt: skip


def test_cold_factors_are_the_cold_figures_over_the_hot_ones_of_the_same_rows() -> None:
    rates = here_rates(_facts(), _bench(COLD), Precision.FP32)
    assert rates.cold_factors == [(1.0, 0.4), (16.0, 0.75), (64.0, 1.0)]
    assert rates.cache_bytes == 32 * MIB
    assert any("matmul_rows_cold" in a for a in rates.assumptions)
    # A 1-row product from DRAM: its hot rows figure times the share; 4 rows: both read
    # in log rows, halfway from 1 to 16.
    assert rates.product(10, rows=1, work=102, cold=True) == pytest.approx(10e9)
    hot4 = rates.product(12, rows=4, work=161)
    assert hot4 is not None
    assert rates.product(12, rows=4, work=161, cold=True) == pytest.approx(hot4 * 0.575)
    # From the top of the rows curve on, the square curve, hot or not.
    assert rates.product(170, rows=64, work=400, cold=True) == rates.gemm(170)


def test_without_cold_figures_products_are_priced_hot() -> None:
    rates = here_rates(_facts(), _bench(), Precision.FP32)
    assert rates.cold_factors == []
    assert rates.product(10, rows=1, work=102, cold=True) == pytest.approx(25e9)


def test_inference_past_the_cache_reads_its_weights_from_dram() -> None:
    rates = here_rates(_facts(), _bench(COLD), Precision.FP32)
    big, small = _mlp(50_000_000), _mlp(1_000_000)  # 200 MB and 4 MB of fp32 weights
    big_step, small_step = step_time(big, rates), step_time(small, rates)
    # 2 MFLOP at one row: 10 GFLOP/s from DRAM, 25 in cache.
    assert big_step.parts["gemm"] == pytest.approx(2.0 * 1024 * 1024 / 10e9)
    assert small_step.parts["gemm"] == pytest.approx(2.0 * 1024 * 1024 / 25e9)
    assert any("from DRAM" in n for n in big_step.notes)
    assert not any("from DRAM" in n for n in small_step.notes)
    # A 64 MiB cache: 200 MB of weights are still past it, 50 MB are not.
    wide = here_rates(_facts(64 * MIB), _bench(COLD), Precision.FP32)
    assert step_time(big, wide).parts["gemm"] == pytest.approx(2.0 * 1024 * 1024 / 10e9)
    assert step_time(_mlp(12_500_000), wide).parts["gemm"] == pytest.approx(2.0 * 1024 * 1024 / 25e9)  # fmt: skip


def test_training_and_an_unknown_cache_stay_at_the_hot_figures() -> None:
    rates = here_rates(_facts(), _bench(COLD), Precision.FP32)
    train = step_time(_mlp(50_000_000, task=Task.TRAIN), rates)
    assert not any("from DRAM" in n for n in train.notes)
    unknown = here_rates(None, _bench(COLD), Precision.FP32)
    assert unknown.cache_bytes is None
    step = step_time(_mlp(50_000_000), unknown)
    assert step.parts["gemm"] == pytest.approx(2.0 * 1024 * 1024 / 25e9)


def test_a_bf16_job_reads_the_bf16_rows_figures() -> None:
    """On a CPU with a bf16 dot product the bench measures the rows in bf16 as well."""
    bf16 = [
        r.model_copy(update={"dtype": "bf16", "value": r.value * 3})
        for r in _bench(COLD).results
    ]  # fmt: skip
    rates = here_rates(_facts(), _bench(COLD).model_copy(update={"results": bf16}), Precision.BF16)  # fmt: skip
    assert rates.rows_points == [(1.0, 75e9), (16.0, 180e9), (64.0, 270e9)]
    assert rates.cold_factors == [(1.0, 0.4), (16.0, 0.75), (64.0, 1.0)]
    # With fp32 figures alone a bf16 job goes at the fp32 rates, its rows curve included.
    alone = here_rates(_facts(), _bench(COLD), Precision.BF16)
    assert alone.rows_points == [(1.0, 25e9), (16.0, 60e9), (64.0, 90e9)]
    assert any("fp32 rate is used" in a for a in alone.assumptions)


def test_one_row_from_dram_is_a_fixed_cost_and_the_weight_streamed() -> None:
    """With a second, wider one-row cold figure, a one-row product costs the line through
    the two: a 4 MiB weight in 200 µs and a 64 MiB one in 2.6 ms is 40 µs a call plus
    the weight at 26.2 GB/s."""
    bench = _bench(COLD)
    t_narrow, t_wide = 200e-6, 2.6e-3
    narrow = bench.results[-3]  # the one-row 1024-square cold figure
    assert narrow.shape == [1, 1024, 1024]
    results = [r for r in bench.results if r is not narrow]
    results += [
        _figure("matmul_rows_cold", 2 * 1024**2 / t_narrow / 1e9, [1, 1024, 1024]),
        _figure("matmul_rows_cold", 2 * 4096**2 / t_wide / 1e9, [1, 4096, 4096]),
    ]
    rates = here_rates(_facts(), bench.model_copy(update={"results": results}), Precision.FP32)
    assert rates.cold_row_line is not None
    fixed, per_element, least = rates.cold_row_line
    assert least == 1024**2
    assert fixed == pytest.approx(40e-6)
    assert 4 / per_element == pytest.approx(4 * 15 * 1024**2 / 2.4e-3)
    assert any("40 µs a call" in a and "4 and 64 MiB" in a for a in rates.assumptions)
    # The wide figure is not a point of the 1024-square factors.
    assert rates.cold_factors[0] == (1.0, pytest.approx((2 * 1024**2 / t_narrow) / 25e9))
    # One row by a 2048-square weight: 40 µs + 16 MiB streamed, two FLOPs an element.
    work = (2048 * 2048) ** (1 / 3)
    want = 2 * 2048**2 / (40e-6 + 2048**2 * per_element)
    assert rates.product(work, rows=1, work=work, cold=True) == pytest.approx(want)
    # A weight narrower than the bench's narrower one, and four rows: the share.
    hot = rates.product(40, rows=1, work=64)
    assert hot is not None
    share = rates.cold_factors[0][1]
    assert rates.product(40, rows=1, work=64, cold=True) == pytest.approx(hot * share)
    hot4 = rates.product(12, rows=4, work=161)
    assert hot4 is not None
    assert rates.product(12, rows=4, work=161, cold=True) < hot4


def test_without_the_wide_figure_one_row_keeps_the_share() -> None:
    rates = here_rates(_facts(), _bench(COLD), Precision.FP32)
    assert rates.cold_row_line is None
    assert rates.product(10, rows=1, work=102, cold=True) == pytest.approx(10e9)


def test_the_line_prices_only_a_dtype_measured_as_itself() -> None:
    """bf16 on a CPU without a bf16 dot product goes at a share of the fp32 figures; the
    line is of the figures as measured, so it is left out there; and a bucket of no rows
    is priced without it."""
    from hwadvisor.models.facts import PeakGflops

    bench = _bench(COLD)
    # bf16 matmul timed once, too unsteady to price with, at a quarter of fp32's rate
    slow = _figure("matmul", 25.0, [1024, 1024, 1024]).model_copy(
        update={"dtype": "bf16", "reliable": False}
    )
    results = [*bench.results, slow, _figure("matmul_rows_cold", 2 * 4096**2 / 2.6e-3 / 1e9, [1, 4096, 4096])]  # fmt: skip
    wide = bench.model_copy(update={"results": results})
    emulated = Facts(cpu=Cpu(usable_cores=2, l3_bytes=32 * MIB, peak_gflops=PeakGflops(fp32=100.0, bf16=100.0)))  # fmt: skip
    assert here_rates(_facts(), wide, Precision.FP32).cold_row_line is not None
    bf16 = here_rates(emulated, wide, Precision.BF16)
    assert bf16.gemm(1024) == pytest.approx(25e9)  # a quarter of the fp32 figures
    assert bf16.cold_row_line is None and bf16.cold_factors
    fp32 = here_rates(_facts(), wide, Precision.FP32)
    assert fp32.product(10, rows=0, work=102, cold=True) is not None
