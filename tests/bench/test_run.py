"""run_bench: the budget kept on a simulated machine, what a short budget keeps, the
re-measured bandwidth, the closing re-timing, Ctrl-C; and real runs on this CPU."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from typing import Any

import jsonschema
import pytest

from hwadvisor.bench import run_bench
from hwadvisor.bench import runner as runner_mod
from hwadvisor.bench.sizing import OutOfTime, SizingOutcome, Timing, Unsupported, cost
from hwadvisor.errors import MissingDependencyError, UsageError
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.facts import Cpu, Facts, Gpu, PeakGflops
from hwadvisor.models.schemas import schema_for

torch = pytest.importorskip("torch")

FACTS = Facts(cpu=Cpu(usable_cores=2, l3_bytes=32 * 2**20, peak_gflops=PeakGflops(fp32=200.0)))
#: The simulated machine's true rates (work a second), per kernel and dtype.
RATES = {
    ("matmul", "fp32"): 100e9, ("matmul", "bf16"): 800e9, ("matmul", "fp16"): 5e9,
    ("matmul", "int8"): 5e9, ("conv2d", "fp32"): 40e9, ("conv2d", "bf16"): 15e9,
    ("conv2d_backward", "fp32"): 30e9, ("copy", "fp32"): 10e9, ("triad", "fp32"): 10e9,
    ("dispatch", "fp32"): 1000 / 2e-6,
}  # fmt: skip
FILL = 2e9


class Sim:
    """A :data:`~hwadvisor.bench.runner.CaseMeasure` on a simulated machine and clock: a
    case costs what :func:`~hwadvisor.bench.timing.measure_case` would spend there (its
    inputs, two untimed calls, then its timed blocks within its allotment)."""

    def __init__(self, *, slow: float = 1.0, spread: float = 0.01, interrupt_at: int | None = None) -> None:  # fmt: skip
        self.now, self.slow, self.spread, self.interrupt_at = 0.0, slow, spread, interrupt_at
        self.seen: list[tuple[str, str, tuple[int, ...], float]] = []

    def clock(self) -> float:
        return self.now

    def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        shape = case.ladder[case.start]
        self.seen.append((case.kernel, case.dtype, shape, allot_s))
        if len(self.seen) == self.interrupt_at:
            raise KeyboardInterrupt
        rate = RATES.get((case.kernel, case.dtype), 1e11) * (100 if case.target.accelerator else 1)
        per_call = case.work(shape) / rate * self.slow
        setup = (case.input_bytes(shape) if case.input_bytes else 0.0) / FILL
        deadline = self.now + allot_s
        self.now += setup + 2 * per_call
        if self.now + per_call > deadline:
            raise OutOfTime("no time left in the budget")
        self.now = min(deadline, self.now + cost(per_call) - 2 * per_call)
        return SizingOutcome(shape, Timing(per_call, per_call * self.spread, 6))


def _run(sim: Sim, monkeypatch: pytest.MonkeyPatch, *, import_s: float = 1.0, **kw: Any) -> BenchReport:  # fmt: skip
    def slow_import() -> Any:
        sim.now += import_s
        return torch

    monkeypatch.setattr(runner_mod, "import_torch", slow_import)
    kw.setdefault("facts", FACTS)
    return run_bench(device="cpu", clock=sim.clock, measure=sim, load_reader=lambda: 0.2, **kw)


def _kinds(report: BenchReport) -> set[tuple[str, str, tuple[int, ...]]]:
    return {(r.kernel, r.dtype, tuple(r.shape)) for r in report.results}


@pytest.mark.parametrize("budget", [1.5, 3.0, 6.0, 10.0, 30.0])
@pytest.mark.parametrize("slow", [1.0, 4.0])
def test_the_budget_is_kept_torchs_import_included(
    monkeypatch: pytest.MonkeyPatch, budget: float, slow: float
) -> None:
    report = _run(Sim(slow=slow), monkeypatch, budget_s=budget, import_s=1.0)
    assert report.elapsed_s <= budget
    assert report.torch_import_s == pytest.approx(1.0)
    assert report.best("cpu", "matmul", "fp32") is not None


def test_a_shorter_budget_measures_fewer_smaller_figures_the_most_needed_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    short = _run(Sim(), monkeypatch, budget_s=1.5)
    full = _run(Sim(), monkeypatch, budget_s=30.0)
    assert {(k, d) for k, d, _ in _kinds(short)} < {(k, d) for k, d, _ in _kinds(full)}
    assert {("matmul", "fp32"), ("copy", "fp32")} <= {(k, d) for k, d, _ in _kinds(short)}
    assert short.best("cpu", "matmul", "int8") is None
    assert any(s.reason.endswith("no time left in the budget") for s in short.skipped)
    # the fp32 products as a ladder of sizes, for the estimator to read between
    sizes = sorted(r.shape[0] for r in full.results if (r.kernel, r.dtype) == ("matmul", "fp32"))
    assert sizes == [64, 128, 256, 512, 1024, 2048] and not full.skipped
    assert {k for k, _, _ in _kinds(full)} == {
        "matmul", "conv2d", "conv2d_backward", "copy", "triad", "dispatch"
    }  # fmt: skip
    # the bandwidth buffers shrink to fit a short budget's share
    copy_short, copy_full = short.best("cpu", "copy", "fp32"), full.best("cpu", "copy", "fp32")
    assert copy_short is not None and copy_full is not None
    assert copy_short.shape[0] < copy_full.shape[0]


def test_every_device_gets_its_most_needed_figures_before_any_gets_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hwadvisor.bench import devices
    from hwadvisor.bench.devices import Target

    gpu = Target("cuda:0", "cuda", 0, "NVIDIA H100 80GB HBM3", None, 1)
    cpu = Target("cpu", "cpu", None, "test CPU", None, 2)
    monkeypatch.setattr(devices, "resolve", lambda torch, spec, facts: [cpu, gpu])
    monkeypatch.setattr(runner_mod, "_free_bytes", lambda torch, target, facts: None)
    sim = Sim()
    report = _run(sim, monkeypatch, budget_s=3.0)
    assert report.elapsed_s <= 3.0
    order = [(r.device, r.kernel) for r in report.results]  # in the order measured
    # the GPU's head (fp32 products, its bandwidth) before the CPU's convolutions
    assert order.index(("cuda:0", "copy")) < order.index(("cpu", "conv2d"))
    gpu_head = {(r.kernel, r.dtype) for r in report.results if r.device == "cuda:0"}
    assert {("matmul", "fp32"), ("copy", "fp32")} <= gpu_head
    assert report.best("cpu", "matmul", "int8") is None


def test_a_budget_the_import_spent_still_measures_the_first_figure_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    report = _run(Sim(), monkeypatch, budget_s=1.0, import_s=1.2)
    assert [(r.kernel, r.dtype, r.shape[0]) for r in report.results] == [("matmul", "fp32", 256)]
    assert report.elapsed_s < 1.3


def test_a_noisy_bandwidth_figure_is_measured_again_or_kept_with_its_spread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class Noisy(Sim):
        def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
            out = super().__call__(torch, case, allot_s, clock)
            first = [s[0] for s in self.seen].count(case.kernel) == 1
            if case.kernel in ("copy", "triad") and first:
                return SizingOutcome(out.shape, Timing(out.timing.median_s, 0.3 * out.timing.median_s, 6))  # fmt: skip
            return out

    sim = Noisy()
    report = _run(sim, monkeypatch, budget_s=10.0)
    copy = report.best("cpu", "copy", "fp32")
    assert [s[0] for s in sim.seen].count("copy") == 2
    assert copy is not None and copy.reliable is True and "measured again" in (copy.note or "")

    # no time to measure it again: kept, with reliable false and its spread
    class Tight(Noisy):
        def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
            out = super().__call__(torch, case, allot_s, clock)
            if case.kernel == "copy":
                self.now = 2.9  # the budget spent by the time it ends
            return out

    kept = _run(Tight(), monkeypatch, budget_s=3.0).best("cpu", "copy", "fp32")
    assert kept is not None and kept.reliable is False and kept.spread == pytest.approx(0.3)


def test_an_unsupported_dtype_is_skipped_once_with_its_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class NoInt8(Sim):
        def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
            if case.dtype == "int8":
                self.seen.append((case.kernel, case.dtype, case.ladder[case.start], allot_s))
                raise Unsupported("\"_int_mm\" not implemented for 'CPU'")
            return super().__call__(torch, case, allot_s, clock)

    sim = NoInt8()
    report = _run(sim, monkeypatch, budget_s=30.0)
    (skip,) = [s for s in report.skipped if s.dtype == "int8"]
    assert "not implemented" in skip.reason
    assert [s[1] for s in sim.seen].count("int8") == 1  # its larger size is not tried


class Slowing(Sim):
    """The machine runs at ``speed`` x once its first fp32 product is timed again."""

    def __init__(self, speed: float, spread: float = 0.01) -> None:
        super().__init__(spread=spread)
        self.speed = speed

    def __call__(self, torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        out = super().__call__(torch, case, allot_s, clock)
        first = self.seen[0][:3]
        if self.seen[-1][:3] != first or len(self.seen) == 1:
            return out
        median = out.timing.median_s / self.speed
        return SizingOutcome(out.shape, Timing(median, median * self.spread, 6))


def _closing(report: BenchReport) -> Any:
    return next((d for d in report.derived if d.id == "cpu.end_over_start"), None)


def test_the_first_figure_is_timed_again_when_the_budget_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    progress: list[str] = []
    moved = _run(Slowing(0.7), monkeypatch, budget_s=30.0, progress=lambda s, f: progress.append(s))  # fmt: skip
    assert progress[-2:] == ["cpu matmul fp32 again", "done"]
    closing = _closing(moved)
    assert closing.ratio == pytest.approx(0.7)
    assert "speed moved while measuring" in closing.text and "(0.70x)" in closing.text
    held = _closing(_run(Slowing(0.9), monkeypatch, budget_s=30.0))
    assert held.ratio == pytest.approx(0.9) and "speed held" in held.text
    # too unsteady to tell a drift from noise: it says nothing
    assert _closing(_run(Slowing(0.5, spread=0.2), monkeypatch, budget_s=30.0)) is None
    # no time left for it: not measured
    assert _closing(_run(Slowing(0.7), monkeypatch, budget_s=2.0)) is None


def test_ctrl_c_returns_the_partial_report(monkeypatch: pytest.MonkeyPatch) -> None:
    progress: list[tuple[str, float]] = []
    sim = Sim(interrupt_at=3)
    report = _run(sim, monkeypatch, budget_s=10.0, progress=lambda s, f: progress.append((s, f)))
    assert report.interrupted and len(report.results) == 2
    assert [label.split()[1] for label, _ in progress] == ["matmul", "matmul", "copy"]
    fractions = [f for _, f in progress]
    assert all(0.0 <= f < 1.0 for f in fractions) and fractions == sorted(fractions)
    assert _closing(report) is None


def test_quick_has_its_own_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    report = _run(Sim(), monkeypatch, quick=True)
    assert report.budget_s == runner_mod.QUICK_BUDGET_S and report.elapsed_s <= 3.0


def test_bad_budget_and_device_are_usage_errors() -> None:
    for bad in (0.0, -1.0, float("nan"), float("inf"), 1e9):
        with pytest.raises(UsageError):
            run_bench(facts=None, budget_s=bad)
    with pytest.raises(UsageError, match="unknown device"):
        run_bench(facts=None, device="tpu")


def test_missing_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    with pytest.raises(MissingDependencyError, match=r"pip install 'hwadvisor\[bench\]'"):
        run_bench(facts=None, device="cpu")


def test_gpu_found_but_unusable_is_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    if torch.cuda.is_available():
        pytest.skip("torch can use the GPU here")
    facts = Facts(gpus=[Gpu(index=0, vendor="nvidia", name="NVIDIA H200")])
    report = _run(Sim(), monkeypatch, facts=facts, budget_s=30.0)
    assert report.skipped == []  # --device cpu: not asked for
    monkeypatch.setattr(runner_mod, "import_torch", lambda: torch)
    sim = Sim()
    report = run_bench(facts=facts, device="all", budget_s=30.0, clock=sim.clock, measure=sim)
    (skip,) = report.skipped
    assert skip.device == "gpu:0" and "NVIDIA H200 was found, but torch" in skip.reason


def test_a_real_run_keeps_a_short_budget_and_its_report_validates() -> None:
    budget = 2.0
    started = time.perf_counter()
    report = run_bench(facts=FACTS, device="cpu", budget_s=budget)
    wall = time.perf_counter() - started
    # a busy machine (the other test workers) may make the one figure that is measured
    # whatever the budget overrun a little
    assert report.elapsed_s <= budget + 0.5 and wall <= budget + 0.8
    r = report.best("cpu", "matmul", "fp32")
    assert r is not None and r.runs >= 1 and r.threads == 2 and r.unit == "GFLOP/s"
    assert r.peak == 200.0 and r.efficiency == pytest.approx(r.value / 200.0, rel=1e-3)
    n = r.shape[0]
    assert r.value == pytest.approx(2 * n**3 / r.median_s / 1e9, rel=1e-3)
    text = report.model_dump_json()
    jsonschema.validate(json.loads(text), schema_for("bench"))
    assert BenchReport.model_validate_json(text) == report


@pytest.mark.slow
@pytest.mark.parametrize(("args", "budget"), [(["--budget", "5"], 5.0), (["--quick"], 3.0)])
def test_the_command_keeps_its_budget_from_a_cold_start(args: list[str], budget: float) -> None:
    """``hwadvisor bench`` in a fresh process: torch's import is in the budget, and the
    whole command ends within it plus the process's start and exit."""
    started = time.perf_counter()
    cmd = [sys.executable, "-m", "hwadvisor", "bench", "--device", "cpu", "--json", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["budget_s"] == budget and doc["elapsed_s"] <= budget + 0.2
    assert wall <= budget + 3.0
    assert any(r["kernel"] == "matmul" for r in doc["results"])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_real_cuda_run() -> None:
    saved = torch.backends.cuda.matmul.allow_tf32
    report = run_bench(facts=None, device="cuda:0", budget_s=8.0)
    assert report.elapsed_s <= 8.0
    fp16 = report.best("cuda:0", "matmul", "fp16")
    fp32 = report.best("cuda:0", "matmul", "fp32")
    assert fp16 is not None and fp32 is not None and fp16.value > fp32.value
    assert report.best("cuda:0", "h2d", "uint8") is not None
    assert report.best("cuda:0", "copy", "fp32") is not None
    assert torch.backends.cuda.matmul.allow_tf32 == saved  # the tf32 figure restored the flag
