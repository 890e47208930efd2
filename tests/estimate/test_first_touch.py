"""Tensors glibc maps fresh at every call: counted, measured, priced once per step."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hwadvisor.estimate.timing.cpu import here_rates  # noqa: E402
from hwadvisor.estimate.timing.levels import memory_levels  # noqa: E402
from hwadvisor.estimate.timing.step import step_time  # noqa: E402
from hwadvisor.estimate.workload.counting import Count, _make_mode  # noqa: E402
from hwadvisor.glibc import MMAP_THRESHOLD_MAX, always_mapped  # noqa: E402
from hwadvisor.models.bench import BenchReport, BenchResult  # noqa: E402
from hwadvisor.models.memory import CountedPeak, FaultPoint, MemoryCounts  # noqa: E402
from hwadvisor.models.workload import (  # noqa: E402
    Allocation,
    ModelKind,
    OpGroup,
    OpProfile,
    Optimizer,
    Precision,
    Task,
    Workload,
)

MIB = 2**20


def test_only_tensors_past_the_thresholds_ceiling_are_always_mapped() -> None:
    # posix_memalign adds its alignment and a minimum chunk: 32 MiB itself is past it.
    assert not always_mapped(31 * MIB)
    assert not always_mapped(MMAP_THRESHOLD_MAX - 4096)
    assert always_mapped(MMAP_THRESHOLD_MAX)
    assert always_mapped(200 * MIB)


def _count(fn: object) -> Count:
    count = Count()
    with _make_mode(count):
        fn()  # type: ignore[operator]
    return count


def test_outputs_are_counted_and_views_are_not() -> None:
    x = torch.empty(64, 256, device="meta")
    w = torch.empty(8192, 256, device="meta")
    count = _count(lambda: torch.nn.functional.linear(x, w).view(64, 64, 128))
    # The product's 2 MiB output once; the view (and the weight's transpose) not at all.
    assert count.allocations == {64 * 8192 * 4: 1}


def test_a_products_broadcast_operand_is_a_fresh_copy() -> None:
    g = torch.ones((), device="meta").expand(1024, 512)  # a sum's gradient
    w = torch.empty(512, 64, device="meta")
    count = _count(lambda: torch.mm(g, w))
    # Its contiguous copy (2 MiB) and the output (256 KiB).
    assert count.allocations == {1024 * 512 * 4: 1, 1024 * 64 * 4: 1}
    # The copy is a pass over memory too: read and written.
    assert sum(b for (fam, _), (_, b) in count.groups.items() if fam == "eltwise") == 2 * 2 * MIB


def _figure(kernel: str, value: float, *, level: str | None = None, ws: int | None = None,
            unit: str = "GB/s", reliable: bool | None = None) -> BenchResult:  # fmt: skip
    return BenchResult(
        device="cpu", kernel=kernel, dtype="fp32", shape=[1], value=value, unit=unit,
        median_s=1e-3, iqr_s=0.0, runs=5, threads=2, level=level, working_set_bytes=ws,
        reliable=reliable,
    )  # fmt: skip


def _bench(first_touch: float | None = 2.0, *, reliable: bool | None = None) -> BenchReport:
    results = [
        _figure("matmul", 100.0, unit="GFLOP/s"),
        _figure("triad", 10.0),
        _figure("eltwise", 100.0, level="l2", ws=MIB),
        _figure("eltwise", 10.0, level="dram", ws=64 * MIB),
        _figure("dispatch", 0.25, unit="Mop/s"),
    ]
    if first_touch is not None:
        results.append(_figure("first_touch", first_touch, reliable=reliable))
    return BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)


def test_the_first_touch_figure_is_read_when_reliable() -> None:
    levels = memory_levels(_bench(2.0))
    assert levels is not None and levels.first_touch_s == pytest.approx(0.5e-9)
    unsteady = memory_levels(_bench(2.0, reliable=False))
    assert unsteady is not None and unsteady.first_touch_s is None


def _job(batch: int, task: Task = Task.TRAIN) -> Workload:
    """An output of 1 MiB per sample in the forward and two such in the backward."""
    prof = OpProfile(
        op_groups=[OpGroup(family="eltwise", count=1, bytes=3 * MIB)],
        memory_bytes=3 * MIB,
        kernels=3,
        allocations=[
            Allocation(bytes=MIB, count=1),
            Allocation(bytes=MIB, count=2, backward=True),
            Allocation(bytes=1024, count=50),
        ],
    )
    return Workload(kind=ModelKind.DECODER, task=task, batch_size=batch, params=10,
                    flops_per_sample=1.0, profile=prof)  # fmt: skip


def _step(wl: Workload, bench: BenchReport) -> dict[str, float]:
    est = step_time(wl, here_rates(None, bench, wl.precision))
    assert est.total is not None
    return est.parts


def test_tensors_past_32_mib_pay_their_first_touch_once_each() -> None:
    parts = _step(_job(64), _bench(2.0))
    # Three 64 MiB tensors (forward and backward), 0.5 ns a byte; the small ones nothing.
    assert parts["first_touch"] == pytest.approx(3 * 64 * MIB * 0.5e-9)
    # Inference allocates only the forward's.
    infer = _step(_job(64, Task.INFER), _bench(2.0))
    assert infer["first_touch"] == pytest.approx(64 * MIB * 0.5e-9)


def test_no_first_touch_under_the_ceiling_or_without_the_figure() -> None:
    assert "first_touch" not in _step(_job(16), _bench(2.0))  # 16 MiB tensors: the heap's
    assert "first_touch" not in _step(_job(64), _bench(None))


def test_the_for_loop_optimizer_pays_per_parameter_tensor() -> None:
    bench = _bench(None)
    bench.results.append(_figure("adamw_step", 0.05, unit="Mop/s"))  # 20 us a tensor
    levels = memory_levels(bench)
    assert levels is not None and levels.optimizer_tensor_s == {"adamw": pytest.approx(20e-6)}
    wl = _job(8).model_copy(update={"params": 1000, "param_tensors": 50})
    with_loop = _step(wl, bench)["optimizer"]
    without = _step(wl.model_copy(update={"param_tensors": None}), bench)["optimizer"]
    assert with_loop - without == pytest.approx(50 * 20e-6)
    # SGD has no figure here: its loop's 3 operators a tensor at the dispatch figure's
    # 4 us each.
    sgd = wl.model_copy(update={"optimizer": Optimizer.SGD})
    sgd_loop = _step(sgd, bench)["optimizer"]
    sgd_bytes = _step(sgd.model_copy(update={"param_tensors": None}), bench)["optimizer"]
    assert sgd_loop - sgd_bytes == pytest.approx(50 * 3 * 4e-6)


def test_an_unreliable_optimizer_figure_falls_back_to_the_loops_operators() -> None:
    bench = _bench(None)
    bench.results.append(_figure("adamw_step", 0.05, unit="Mop/s", reliable=False))
    wl = _job(8).model_copy(update={"params": 1000, "param_tensors": 50})
    est = step_time(wl, here_rates(None, bench, wl.precision))
    bytes_only = _step(wl.model_copy(update={"param_tensors": None}), bench)["optimizer"]
    # AdamW's 10 operators a tensor at the dispatch figure's 4 us, not the unsteady 20 us
    assert est.parts["optimizer"] - bytes_only == pytest.approx(50 * 10 * 4e-6)
    assert any("no reliable adamw_step figure" in n for n in est.notes)


def test_an_unreliable_first_touch_figure_still_prices_the_faults_and_says_so() -> None:
    est = step_time(_job(64), here_rates(None, _bench(2.0, reliable=False), Precision.FP32))
    assert est.parts["first_touch"] == pytest.approx(3 * 64 * MIB * 0.5e-9)
    assert any("marked unreliable" in n and "first_touch" in n for n in est.notes)
    # a reliable figure beside it is the one used
    both = _bench(2.0, reliable=False)
    both.results.append(_figure("first_touch", 4.0))
    assert _step(_job(64), both)["first_touch"] == pytest.approx(3 * 64 * MIB * 0.25e-9)


def test_param_tensors_are_the_ones_that_require_grad() -> None:
    from hwadvisor.estimate.workload.counting import count_model

    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2)).to("meta")
    model[1].bias.requires_grad_(False)
    counted = count_model(model, [4], 2, "two linears", train=True)
    assert counted.param_tensors == 3 and counted.params == 4 * 4 + 4 + 4 * 2 + 2


def _counted(train: list[float] | None, batches: tuple[int, ...] = (2, 4)) -> MemoryCounts:
    peak = CountedPeak(per_sample=MIB, fixed=0.0, gradients_at_peak=0.0, step_temporaries=0.0,
                       infer_per_sample=MIB, infer_fixed=0.0)  # fmt: skip
    points = None if train is None else [
        FaultPoint(batch=b, train=t, infer=(b - 2) * 2 * MIB) for b, t in zip(batches, train, strict=True)
    ]  # fmt: skip
    return MemoryCounts(fp32=peak, batches=(2, 4), tracker="t", source="a test", date="2026-12",
                        cpu_faults=points)  # fmt: skip


def test_counted_faults_are_the_lines_between_the_batches_never_below_zero() -> None:
    counts = _counted([10 * MIB, 30 * MIB])
    assert counts.faults_at(3) == pytest.approx(20 * MIB)
    assert counts.faults_at(8) == pytest.approx(70 * MIB)  # the last line, past it
    assert counts.faults_at(0) == 0.0  # the line reaches -10 MiB: no negative faults
    assert counts.faults_at(4, infer=True) == pytest.approx(4 * MIB)
    assert _counted(None).faults_at(4) is None
    # More batches: each segment its own line (a tensor past 32 MiB from batch 8 on).
    more = _counted([10 * MIB, 30 * MIB, 200 * MIB, 400 * MIB], (2, 4, 8, 16))
    assert more.faults_at(6) == pytest.approx(115 * MIB)
    assert more.faults_at(12) == pytest.approx(300 * MIB)
    assert more.faults_at(32) == pytest.approx(800 * MIB)


def test_a_counted_step_pays_the_replays_faults_not_the_32_mib_rule() -> None:
    wl = _job(64).model_copy(update={"memory_counts": _counted([10 * MIB, 30 * MIB])})
    est = step_time(wl, here_rates(None, _bench(2.0), wl.precision))
    # At batch 64 the line gives 630 MiB, at 0.5 ns a byte; the rule's three tensors are
    # not priced again on top.
    assert est.parts["first_touch"] == pytest.approx(630 * MIB * 0.5e-9)
    assert any("replayed through glibc's malloc" in n for n in est.notes)
    # Inference: its own line, (0, 4 MiB) at batches 2 and 4, so 124 MiB at 64.
    infer = wl.model_copy(update={"task": Task.INFER})
    assert _step(infer, _bench(2.0))["first_touch"] == pytest.approx(124 * MIB * 0.5e-9)
    # Counted in fp32: a bf16 step falls back to the rule.
    bf16 = wl.model_copy(update={"precision": Precision.BF16})
    assert "replayed" not in " ".join(
        step_time(bf16, here_rates(None, _bench(2.0), bf16.precision)).notes
    )
