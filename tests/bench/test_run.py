"""run_bench for real on this CPU (tiny budget), its failure paths, and the CUDA path."""

from __future__ import annotations

import json
import sys
from typing import Any

import jsonschema
import pytest

from hwadvisor.bench import run_bench
from hwadvisor.bench import runner as runner_mod
from hwadvisor.bench.sizing import SizingOutcome, Timing
from hwadvisor.errors import MissingDependencyError, UsageError
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.facts import Cpu, Facts, Gpu, PeakGflops
from hwadvisor.models.schemas import schema_for

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def real_report() -> BenchReport:
    """One real, tiny CPU run shared by the tests below (torch imported beforehand)."""
    facts = Facts(cpu=Cpu(usable_cores=2, l3_bytes=8 * 2**20, peak_gflops=PeakGflops(fp32=150.0)))
    return run_bench(facts=facts, device="cpu", budget_s=1.5)


# The real run measures every kernel for real (about 10 s here, whatever the budget: sizes
# never fall below real work), so these two are slow: CI runs them in its second step.
@pytest.mark.slow
def test_real_cpu_run_has_fp32_matmul_with_runs_and_threads(real_report: BenchReport) -> None:
    r = real_report.best("cpu", "matmul", "fp32")
    assert r is not None
    assert r.value > 0 and r.runs >= 1 and r.threads == 2
    assert r.unit == "GFLOP/s"
    assert r.peak == 150.0 and r.efficiency == pytest.approx(r.value / 150.0, rel=1e-3)
    # Throughput is the work over the median time: 2·n³ FLOPs for an n³ matmul.
    n = r.shape[0]
    assert r.value == pytest.approx(2 * n**3 / r.median_s / 1e9, rel=1e-3)
    copy = real_report.best("cpu", "copy", "fp32")
    assert copy is not None and copy.unit == "GB/s" and copy.shape[0] * 4 >= 32 * 2**20
    assert real_report.devices[0].device == "cpu"
    assert not real_report.interrupted
    # The import is part of the run (torch may already be loaded in this process).
    assert real_report.torch_import_s is not None
    assert 0 <= real_report.torch_import_s <= real_report.elapsed_s


@pytest.mark.slow
def test_real_report_validates_and_round_trips(real_report: BenchReport) -> None:
    text = real_report.model_dump_json()
    doc = json.loads(text)
    jsonschema.validate(doc, schema_for("bench"))
    again = BenchReport.model_validate_json(text)
    assert again == real_report
    kinds = {(r.kernel, r.dtype) for r in real_report.results} | {
        (s.kernel, s.dtype) for s in real_report.skipped
    }
    assert {("matmul", "fp32"), ("matmul", "bf16"), ("conv2d", "fp32"), ("triad", "fp32")} <= kinds


def test_bad_budget_and_device_are_usage_errors() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError):
            run_bench(facts=None, budget_s=bad)
    with pytest.raises(UsageError, match="unknown device"):
        run_bench(facts=None, device="tpu")


def test_missing_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hwadvisor\[bench\]'"):
        run_bench(facts=None, device="cpu")


class Canned:
    """A :data:`~hwadvisor.bench.runner.CaseMeasure` seam: a canned outcome per kernel,
    the allotment each got, and Ctrl-C on the ``interrupt_at``-th kernel if asked."""

    def __init__(self, interrupt_at: int | None = None) -> None:
        self.seen: list[str] = []
        self.allots: list[float] = []
        self.interrupt_at = interrupt_at

    def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        self.seen.append(f"{case.kernel}.{case.dtype}")
        self.allots.append(allot_s)
        if len(self.seen) == self.interrupt_at:
            raise KeyboardInterrupt
        shape = case.ladder[case.start]
        return SizingOutcome(shape=shape, timing=Timing(median_s=0.5, iqr_s=0.01, runs=4))


def test_ctrl_c_returns_the_partial_report() -> None:
    progress: list[tuple[str, float]] = []
    canned = Canned(interrupt_at=3)
    report = run_bench(
        facts=None,
        device="cpu",
        budget_s=5.0,
        progress=lambda s, f: progress.append((s, f)),
        measure=canned,
    )
    assert report.interrupted
    assert len(report.results) == 2 and len(canned.seen) == 3
    assert progress[0][0] == "cpu matmul fp32"
    assert [label.split()[1] for label, _ in progress] == ["matmul", "copy", "triad"]
    fractions = [f for _, f in progress]
    assert all(0.0 <= f < 1.0 for f in fractions) and fractions == sorted(fractions)
    # Every kernel gets its share of the budget, and never less than the floor.
    assert all(runner_mod.MIN_ALLOT_S <= a <= 5.0 for a in canned.allots)


class Slowing(Canned):
    """Canned figures, but the machine runs at ``speed`` x once every kernel is done."""

    def __init__(self, speed: float) -> None:
        super().__init__()
        self.speed = speed
        self.spread = 0.02  # the re-timing's IQR / median

    def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        out = super().__call__(torch, case, allot_s, clock)
        if self.seen.count("matmul.fp32") < 2:
            return out
        self.again = (case.ladder, allot_s)
        median = 0.5 / self.speed
        return SizingOutcome(shape=out.shape, timing=Timing(median, median * self.spread, 4))


def _closing(report: BenchReport) -> Any:
    return next((d for d in report.derived if d.id == "cpu.end_over_start"), None)


def test_the_first_figure_is_timed_again_when_the_run_ends() -> None:
    """The CPU's fp32 matmul is timed once more at the size it kept, after every other
    figure: far from its first value, the run says the machine's speed moved."""
    progress: list[str] = []
    slow = Slowing(0.7)
    report = run_bench(
        facts=None, device="cpu", quick=True, measure=slow, progress=lambda s, f: progress.append(s)
    )
    assert slow.seen[0] == slow.seen[-1] == "matmul.fp32" and slow.seen.count("matmul.fp32") == 2
    first = report.best("cpu", "matmul", "fp32")
    assert first is not None
    assert slow.again == ((tuple(first.shape),), runner_mod.RECHECK_S)  # its size, nothing else
    assert progress[-2:] == ["cpu matmul fp32 again", "done"]
    moved = _closing(report)
    assert moved.ratio == pytest.approx(0.7)
    assert "speed moved while measuring" in moved.text and "(0.70x)" in moved.text
    # The figures themselves are the ones measured in their turn.
    assert first.value == pytest.approx(2 * first.shape[0] ** 3 / 0.5 / 1e9)

    held = _closing(run_bench(facts=None, device="cpu", quick=True, measure=Slowing(0.9)))
    assert held.ratio == pytest.approx(0.9) and "speed held" in held.text
    # A re-timing too unsteady to tell a drift from noise says nothing.
    noisy = Slowing(0.5)
    noisy.spread = 0.2
    assert _closing(run_bench(facts=None, device="cpu", quick=True, measure=noisy)) is None
    # Interrupted: no closing figure.
    assert _closing(run_bench(facts=None, device="cpu", measure=Canned(interrupt_at=3))) is None


def test_quick_measures_the_core_kernels_only() -> None:
    report = run_bench(facts=None, device="cpu", quick=True, measure=Canned())
    assert report.budget_s == runner_mod.QUICK_BUDGET_S
    core = {(r.kernel, r.dtype) for r in report.results if r.level is None}
    per_call = {
        (k, "fp32")
        for k in (
            "dispatch",
            "dispatch_backward",
            "first_touch",
            "adamw_step",
            "sgd_step",
            "rnn_layer",
        )
    }
    assert core - per_call == {
        ("matmul", "fp32"), ("matmul", "bf16"), ("copy", "fp32"), ("triad", "fp32"),
        ("matmul_rows", "fp32"), ("matmul_rows_cold", "fp32"), ("matmul_small", "fp32"),
        ("conv2d", "fp32"), ("conv2d_backward", "fp32"), ("conv2d_nchw", "fp32"),
        ("conv2d_nchw_backward", "fp32"), ("conv2d_backward_strided", "fp32"),
    }  # fmt: skip
    # ... and the memory sweep's quick part (bench.sweep.QUICK_SWEEP) for the estimates.
    from hwadvisor.bench.sweep import QUICK_SWEEP

    sweep = {
        (r.kernel, r.level) for r in report.results if r.level or (r.kernel, r.dtype) in per_call
    }
    assert sweep == set(QUICK_SWEEP)


def test_gpu_found_but_unusable_is_listed() -> None:
    if torch.cuda.is_available():
        pytest.skip("torch can use the GPU here")
    facts = Facts(gpus=[Gpu(index=0, vendor="nvidia", name="NVIDIA H200")])
    report = run_bench(facts=facts, device="all", quick=True, measure=Canned())
    (skip,) = report.skipped
    assert skip.device == "gpu:0" and "NVIDIA H200 was found, but torch" in skip.reason
    assert run_bench(facts=facts, device="cpu", quick=True, measure=Canned()).skipped == []


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_run() -> None:
    saved = torch.backends.cuda.matmul.allow_tf32
    report = run_bench(facts=None, device="cuda:0", budget_s=8.0)
    fp16 = report.best("cuda:0", "matmul", "fp16")
    fp32 = report.best("cuda:0", "matmul", "fp32")
    assert fp16 is not None and fp32 is not None and fp16.value > fp32.value
    assert report.best("cuda:0", "h2d", "uint8") is not None
    assert report.best("cuda:0", "copy", "fp32") is not None
    assert torch.backends.cuda.matmul.allow_tf32 == saved  # the tf32 figure restored the flag
