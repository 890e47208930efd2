"""CPU time from how this machine behaves: memory-bound operators priced by working set."""

from __future__ import annotations

import pytest

from hwadvisor.estimate.timing.cpu import here_rates
from hwadvisor.estimate.timing.levels import MemoryLevels, memory_levels
from hwadvisor.estimate.timing.rates import CPU_OP_OVERHEAD_S, curve_at
from hwadvisor.estimate.timing.step import step_time
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Cpu, Facts, PeakGflops
from hwadvisor.models.workload import ModelKind, OpGroup, OpProfile, Precision, Task, Workload

MIB = 2**20


def _figure(kernel: str, value: float, *, level: str | None = None, ws: int | None = None,
            unit: str = "GB/s", shape: list[int] | None = None) -> BenchResult:  # fmt: skip
    return BenchResult(
        device="cpu", kernel=kernel, dtype="fp32", shape=shape or [1], value=value, unit=unit,
        median_s=1e-3, iqr_s=0.0, runs=5, threads=2, level=level, working_set_bytes=ws,
    )  # fmt: skip


def _bench(*, sweep: bool = True, bn_dram: float = 1.0) -> BenchReport:
    """A machine whose cache is 40x faster than its DRAM for streaming, 4x for batch norm."""
    results = [
        _figure("matmul", 100.0, unit="GFLOP/s", shape=[512, 512, 512]),
        _figure("triad", 10.0, shape=[1 << 24]),
    ]
    if sweep:
        for level, ws, elt, bn in (
            ("l2", 1 * MIB, 400.0, 4.0),
            ("l3", 16 * MIB, 100.0, 4.0),
            ("dram", 64 * MIB, 10.0, bn_dram),
        ):
            results += [
                _figure("eltwise", elt, level=level, ws=ws),
                _figure("batch_norm", bn, level=level, ws=ws),
            ]
        results.append(_figure("dispatch", 0.25, unit="Mop/s"))  # 4 µs per operator
    return BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)


def _cnn(batch: int, *, task: Task = Task.TRAIN) -> Workload:
    """Batch norm and ReLU of 64 KiB per sample each, forward and backward, no FLOPs."""
    groups = [
        OpGroup(family="batch_norm", count=10, bytes=64 * 1024),
        OpGroup(family="eltwise", count=10, bytes=64 * 1024),
        OpGroup(family="eltwise", backward=True, count=10, bytes=96 * 1024),
        OpGroup(family="conv", count=10, bytes=0.0),
    ]
    prof = OpProfile(op_groups=groups, memory_bytes=2e6, kernels=30, backward_kernels=10)
    return Workload(kind=ModelKind.CNN, task=task, batch_size=batch, params=1000,
                    flops_per_sample=1.0, profile=prof)  # fmt: skip


def test_curve_interpolates_in_log_size_and_holds_outside() -> None:
    levels = memory_levels(_bench())
    assert levels is not None and levels.dispatch_s == pytest.approx(4e-6)
    small = levels.seconds_per_byte("eltwise", 1024)
    at_l2 = levels.seconds_per_byte("eltwise", 1 * MIB)
    mid = levels.seconds_per_byte("eltwise", 4 * MIB)  # halfway (in log) from L2 to L3
    at_l3 = levels.seconds_per_byte("eltwise", 16 * MIB)
    huge = levels.seconds_per_byte("eltwise", 1 << 34)
    assert small == at_l2 and huge == levels.seconds_per_byte("eltwise", 64 * MIB)
    assert at_l2 is not None and at_l3 is not None and mid is not None
    assert mid == pytest.approx((at_l2 + at_l3) / 2)
    assert at_l2 < mid < at_l3 < (huge or 0)


def test_dispatch_is_taken_out_of_each_figure() -> None:
    levels = memory_levels(_bench())
    assert levels is not None
    ws = 1 * MIB
    raw = ws / 400e9  # the L2 figure's time per call
    spb = levels.seconds_per_byte("eltwise", ws)
    assert spb is not None
    assert spb * ws == pytest.approx(max(raw - 4e-6, 0.25 * raw))


def test_unmeasured_family_streams_like_eltwise() -> None:
    levels = MemoryLevels(curves={"eltwise": [(1.0, 1e-9)]})
    assert levels.seconds("softmax", 100.0) == pytest.approx(1e-7)
    assert not levels.measured("softmax") and levels.measured("eltwise")
    assert MemoryLevels().seconds("eltwise", 1.0) is None


def test_no_sweep_no_levels() -> None:
    assert memory_levels(_bench(sweep=False)) is None
    assert memory_levels(None) is None


def test_cache_resident_cnn_is_not_priced_at_dram_bandwidth() -> None:
    """The issue's case: a small batch-norm CNN whose tensors sit in cache."""
    rates = here_rates(None, _bench(), Precision.FP32)
    levels = rates.levels
    assert levels is not None
    wl = _cnn(8)  # 8 x 64 KiB = 512 KiB per forward operator: in L2
    st = step_time(wl, rates)
    ws_f, ws_b = 8 * 64 * 1024, 8 * 96 * 1024
    spb = levels.seconds_per_byte
    expected = 10 * ws_f * (spb("batch_norm", ws_f) or 0) + 10 * ws_f * (spb("eltwise", ws_f) or 0)
    expected += 10 * ws_b * (spb("eltwise", ws_b) or 0)
    assert st.parts["memory"] == pytest.approx(expected)
    # Element-wise operators at the L2 rate, not at DRAM streaming (40x slower here).
    at_dram = 10 * (ws_f + ws_b) / 10e9
    eltwise = 10 * ws_f * (spb("eltwise", ws_f) or 0) + 10 * ws_b * (spb("eltwise", ws_b) or 0)
    assert eltwise < at_dram / 10
    assert any("memory sweep" in a for a in rates.assumptions)


def test_working_set_moves_operators_down_the_levels() -> None:
    rates = here_rates(None, _bench(), Precision.FP32)
    per_sample = [
        step_time(_cnn(b), rates).parts["memory"] / b for b in (8, 256, 4096)
    ]  # L2, between L3 and DRAM, DRAM
    assert per_sample[0] < per_sample[1] < per_sample[2]


def test_batch_norm_is_priced_by_its_own_figures() -> None:
    fast = here_rates(None, _bench(bn_dram=4.0), Precision.FP32)
    slow = here_rates(None, _bench(bn_dram=1.0), Precision.FP32)
    wl = _cnn(4096)  # batch norm at DRAM size
    assert step_time(wl, slow).parts["memory"] > 2 * step_time(wl, fast).parts["memory"]


def test_inference_skips_backward_groups() -> None:
    rates = here_rates(None, _bench(), Precision.FP32)
    train = step_time(_cnn(8), rates).parts["memory"]
    infer = step_time(_cnn(8, task=Task.INFER), rates).parts["memory"]
    assert 0 < infer < train


def test_measured_dispatch_replaces_the_constant() -> None:
    measured = here_rates(None, _bench(), Precision.FP32)
    assumed = here_rates(None, _bench(sweep=False), Precision.FP32)
    assert measured.op_overhead_s == pytest.approx(4e-6)
    assert assumed.op_overhead_s == CPU_OP_OVERHEAD_S


def test_profile_without_groups_keeps_the_streaming_estimate() -> None:
    rates = here_rates(None, _bench(), Precision.FP32)
    wl = _cnn(8)
    assert wl.profile is not None
    bare = wl.model_copy(update={"profile": wl.profile.model_copy(update={"op_groups": []})})
    st = step_time(bare, rates)
    assert st.parts["memory"] == pytest.approx(
        (2e6 + 2 * 2e6) * 8 / 10e9
    )  # cost-weighted bytes of both passes over the triad


def test_optimizer_streams_from_the_level_its_state_fits() -> None:
    rates = here_rates(None, _bench(), Precision.FP32)
    small = _cnn(1).model_copy(update={"params": 10_000})  # 240 KB of state: L2
    large = _cnn(1).model_copy(update={"params": 10_000_000})  # 240 MB: DRAM
    per_param = [step_time(w, rates).parts["optimizer"] / (w.params or 1) for w in (small, large)]
    assert per_param[1] > 10 * per_param[0]


def test_optimizer_state_is_cold_once_the_step_moves_more_than_the_l3_holds() -> None:
    """The parameters and moments were last touched a step ago: where the step's
    memory-bound operators moved more than the sweep's DRAM working set between, they
    come from DRAM past the threads' L2s, even where their own working set would fit
    the L3; a step that moves less leaves them in the L3."""
    rates = here_rates(None, _bench(), Precision.FP32)
    levels = rates.levels
    assert levels is not None and levels.private_bytes == 2 * MIB
    assert levels.far_bytes == 64 * MIB
    state = {"params": 400_000}  # 9.6 MB of state: past the L2s, inside the L3
    small = _cnn(1).model_copy(update=state)  # the step moves 160 KiB
    large = _cnn(1024).model_copy(update=state)  # 160 MiB: past the DRAM working set
    per_byte = [step_time(w, rates).parts["optimizer"] / (400_000 * 84.0) for w in (small, large)]
    hot = levels.seconds_per_byte("eltwise", 400_000 * 24.0) or 0.0
    assert per_byte[0] == pytest.approx(hot, rel=0.05)
    assert per_byte[1] == pytest.approx(levels.far["eltwise"], rel=0.05)
    assert hot < levels.far["eltwise"] / 2
    notes = step_time(large, rates).notes
    assert any("optimizer's state (9 MiB) is evicted between steps" in n for n in notes)
    assert not any("evicted" in n for n in step_time(small, rates).notes)


def test_assumptions_state_threads_smt_and_clock() -> None:
    facts = Facts(
        cpu=Cpu(usable_cores=2, physical_cores=2, logical_cores=4, base_mhz=2450, max_mhz=3500)
    )
    rates = here_rates(facts, _bench(), Precision.FP32)
    note = next(a for a in rates.assumptions if "thread" in a)
    assert "2 thread(s)" in note and "SMT 2-way" in note and "all-core load" in note
    assert "2450 MHz" in note


def test_reliable_figures_win_and_unreliable_ones_are_not_used() -> None:
    bench = _bench()
    slow = _figure("eltwise", 1.0, level="l2", ws=1 * MIB).model_copy(update={"reliable": True})
    fast = _figure("eltwise", 4000.0, level="l2", ws=1 * MIB).model_copy(update={"reliable": False})
    levels = memory_levels(bench.model_copy(update={"results": [*bench.results, slow, fast]}))
    assert levels is not None and levels.unreliable == 1
    spb = levels.seconds_per_byte("eltwise", 1 * MIB)
    assert spb is not None and spb > 1 / 2000e9  # the fast unreliable figure was not taken


def test_a_size_measured_only_unreliably_is_priced_from_the_nearest_reliable_one() -> None:
    bench = _bench()
    odd = [
        r.model_copy(update={"reliable": False, "value": 4000.0})
        if r.kernel == "eltwise" and r.level == "l2"
        else r
        for r in bench.results
    ]
    levels = memory_levels(bench.model_copy(update={"results": odd}))
    full = memory_levels(bench)
    assert levels is not None and full is not None and levels.unreliable == 1
    # L2 is held at the L3 figure, as if the sweep had not measured L2.
    assert levels.seconds_per_byte("eltwise", 1 * MIB) == full.seconds_per_byte("eltwise", 16 * MIB)


def test_a_family_measured_only_unreliably_is_priced_from_those_figures_and_said() -> None:
    # As on a Xeon guest whose stream copy ate the budget: every element-wise figure had one
    # or two runs, too few to know a spread, while batch norm's were steady. Left out, the
    # element-wise operators (and every family priced as element-wise) cost nothing.
    bench = _bench()
    odd = [
        r.model_copy(update={"reliable": False, "spread": None}) if r.kernel == "eltwise" else r
        for r in bench.results
    ]
    rates = here_rates(None, bench.model_copy(update={"results": odd}), Precision.FP32)
    full = here_rates(None, bench, Precision.FP32)
    assert rates.levels is not None and rates.levels.unsteady_families == ["eltwise"]
    wl = _cnn(8)
    # The same figures, so the same price as when they were steady; not nothing.
    assert step_time(wl, rates).parts["memory"] == pytest.approx(
        step_time(wl, full).parts["memory"]
    )
    assert step_time(wl, rates).parts["memory"] > 0
    note = next(a for a in rates.assumptions if "marked unreliable" in a)
    assert "3 memory-sweep figure(s)" in note
    assert "eltwise had no reliable figure and are priced from their unreliable ones" in note


def test_an_unsteady_level_slower_than_the_held_curve_is_priced_at_its_own_figure() -> None:
    # Batch norm's DRAM figure left one run by the budget (1 GB/s against 4 at L3): held at
    # the L3 rate the DRAM-sized batch norms would be 4x too fast. An unsteady figure that is
    # faster than the held curve (eltwise at DRAM, 1,000 GB/s) is left out.
    bench = _bench()
    odd = [
        r.model_copy(update={"reliable": False, "value": 1000.0})
        if r.kernel == "eltwise" and r.level == "dram"
        else r.model_copy(update={"reliable": False})
        if r.kernel == "batch_norm" and r.level == "dram"
        else r
        for r in bench.results
    ]
    levels = memory_levels(bench.model_copy(update={"results": odd}))
    full = memory_levels(bench)
    assert levels is not None and full is not None
    assert levels.seconds_per_byte("batch_norm", 64 * MIB) == full.seconds_per_byte(
        "batch_norm", 64 * MIB
    )
    assert levels.far["batch_norm"] == full.far["batch_norm"]
    assert levels.seconds_per_byte("eltwise", 64 * MIB) == full.seconds_per_byte(
        "eltwise", 16 * MIB
    )
    assert "eltwise" not in levels.far


def test_an_all_unreliable_sweep_is_priced_as_no_sweep_and_said() -> None:
    bench = _bench()
    marked = [
        r.model_copy(update={"reliable": False}) if r.level or r.kernel == "dispatch" else r
        for r in bench.results
    ]
    rates = here_rates(None, bench.model_copy(update={"results": marked}), Precision.FP32)
    bare = here_rates(None, _bench(sweep=False), Precision.FP32)
    assert rates.levels is None and rates.op_overhead_s == CPU_OP_OVERHEAD_S
    wl = _cnn(8)
    assert step_time(wl, rates).parts["memory"] == pytest.approx(
        step_time(wl, bare).parts["memory"]
    )
    note = next(a for a in rates.assumptions if "unreliable" in a)
    assert "7 memory-sweep figure(s)" in note and "not used" in note
    assert "as without a sweep" in note
    assert not any("priced by family and working set" in a for a in rates.assumptions)


def test_a_bench_busy_throughout_still_prices_the_memory_bound_operators() -> None:
    # Every CPU figure unreliable, the triad too (a machine busy all through the bench):
    # the memory-bound operators were priced at nothing; now at the unsteady figures.
    bench = _bench()
    busy = bench.model_copy(
        update={"results": [r.model_copy(update={"reliable": False}) for r in bench.results]}
    )
    facts = Facts(cpu=Cpu(usable_cores=2, peak_gflops=PeakGflops(fp32=150.0)))
    rates = here_rates(facts, busy, Precision.FP32)
    assert rates.levels is not None and rates.levels.dispatch_s == pytest.approx(4e-6)
    wl = _cnn(8)
    steady = step_time(wl, here_rates(facts, bench, Precision.FP32)).parts["memory"]
    assert step_time(wl, rates).parts["memory"] == pytest.approx(steady)
    assert any("no memory figure of the bench was reliable" in a for a in rates.assumptions)
    # With a steady triad (and matmul) the sweep is still set aside: the triad prices them.
    triad_ok = bench.model_copy(
        update={
            "results": [
                r if r.kernel in ("triad", "matmul") else r.model_copy(update={"reliable": False})
                for r in bench.results
            ]
        }
    )
    assert here_rates(facts, triad_ok, Precision.FP32).levels is None


def test_element_wise_past_the_private_caches_streams_from_dram() -> None:
    """In a step an element-wise operator reads what another operator wrote: past the
    threads' L2s (2 x the sweep's L2 working set) its bytes come at the DRAM figure."""
    rates = here_rates(None, _bench(), Precision.FP32)
    levels = rates.levels
    assert levels is not None and levels.private_bytes == 2 * MIB
    wl = _cnn(64)  # 4 MiB forward, 6 MiB backward: past the L2s, inside the L3
    ws_f, ws_b = 64 * 64 * 1024, 64 * 96 * 1024
    spb = levels.seconds_per_byte
    dram = levels.far["eltwise"]
    assert dram == spb("eltwise", 64 * MIB)
    expected = 10 * ws_f * (spb("batch_norm", ws_f) or 0)  # batch norm by its own curve
    expected += 10 * (ws_f + ws_b) * dram
    assert step_time(wl, rates).parts["memory"] == pytest.approx(expected)
    # The hot-loop curve alone would have priced them at the L2-L3 rates, far faster.
    assert (spb("eltwise", ws_f) or 0) < dram / 2
    assert any(
        "past the L2 caches in use (2.0 MiB) at the DRAM figure" in a for a in rates.assumptions
    )


def test_cold_operands_never_price_an_operator_faster() -> None:
    levels = memory_levels(_bench())
    assert levels is not None
    for ws in (512 * 1024, 4 * MIB, 64 * MIB, 1 << 30):
        hot = levels.seconds("eltwise", ws) or 0.0
        cold = levels.seconds("eltwise", ws, cold=True) or 0.0
        assert cold >= hot
        assert (cold == hot) == (ws <= 2 * MIB or ws >= 64 * MIB)


def test_without_an_l2_figure_the_caches_are_not_judged() -> None:
    bench = _bench()
    kept = [r for r in bench.results if r.level != "l2"]
    levels = memory_levels(bench.model_copy(update={"results": kept}))
    assert levels is not None and levels.private_bytes is None
    assert levels.seconds("eltwise", 4 * MIB, cold=True) == levels.seconds("eltwise", 4 * MIB)


def test_the_private_caches_are_read_from_the_largest_l2_figure() -> None:
    """Each family's shape rounds its L2 working set down; the largest is the sweep's aim."""
    bench = _bench()
    short = _figure("batch_norm_backward", 10.0, level="l2", ws=3 * MIB // 4)
    levels = memory_levels(bench.model_copy(update={"results": [*bench.results, short]}))
    assert levels is not None and levels.private_bytes == 2 * MIB


def _rows_bench(rows: dict[int, float]) -> BenchReport:
    """Squares flat at 100 GFLOP/s down to 32, and few-row products at ``rows``."""
    results = [_figure("matmul", 100.0, unit="GFLOP/s", shape=[n, n, n]) for n in (32, 256, 1024)]
    results += [
        _figure("matmul_rows", v, unit="GFLOP/s", shape=[m, 1024, 1024]) for m, v in rows.items()
    ]
    return BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)


def test_products_of_few_rows_are_priced_by_the_measured_rows_curve() -> None:
    rates = here_rates(None, _rows_bench({1: 25.0, 16: 60.0, 64: 90.0}), Precision.FP32)
    assert rates.rows_points == [(1.0, 25e9), (16.0, 60e9), (64.0, 90e9)]
    assert any("rows curve" in a for a in rates.assumptions)
    # A 16-row product by a 1,024 x 1,024 weight: its rows' figure, not a 46-wide square.
    assert rates.product(46, rows=16, work=256) == pytest.approx(60e9)
    # Between measured rows, interpolated in log rows: 4 is halfway from 1 to 16.
    assert rates.product(12, rows=4, work=161) == pytest.approx(42.5e9)
    # Capped by the square of the same work: a tiny product pays its per-call cost.
    small = rates.gemm(10)
    assert small is not None and rates.product(8, rows=8, work=10) == pytest.approx(small)
    # From the top measured rows on, and without rows, the harmonic-mean rule holds.
    assert rates.product(170, rows=64, work=400) == rates.gemm(170)
    assert rates.product(46) == rates.gemm(46)


def test_without_rows_figures_the_harmonic_rule_holds() -> None:
    rates = here_rates(None, _rows_bench({}), Precision.FP32)
    assert rates.rows_points == []
    assert rates.product(46, rows=16, work=256) == rates.gemm(46)


def test_small_squares_extend_the_matmul_curve_below_the_sized_figure() -> None:
    """The sized matmul starts at 512: the bench's small squares are the curve below it."""
    results = [_figure("matmul", 100.0, unit="GFLOP/s", shape=[n, n, n]) for n in (512, 1024)]
    small = {64: 20.0, 128: 50.0, 256: 80.0}
    results += [_figure("matmul_small", v, unit="GFLOP/s", shape=[n, n, n]) for n, v in small.items()]  # fmt: skip
    rates = here_rates(None, BenchReport(budget_s=1.0, elapsed_s=1.0, results=results), Precision.FP32)  # fmt: skip
    assert rates.gemm_points[:3] == [(64.0, 20e9), (128.0, 50e9), (256.0, 80e9)]
    assert rates.gemm(128) == pytest.approx(50e9)
    assert any("small squares" in a for a in rates.assumptions)
    # Without them the curve is assumed flat from 512 down to FLAT_DOWN_TO: 2.5x higher here.
    sized = here_rates(None, BenchReport(budget_s=1.0, elapsed_s=1.0, results=results[:2]), Precision.FP32)  # fmt: skip
    assert sized.gemm(128) == pytest.approx(100e9)
    assert not any("small squares" in a for a in sized.assumptions)
    # A bf16 estimate keeps its own curve: the small squares are fp32 figures.
    bf16 = here_rates(None, BenchReport(budget_s=1.0, elapsed_s=1.0, results=[
        *results, _figure("matmul", 300.0, unit="GFLOP/s", shape=[512, 512, 512]).model_copy(update={"dtype": "bf16"}),
    ]), Precision.BF16)  # fmt: skip
    assert bf16.gemm_points == [(512.0, 300e9)]


def test_backward_operators_pay_the_measured_backward_figure() -> None:
    """30 forward operators at the dispatch figure, 10 backward ones at the backward's."""
    bench = _bench()
    with_back = bench.model_copy(update={"results": [
        *bench.results, _figure("dispatch_backward", 0.1, unit="Mop/s"),  # 10 µs per operator
    ]})  # fmt: skip
    rates = here_rates(None, with_back, Precision.FP32)
    assert rates.levels is not None and rates.levels.backward_dispatch_s == pytest.approx(1e-5)
    assert any("dispatch_backward" in a for a in rates.assumptions)
    assert step_time(_cnn(8), rates).parts["overhead"] == pytest.approx(30 * 4e-6 + 10 * 1e-5)
    # Inference has no backward; without the figure the backward pays the dispatch figure.
    assert step_time(_cnn(8, task=Task.INFER), rates).parts["overhead"] == pytest.approx(30 * 4e-6)
    plain = here_rates(None, bench, Precision.FP32)
    assert step_time(_cnn(8), plain).parts["overhead"] == pytest.approx(40 * 4e-6)


def test_convolutions_are_lowered_along_the_one_thread_curve_where_measured() -> None:
    """On two threads a small square also pays for splitting its little work; a
    convolution of few channels over many positions does not, so one thread's curve
    gives the loss of reuse alone."""
    results = [_figure("matmul", 100.0, unit="GFLOP/s", shape=[n, n, n]) for n in (512, 1024)]
    results += [_figure("conv2d", 200.0, unit="GFLOP/s", shape=[8, 64, 56, 56, 64, 3, 3])]
    # At the job's two threads the 64-wide square is slow (20), at one thread 40 of 50.
    results += [_figure("matmul_small", v, unit="GFLOP/s", shape=[n, n, n]) for n, v in ((64, 20.0), (256, 90.0))]  # fmt: skip
    one = [(64, 40.0), (256, 50.0)]
    single = [_figure("matmul_small", v, unit="GFLOP/s", shape=[n, n, n]).model_copy(update={"threads": 1}) for n, v in one]  # fmt: skip
    bench = BenchReport(budget_s=1.0, elapsed_s=1.0, results=[*results, *single])
    rates = here_rates(None, bench, Precision.FP32)
    assert rates.threads == 2
    assert rates.single_points == [(64.0, 40e9), (256.0, 50e9)]
    # The two-thread curve keeps only its own thread count's figures.
    assert rates.gemm_points[:2] == [(64.0, 20e9), (256.0, 90e9)]
    assert any("one-thread curve" in a for a in rates.assumptions)
    measured_at = rates.conv_size or 0.0
    assert rates.levels is None  # no sweep, no measured call: the squares as measured
    assert rates.without_calls(rates.single_points) == rates.single_points
    want = 200e9 * (_curve(one, 64) / _curve(one, measured_at))
    assert rates.conv_at(64.0) == pytest.approx(want)
    # Without the one-thread figures, the job's own curve lowers it (more, here).
    plain = here_rates(None, BenchReport(budget_s=1.0, elapsed_s=1.0, results=results), Precision.FP32)  # fmt: skip
    assert plain.single_points == []
    assert (plain.conv_at(64.0) or 0) < (rates.conv_at(64.0) or 0)


def _curve(pts: list[tuple[int, float]], size: float) -> float:
    from hwadvisor.estimate.timing.rates import curve_at

    value = curve_at([(float(s), v * 1e9) for s, v in pts], size)
    assert value is not None
    return value


def test_a_convolution_is_lowered_by_the_small_squares_kernels_not_their_calls() -> None:
    """A 64-wide square's time at one thread is part call (the dispatch figure); a
    convolution of few channels is one call over many positions."""
    sweep = [r for r in _bench().results if r.kernel not in ("matmul", "triad")]
    results = [_figure("matmul", 70.0, unit="GFLOP/s", shape=[512, 512, 512]), *sweep]
    results += [_figure("conv2d", 80.0, unit="GFLOP/s", shape=[8, 64, 56, 56, 64, 3, 3])]
    results += [_figure("matmul_small", v, unit="GFLOP/s", shape=[n, n, n]) for n, v in ((64, 36.0), (128, 57.0), (256, 68.0))]  # fmt: skip
    bench = BenchReport(budget_s=1.0, elapsed_s=1.0, results=results)
    rates = here_rates(None, bench, Precision.FP32)
    assert rates.levels is not None and rates.levels.dispatch_s == pytest.approx(4e-6)
    # 2 x 64^3 FLOPs at 36 GFLOP/s is 14.6 us; 10.6 us of it is the kernel: 49.6 GFLOP/s.
    kernel = rates.without_calls([(64.0, 36e9)])[0][1]
    assert kernel == pytest.approx(2 * 64**3 / (2 * 64**3 / 36e9 - 4e-6))
    assert kernel == pytest.approx(49.6e9, rel=0.01)
    # Large squares hardly move; a call is never more than half a square's time.
    assert rates.without_calls([(512.0, 70e9)])[0][1] == pytest.approx(70e9, rel=0.002)
    assert rates.without_calls([(8.0, 1e9)])[0][1] == pytest.approx(2e9)
    # The 45-wide convolution of 16 channels: lowered by the kernels' curve, less than by
    # the calls' (curve_at of the raw squares).
    raw = 80e9 * curve_at(rates.gemm_points, 45.0) / curve_at(rates.gemm_points, rates.conv_size)  # type: ignore[operator]
    assert (rates.conv_at(45.0) or 0.0) > raw
    kernels = rates.without_calls(rates.gemm_points)
    want = 80e9 * curve_at(kernels, 45.0) / curve_at(kernels, rates.conv_size)  # type: ignore[operator]
    assert rates.conv_at(45.0) == pytest.approx(want)


def test_softmaxs_backward_streams_at_the_element_wise_rate_without_a_note() -> None:
    from hwadvisor.estimate.workload.counting import op_family

    assert op_family("_softmax_backward_data") == "softmax_backward"
    assert op_family("_softmax") == "softmax"

    def job(family: str) -> Workload:
        groups = [OpGroup(family=family, backward=True, count=4, bytes=96 * 1024)]
        prof = OpProfile(op_groups=groups, memory_bytes=1e6, kernels=4, backward_kernels=4)
        return Workload(kind=ModelKind.ENCODER, task=Task.TRAIN, batch_size=64, params=10,
                        flops_per_sample=1.0, profile=prof)  # fmt: skip

    rates = here_rates(None, _bench(), Precision.FP32)
    softmax_b, eltwise = step_time(job("softmax_backward"), rates), step_time(job("eltwise"), rates)
    assert softmax_b.parts["memory"] == pytest.approx(eltwise.parts["memory"])
    assert not any("softmax_backward" in n for n in softmax_b.notes)


def test_nchw_convolutions_pay_onednns_reorders_where_the_bench_measured_channels_last() -> None:
    """Each oneDNN convolution of an NCHW model copies its input, weights and output to
    and from oneDNN's layout (its backward the gradients too): element-wise passes the
    bench's channels-last convolution figure does not contain. A channels-last job, and a
    bench without a sweep, pay none."""
    from hwadvisor.models.workload import ConvShape, GemmBucket

    conv = ConvShape(count=2, kernel=[3, 3], stride=[1, 1], dilation=[1, 1],
                     input_elements=64 * 32 * 32, product=[64, 576, 1024], flops=2e8, size=173)  # fmt: skip
    prof = OpProfile(conv=[GemmBucket(size=173, flops=2e8)], conv_shapes=[conv],
                     conv_flops=2e8, kernels=2)  # fmt: skip

    def wl(task: Task, *, cl: bool = False) -> Workload:
        return Workload(kind=ModelKind.CNN, task=task, batch_size=8, params=1000,
                        flops_per_sample=2e8, profile=prof, channels_last=cl)  # fmt: skip

    bench = _bench()
    conv_fig = _figure("conv2d", 150.0, unit="GFLOP/s", shape=[8, 64, 56, 56, 64, 3, 3])
    bench = bench.model_copy(update={"results": [*bench.results, conv_fig]})
    rates = here_rates(None, bench, Precision.FP32)
    assert rates.levels is not None
    x, y, w = 8 * 64 * 32 * 32, 8 * 64 * 1024, 64 * 576

    def copies(*elements: float) -> float:
        return sum(2 * (rates.levels.seconds("eltwise", 8.0 * e, cold=True) or 0) for e in elements)

    for task, moved in ((Task.INFER, (x, w, y)), (Task.TRAIN, (x, w, y, y, x, w, x, w))):
        nchw = step_time(wl(task), rates)
        last = step_time(wl(task, cl=True), rates)
        assert nchw.parts["conv"] - last.parts["conv"] == pytest.approx(copies(*moved))
        assert any("layout reorders" in n for n in nchw.notes)
        assert not any("layout reorders" in n for n in last.notes)
    no_sweep = here_rates(None, _bench(sweep=False).model_copy(
        update={"results": [*_bench(sweep=False).results, conv_fig]}), Precision.FP32)  # fmt: skip
    assert not any("layout reorders" in n for n in step_time(wl(Task.TRAIN), no_sweep).notes)


def test_the_strided_share_leaves_out_the_reorders_its_figure_paid() -> None:
    """The strided-backward figure's call reordered its NCHW tensors too; priced on their
    own, they are taken out of it before its share of the unstrided price is read."""
    from hwadvisor.estimate.timing.step import conv_reorder_s, onednn_conv_rate
    from hwadvisor.models.workload import ConvShape

    conv_fig = _figure("conv2d", 150.0, unit="GFLOP/s", shape=[8, 64, 56, 56, 64, 3, 3])
    strided = _figure("conv2d_backward_strided", 40.0, unit="GFLOP/s",
                      shape=[4, 256, 28, 28, 256, 3, 3])  # fmt: skip
    base = _bench()
    bench = base.model_copy(update={"results": [*base.results, conv_fig, strided]})
    rates = here_rates(None, bench, Precision.FP32)
    assert rates.levels is not None
    n, c, h, cout, k, oh = 4, 256, 28, 256, 3, 14
    flops = 2.0 * cout * oh * oh * c * k * k
    ref = ConvShape(count=1, kernel=[k, k], stride=[1, 1], dilation=[1, 1], input_elements=c * h * h,
                    product=[cout, c * k * k, oh * oh], flops=flops, size=173)  # fmt: skip
    from hwadvisor.estimate.workload.counting import effective_size

    ref = ref.model_copy(update={"size": effective_size(n * oh * oh, cout, c * k * k)})
    work = 2.0 * flops * n
    price = onednn_conv_rate(ref, rates, n, backward=True) or 1.0
    reorders = conv_reorder_s(rates.levels, ref, n, backward=True)
    measured = work / 40e9
    assert 0 < reorders < measured
    assert rates.strided_backward[3] == pytest.approx((work / price) / (measured - reorders))


def test_each_recurrent_layer_call_pays_the_measured_rnn_layer_figure() -> None:
    """Two layers' calls a pass at 84 µs each (the rnn_layer figure), 4 µs of which the
    dispatch figure already prices; the backward's calls at the same figure."""
    groups = [
        OpGroup(family="rnn_layer", count=2, bytes=0.0),
        OpGroup(family="rnn_layer", backward=True, count=2, bytes=0.0),
    ]
    prof = OpProfile(op_groups=groups, kernels=10, backward_kernels=10)
    wl = Workload(kind=ModelKind.OTHER, task=Task.INFER, batch_size=1, params=1000,
                  flops_per_sample=1.0, profile=prof)  # fmt: skip
    bench = _bench()
    plain = step_time(wl, here_rates(None, bench, Precision.FP32)).parts["overhead"]
    with_rnn = bench.model_copy(update={"results": [
        *bench.results, _figure("rnn_layer", 1.0 / 84.0, unit="Mop/s"),  # 84 µs a call
    ]})  # fmt: skip
    rates = here_rates(None, with_rnn, Precision.FP32)
    assert rates.levels is not None and rates.levels.rnn_layer_s == pytest.approx(84e-6)
    infer = step_time(wl, rates).parts["overhead"]
    assert infer - plain == pytest.approx(2 * 80e-6)
    train = wl.model_copy(update={"task": Task.TRAIN})
    assert step_time(train, rates).parts["overhead"] - step_time(
        train, here_rates(None, bench, Precision.FP32)
    ).parts["overhead"] == pytest.approx(4 * 80e-6)
