"""This CPU's device model from a bench report, whatever shapes a saved report holds."""

from __future__ import annotations

from hwadvisor.estimate.timing.cpu import here_model
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.workload import Precision


def _result(kernel: str, shape: list[int], value: float, dtype: str = "fp32") -> BenchResult:
    return BenchResult(
        device="cpu", kernel=kernel, dtype=dtype, shape=shape, value=value,
        unit="GFLOP/s" if kernel != "triad" else "GB/s", median_s=1e-3, iqr_s=0.0, runs=5,
        threads=2,
    )  # fmt: skip


def test_a_figure_of_no_usable_shape_is_left_out_not_a_crash() -> None:
    bench = BenchReport(
        budget_s=1.0,
        elapsed_s=1.0,
        results=[_result("matmul", [], 308.0), _result("matmul", [512, 512, 512], 200.0)],
    )
    model = here_model(None, bench, Precision.FP32)
    assert [round(s) for s, _ in model.gemm_points] == [512]


def test_the_ladder_never_runs_slower_at_a_larger_size() -> None:
    bench = BenchReport(
        budget_s=1.0,
        elapsed_s=1.0,
        results=[
            _result("matmul", [256, 256, 256], 150.0),
            _result("matmul", [1024, 1024, 1024], 120.0),  # a dip: noise
            _result("triad", [1 << 24], 20.0),
        ],
    )
    model = here_model(None, bench, Precision.FP32)
    rates = [r for _, r in model.gemm_points]
    assert rates == sorted(rates) and rates[-1] == 150e9
    assert model.bandwidth == 20e9 and model.basis.startswith("measured here")
