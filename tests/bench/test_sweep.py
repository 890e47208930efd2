"""The memory sweep: working sets per cache level, counted bytes, cases and report fields."""

from __future__ import annotations

import mmap
import sys
from typing import Any

import pytest

from hwadvisor.bench.devices import Target
from hwadvisor.bench.sweep import (
    BACKWARD_OPS,
    BACKWARD_WORK,
    DISPATCH_WORK,
    FAMILIES,
    LEVELS,
    MIB,
    family_shape,
    family_statement,
    family_work,
    level_bytes,
    reachable_l3,
)
from hwadvisor.models.facts import Cpu, Facts

torch = pytest.importorskip("torch")


def _facts(l2: int, l3: int) -> Facts:
    return Facts(cpu=Cpu(usable_cores=2, l2_bytes=l2, l3_bytes=l3))


def test_levels_follow_the_probed_caches() -> None:
    sizes = level_bytes(_facts(1 * MIB, 32 * MIB), threads=2)
    # Half of the L2 of the cores used, half of the L3, twice the L3.
    assert sizes == {"l2": 1 * MIB, "l3": 16 * MIB, "dram": 64 * MIB}
    big = level_bytes(_facts(2 * MIB, 384 * MIB), threads=96)
    # The L2s of 96 cores hold half the L3: its point moves to three quarters of it.
    assert big["l2"] == 96 * MIB and big["l3"] == 288 * MIB and big["dram"] == 768 * MIB
    assert big["l2"] < big["l3"] < big["dram"]


def test_levels_stay_ordered_when_the_l2s_outgrow_the_l3() -> None:
    # Many cores with large L2s and a small L3: the L3 point moves past the L2s.
    sizes = level_bytes(_facts(2 * MIB, 32 * MIB), threads=64)
    assert sizes["l2"] < sizes["l3"] < sizes["dram"]


def test_a_guest_shown_its_hosts_whole_l3_sizes_by_what_its_threads_can_hold() -> None:
    # This project's Xeon guest: 2 vCPUs, sysfs showing the host's 480 MiB of L3. Sized
    # by that, the DRAM point was 960 MiB and a dropout call there 0.74 s.
    guest = level_bytes(_facts(2 * MIB, 480 * MIB), threads=2)
    assert reachable_l3(_facts(2 * MIB, 480 * MIB), 2) == 96_000_000
    assert guest == {"l2": 2 * MIB, "l3": 48_000_000, "dram": 192_000_000}
    # A whole host's worth of threads counts the whole L3, and a small L3 is never raised.
    assert reachable_l3(_facts(2 * MIB, 480 * MIB), 96) == 480 * MIB
    assert reachable_l3(_facts(1 * MIB, 32 * MIB), 1) == 32 * MIB


def test_the_stream_buffers_follow_the_reachable_l3() -> None:
    from hwadvisor.bench.devices import Target
    from hwadvisor.bench.kernels import stream_elements

    two = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=2)
    # STREAM's four times the cache: 4 x 96 MB for 2 threads, not 4 x 480 MiB.
    assert stream_elements(two, _facts(2 * MIB, 480 * MIB), 64 * 2**30) * 4 == 384_000_000
    assert stream_elements(two, _facts(1 * MIB, 32 * MIB), 64 * 2**30) * 4 == 128 * MIB


def test_levels_without_facts_assume_common_caches() -> None:
    assert level_bytes(None, threads=1) == {"l2": MIB // 2, "l3": 16 * MIB, "dram": 64 * MIB}


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_shapes_hit_the_working_set(family: object) -> None:
    for target in (MIB, 16 * MIB, 64 * MIB):
        shape = family_shape(family, target)  # type: ignore[arg-type]
        moved = family_work(family)(shape)  # type: ignore[arg-type]
        assert 0.9 * target <= moved <= 1.01 * target


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_work_is_what_the_operator_counter_records(family: object) -> None:
    """The sweep's GB/s are counted bytes per second, so the estimator can divide by them."""
    from hwadvisor.estimate.workload.counting import Count, _make_mode, op_family

    shape = family_shape(family, MIB)  # type: ignore[arg-type]
    call = family_statement(torch, family.name, shape)  # type: ignore[attr-defined]
    count = Count()
    with _make_mode(count):
        call()
    moved = sum(b for (fam, _), (_, b) in count.groups.items() if fam == family.name)  # type: ignore[attr-defined]
    assert moved == pytest.approx(family_work(family)(shape), rel=0.02)  # type: ignore[arg-type]
    assert {fam for fam, _ in count.groups} == {family.name}  # type: ignore[attr-defined]
    assert op_family("native_batch_norm") == "batch_norm"


def test_cpu_plan_has_dispatch_and_every_family_at_every_level() -> None:
    from hwadvisor.bench.kernels import plan

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = plan(torch, target, _facts(1 * MIB, 8 * MIB), free_bytes=None)
    sweep = {(c.kernel, c.level) for c in cases if c.level}
    assert sweep == {(f.name, lvl) for f in FAMILIES for lvl in f.levels}
    # The masked selections are priced past the L3 by the element-wise DRAM figure.
    assert {lvl for k, lvl in sweep if k in ("masked_fill", "where")} == {"l2", "l3"}
    assert {lvl for k, lvl in sweep if k == "eltwise"} == set(LEVELS)
    dispatch = [c for c in cases if c.kernel == "dispatch"]
    assert len(dispatch) == 1 and dispatch[0].work((64,)) == DISPATCH_WORK
    backward = [c for c in cases if c.kernel == "dispatch_backward"]
    assert len(backward) == 1 and backward[0].work((64,)) == BACKWARD_WORK
    # Each sweep case is one size, measured once; its least allotment is small.
    assert all(len(c.ladder) == 1 and (c.min_allot_s or 1) < 0.1 for c in cases if c.level)


def test_gpu_plan_has_no_sweep() -> None:
    from hwadvisor.bench.kernels import plan

    class FakeTorch:
        float32 = "f32"

        @staticmethod
        def device(name: str) -> str:
            return name

    target = Target(device="cuda:0", kind="cuda", index=0, name="GPU", uuid=None, threads=1)
    cases = plan(FakeTorch, target, None, free_bytes=8 * 2**30)
    assert not [c for c in cases if c.level or c.kernel == "dispatch"]


def test_statements_run_and_report_fields() -> None:
    from hwadvisor.bench.kernels import plan
    from hwadvisor.bench.runner import to_result
    from hwadvisor.bench.sizing import SizingOutcome, Timing

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = [c for c in plan(torch, target, _facts(64 * 1024, 1 * MIB), None) if c.level == "l2"]
    for case in cases:
        case.build(case.ladder[0])()  # every family's statement runs on this torch
    case = cases[0]
    outcome = SizingOutcome(shape=case.ladder[0], timing=Timing(1e-3, 1e-5, 10))
    result = to_result(case, outcome, None)
    assert result.level == "l2" and result.unit == "GB/s"
    assert result.working_set_bytes == int(case.work(case.ladder[0]))
    assert result.value == pytest.approx(case.work(case.ladder[0]) / 1e-3 / 1e9)


def _dispatched(call: Any) -> tuple[Any, list[str]]:
    """What ``call`` returns and the aten operators it dispatches, in order."""
    from torch.utils._python_dispatch import TorchDispatchMode

    seen: list[str] = []

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            seen.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    with Record():
        out = call()
    return out, seen


def test_backward_figure_counts_the_operators_its_call_dispatches() -> None:
    """Its work is what the operator counter would count of that backward pass."""
    from hwadvisor.bench.sweep import backward_statement
    from hwadvisor.estimate.workload.counting import _FREE_OPS

    call = backward_statement(torch)
    call()
    _, seen = _dispatched(call)
    counted = [name for name in seen if name not in _FREE_OPS]
    assert len(counted) == BACKWARD_OPS and BACKWARD_WORK == BACKWARD_OPS * DISPATCH_WORK
    assert {"sigmoid_backward", "mul", "add_"} == set(counted)


def test_filled_inputs_are_spread_deterministic_and_cheap_to_make() -> None:
    from hwadvisor.bench.sweep import FILL_PERIOD, filled

    x = filled(torch, (3, 4, 5))
    assert tuple(x.shape) == (3, 4, 5) and x.dtype == torch.float32 and x.is_contiguous()
    big = filled(torch, (2 * FILL_PERIOD + 7,))
    assert float(big.min()) >= -2.0 and float(big.max()) < 2.0
    assert abs(float(big.mean())) < 0.01 and float(big.std()) > 1.0  # even over [-2, 2)
    assert torch.equal(big[:FILL_PERIOD], big[FILL_PERIOD : 2 * FILL_PERIOD])
    assert not torch.equal(filled(torch, (64,)), filled(torch, (64,), 1))
    assert torch.equal(filled(torch, (64,)), filled(torch, (64,)))
    # neighbours differ: no run of equal values
    assert int((big[1:] == big[:-1]).sum()) == 0


def test_the_sweep_goes_level_by_level_before_the_cpus_other_dtypes() -> None:
    from hwadvisor.bench.kernels import plan

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=2)
    cases = plan(torch, target, _facts(1 * MIB, 8 * MIB), free_bytes=None)
    levels = [c.level for c in cases if c.level]
    # every L2 figure, then every L3 one, then the DRAM ones (the costliest) last
    assert levels == sorted(levels, key=LEVELS.index)
    weights = {c.level: c.weight for c in cases if c.level}
    assert weights["l2"] < weights["l3"] < weights["dram"]
    order = [(c.kernel, c.dtype) for c in cases]
    last_sweep = max(i for i, c in enumerate(cases) if c.level)
    # bf16, fp16 and int8 products and the bf16 convolution: side notes on a CPU, after
    # every fp32 figure the estimate "here" is priced from
    for key in (("matmul", "bf16"), ("matmul", "fp16"), ("matmul", "int8"), ("conv2d", "bf16")):
        assert order.index(key) > last_sweep
    assert order.index(("matmul", "fp32")) == 0 and order.index(("conv2d", "fp32")) < last_sweep


@pytest.mark.parametrize("family", FAMILIES, ids=lambda f: f.name)
def test_outputs_glibc_would_map_fresh_are_made_once(family: object) -> None:
    """Past 32 MiB a fresh output faults in its pages at every call: the figure would time
    page faults, which the first_touch figure prices, so the call writes into kept outputs."""
    big = family_statement(torch, family.name, family_shape(family, 160 * MIB))  # type: ignore[attr-defined]
    small = family_statement(torch, family.name, family_shape(family, MIB))  # type: ignore[attr-defined]

    def first(out: object) -> object:
        return out[0] if isinstance(out, tuple) else out

    assert first(big()).data_ptr() == first(big()).data_ptr()  # type: ignore[attr-defined]
    a, b = first(small()), first(small())
    if family.name != "dropout":  # type: ignore[attr-defined]  # in place: its input
        assert a is not b


def test_first_touch_figure_maps_fresh_pages() -> None:
    from hwadvisor.bench.kernels import plan
    from hwadvisor.bench.sweep import FIRST_TOUCH_BYTES
    from hwadvisor.glibc import always_mapped

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = [c for c in plan(torch, target, None, free_bytes=None) if c.kernel == "first_touch"]
    assert len(cases) == 1 and cases[0].unit == "GB/s"
    (shape,) = cases[0].ladder
    assert cases[0].work(shape) == FIRST_TOUCH_BYTES and always_mapped(FIRST_TOUCH_BYTES)
    call = cases[0].build(shape)
    assert call() == FIRST_TOUCH_BYTES // 4
    if sys.platform.startswith("linux"):
        import resource

        # every call faults in every page of its 40 MiB again
        pages = FIRST_TOUCH_BYTES // mmap.PAGESIZE
        before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        call()
        call()
        assert resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before >= 2 * pages


#: A process whose glibc serves a 40 MiB request from its heap (the threshold raised past
#: it, as a grown heap does): the first-touch statement must still fault every page.
_HEAP_SERVED = """
import ctypes, mmap, resource, torch
from hwadvisor.bench.sweep import FIRST_TOUCH_BYTES, first_touch_statement
libc = ctypes.CDLL("libc.so.6")
assert libc.mallopt(-3, 256 * 2**20) == 1  # M_MMAP_THRESHOLD
assert libc.mallopt(-1, 512 * 2**20) == 1  # M_TRIM_THRESHOLD
big = torch.ones(128 * 2**20 // 4); del big  # the heap grows, and keeps its free top
pages = FIRST_TOUCH_BYTES // mmap.PAGESIZE
def faults(fn):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    fn(); fn()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before
heap = faults(lambda: torch.empty(FIRST_TOUCH_BYTES // 4)[:: mmap.PAGESIZE // 4].fill_(0.0))
mine = faults(first_touch_statement(torch))
print(heap < pages, mine >= 2 * pages)
"""


def test_first_touch_writes_enough_of_each_page_for_every_thread() -> None:
    """One task per ATen grain and thread: 40 MiB of 4 KiB pages at two threads take the
    floor of eight a page; sixteen threads, or 64 KiB pages, take more; never past a page."""
    from hwadvisor.bench.sweep import GRAIN_SIZE, TOUCH_PER_PAGE, touch_per_page

    assert touch_per_page(2, 10240, 1024) == TOUCH_PER_PAGE
    assert touch_per_page(16, 10240, 1024) * 10240 >= 16 * GRAIN_SIZE
    assert touch_per_page(2, 640, 16384) * 640 >= 2 * GRAIN_SIZE
    assert touch_per_page(512, 10, 1024) == 1024


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_first_touch_faults_its_pages_where_glibc_serves_the_heap() -> None:
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", _HEAP_SERVED], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    # a fresh torch tensor faults (almost) nothing there; the statement all its pages
    assert out.stdout.split() == ["True", "True"]


def test_optimizer_figures_step_real_optimizers() -> None:
    from hwadvisor.bench.kernels import plan
    from hwadvisor.bench.sweep import OPTIMIZER_KERNELS, OPTIMIZER_TENSORS, optimizer_statement

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    kernels = {c.kernel: c for c in plan(torch, target, None, free_bytes=None)}
    for name, kernel in OPTIMIZER_KERNELS.items():
        case = kernels[kernel]
        assert case.unit == "Mop/s" and case.work((64,)) == OPTIMIZER_TENSORS * DISPATCH_WORK
        step = optimizer_statement(torch, name)
        params = step.__self__.param_groups[0]["params"]  # type: ignore[attr-defined]
        assert len(params) == OPTIMIZER_TENSORS
        before = params[0].detach().clone()
        step()
        assert not torch.equal(before, params[0].detach())  # it really updates them


def test_the_for_loops_operators_a_tensor_are_what_torch_optim_dispatches() -> None:
    """FOR_LOOP_OPS, which prices a tensor where the optimizer figure is missing, is what
    the optimizer figures' own steps dispatch per parameter tensor in this torch."""
    from torch.utils._python_dispatch import TorchDispatchMode

    from hwadvisor.bench.sweep import FOR_LOOP_OPS, OPTIMIZER_TENSORS, optimizer_statement

    class Record(TorchDispatchMode):
        def __init__(self) -> None:
            super().__init__()
            self.ops: list[str] = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # type: ignore[no-untyped-def]
            self.ops.append(func.overloadpacket.__name__)
            return func(*args, **(kwargs or {}))

    for name, ops in FOR_LOOP_OPS.items():
        step = optimizer_statement(torch, name)
        record = Record()
        with record:
            step()
        # the profiler's record_function markers come once a step, not per tensor
        per_step = [op for op in record.ops if not op.startswith("_record_function")]
        assert len(per_step) == ops * OPTIMIZER_TENSORS, name


def test_filled_inputs_follow_no_pattern_a_max_pools_branches_could_learn() -> None:
    """Which element of each 2x2 window is largest, and what follows what, is as even as
    for random data: a regular fill let the branch predictor learn max pooling's
    comparisons, and the bench read it 2.5x faster than on a model's activations."""
    from hwadvisor.bench.sweep import filled

    x = filled(torch, (64, 64, 16, 16))
    windows = x.reshape(64, 64, 8, 2, 8, 2).permute(0, 1, 2, 4, 3, 5).reshape(-1, 4)
    first = windows.argmax(1)
    shares = torch.bincount(first, minlength=4).float() / first.numel()
    assert bool(((shares > 0.23) & (shares < 0.27)).all())
    pairs = torch.bincount(first[:-1] * 4 + first[1:], minlength=16).float() / (first.numel() - 1)
    assert bool(((pairs > 0.055) & (pairs < 0.07)).all())


def test_the_rnn_layer_figure_is_one_onednn_recurrent_layer_call() -> None:
    """Its statement runs one LSTM layer through oneDNN's primitive, as a model's layer on
    a CPU does."""
    from hwadvisor.bench.sweep import RNN_LAYER, rnn_layer_statement, sweep_cases

    (out, _), seen = _dispatched(rnn_layer_statement(torch))
    assert tuple(out.shape) == (1, 1, 8) and not out.requires_grad
    assert seen.count("mkldnn_rnn_layer") == 1
    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = [c for c in sweep_cases(torch, target, None) if c.kernel == RNN_LAYER]
    assert len(cases) == 1 and cases[0].unit == "Mop/s"
