"""The convolution backward the bench times beside the forward: its work, its shapes and
a real run of its statement."""

from __future__ import annotations

import pytest

from hwadvisor.bench.devices import Target
from hwadvisor.bench.kernels import conv_backward_work, conv_work, plan

torch = pytest.importorskip("torch")


def test_the_backward_of_the_forwards_convolution_is_planned_and_runs() -> None:
    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = {c.kernel: c for c in plan(torch, target, None, free_bytes=None) if c.dtype == "fp32"}
    fwd, bwd = cases["conv2d"], cases["conv2d_backward"]
    assert bwd.ladder == fwd.ladder and bwd.unit == "GFLOP/s"
    shape = fwd.ladder[0]
    assert bwd.work(shape) == conv_backward_work(shape) == 2 * conv_work(shape)
    grad_input, grad_weight, grad_bias = bwd.build(shape)()
    n, c, h, w = shape
    assert tuple(grad_input.shape) == (n, c, h, w) and tuple(grad_weight.shape) == (c, c, 3, 3)
    assert grad_bias is None


def test_a_cpu_times_the_backward_of_strided_convolutions_and_it_runs() -> None:
    from hwadvisor.bench.kernels import STRIDED_BACKWARD, strided_backward_work

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = [c for c in plan(torch, target, None, free_bytes=None) if c.kernel == "conv2d_backward_strided"]  # fmt: skip
    assert [c.ladder[0] for c in cases] == list(STRIDED_BACKWARD)
    shape = (1, 8, 8, 8, 16, 1, 1)  # a small one: the statement, not the figure
    grad_input, grad_weight, _ = cases[0].build(shape)()
    assert tuple(grad_input.shape) == (1, 8, 8, 8) and tuple(grad_weight.shape) == (16, 8, 1, 1)
    # Twice the forward's FLOPs, the output 4 x 4 at stride 2.
    assert strided_backward_work(shape) == 2 * 2 * 1 * 16 * 4 * 4 * 8


def test_a_cpu_times_nchw_convolutions_forward_and_backward_and_they_run() -> None:
    from hwadvisor.bench.kernels import NCHW_CONVS, conv_backward_work, conv_work

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    cases = [c for c in plan(torch, target, None, free_bytes=None) if "nchw" in c.kernel]
    assert [(c.kernel, c.ladder) for c in cases] == [
        (kernel, (shape,))
        for shape in NCHW_CONVS
        for kernel in ("conv2d_nchw", "conv2d_nchw_backward")
    ]
    shape = (1, 8, 6, 6)  # a small one: the statement, not the figure
    out = cases[0].build(shape)()
    assert tuple(out.shape) == shape and out.is_contiguous()
    assert not out.is_contiguous(memory_format=torch.channels_last)
    grad_input, grad_weight, _ = cases[1].build(shape)()
    assert grad_input.is_contiguous() and tuple(grad_weight.shape) == (8, 8, 3, 3)
    assert cases[0].work(shape) == conv_work(shape) and cases[1].work(shape) == conv_backward_work(shape)  # fmt: skip
    # a GPU plan has none
    gpu = Target(device="cuda:0", kind="cuda", index=0, name=None, uuid=None, threads=1)
    assert not [c for c in plan(torch, gpu, None, free_bytes=None) if "nchw" in c.kernel]


def test_a_cpu_times_products_of_few_rows_one_size_each() -> None:
    from hwadvisor.bench.kernels import CPU_ROWS, ROWS_WIDTH, matmul_work

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    rows = [c for c in plan(torch, target, None, free_bytes=None) if c.kernel == "matmul_rows"]
    assert [c.ladder for c in rows] == [((m, ROWS_WIDTH, ROWS_WIDTH),) for m in CPU_ROWS]
    case = rows[0]
    assert case.dtype == "fp32" and case.work(case.ladder[0]) == matmul_work(case.ladder[0])
    out = case.build(case.ladder[0])()
    assert tuple(out.shape) == (CPU_ROWS[0], ROWS_WIDTH)  # [rows, width] x [width, width]
    gpu = Target(device="cuda:0", kind="cuda", index=0, name=None, uuid=None, threads=1)
    assert not [c for c in plan(torch, gpu, None, free_bytes=None) if c.kernel == "matmul_rows"]


def test_a_cpu_times_the_same_products_with_a_weight_from_dram_each_call() -> None:
    from hwadvisor.bench.kernels import (
        COLD_WIDE_WIDTH,
        CPU_ROWS,
        ROWS_WIDTH,
        ColdWeights,
        cold_pool_bytes,
    )
    from hwadvisor.bench.kernels import _cold_rows_builder as cold_rows
    from hwadvisor.models.facts import Cpu, Facts

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=2)
    facts = Facts(cpu=Cpu(l3_bytes=32 * 2**20))
    cases = [c for c in plan(torch, target, facts, free_bytes=None) if c.kernel == "matmul_rows_cold"]  # fmt: skip
    # Each row count by the 1024-square weight, then one row by a 4096-square one: two
    # points of a one-row product's cost by its weight (estimate.here._cold_row_line).
    wide = (1, COLD_WIDE_WIDTH, COLD_WIDE_WIDTH)
    assert [c.ladder for c in cases] == [((m, ROWS_WIDTH, ROWS_WIDTH),) for m in CPU_ROWS] + [
        (wide,)
    ]
    # ... where two 64 MiB weights fit in an eighth of free memory.
    tight = plan(torch, target, facts, free_bytes=8 * 2 * 64 * 2**20 - 1)
    assert [c.ladder for c in tight if c.kernel == "matmul_rows_cold"][-1] != (wide,)
    # The pool is twice the cache the threads reach, and at most an eighth of free memory.
    assert cold_pool_bytes(facts, 2, None) == 64 * 2**20
    assert cold_pool_bytes(facts, 2, free_bytes=256 * 2**20) == 32 * 2**20
    # Distinct weights, each mapped, totalling the pool; the product rotates through them.
    pool = ColdWeights(torch, torch.device("cpu"), 1024 * 1024)
    weights = pool.get(256, 128)
    assert len(weights) == 8 and len({w.data_ptr() for w in weights}) == 8
    assert pool.get(256, 128) is weights  # made once for all row counts
    # Only the last case drops the pool, once every row count has run.
    assert [c.after is not None for c in cases] == [False] * len(CPU_ROWS) + [True]
    out = cases[0].build(cases[0].ladder[0])()
    assert tuple(out.shape) == (CPU_ROWS[0], ROWS_WIDTH)
    pool.clear()
    assert pool.get(256, 128) is not weights
    # Each call multiplies by the next weight: three weights of 1, 2 and 4 give 1, 2, 4, 1 x
    # (powers of two scale a float sum exactly, whatever the random input sums to).
    small = ColdWeights(torch, torch.device("cpu"), 3 * 4 * 4 * 4)
    call = cold_rows(torch, small)((1, 4, 4))
    for i, w in enumerate(small.get(4, 4)):
        w.fill_(float(2**i))
    outs = [float(call()[0, 0]) for _ in range(4)]
    assert [o / outs[0] for o in outs] == [1.0, 2.0, 4.0, 1.0]
    gpu = Target(device="cuda:0", kind="cuda", index=0, name=None, uuid=None, threads=1)
    assert not [c for c in plan(torch, gpu, None, free_bytes=None) if c.kernel == "matmul_rows_cold"]  # fmt: skip


def test_a_cpu_with_a_bf16_dot_product_times_its_rows_in_bf16_too() -> None:
    from hwadvisor.bench.kernels import CPU_ROWS, ColdWeights
    from hwadvisor.models.facts import Cpu, Facts, PeakGflops

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=2)

    def rows(peaks: PeakGflops) -> dict[str, list[str]]:
        got: dict[str, list[str]] = {}
        for c in plan(torch, target, Facts(cpu=Cpu(peak_gflops=peaks)), free_bytes=None):
            if c.kernel.startswith("matmul_rows"):
                got.setdefault(c.dtype, []).append(c.kernel)
        return got

    native = rows(PeakGflops(fp32=100.0, bf16=400.0))
    assert native["bf16"] == ["matmul_rows"] * len(CPU_ROWS) + ["matmul_rows_cold"] * (
        len(CPU_ROWS) + 1
    )
    assert native["fp32"] == native["bf16"]
    assert list(rows(PeakGflops(fp32=100.0, bf16=100.0))) == ["fp32"]  # emulated: fp32 only
    # A bf16 pool holds twice as many weights of the same shape.
    pool = ColdWeights(torch, torch.device("cpu"), 1024 * 1024, "bf16")
    weights = pool.get(256, 128)
    assert len(weights) == 16 and weights[0].dtype == torch.bfloat16


def test_cpu_plan_times_small_squares_below_the_matmul_floor() -> None:
    import torch

    from hwadvisor.bench.kernels import CPU_SMALL, matmul_work
    from hwadvisor.bench.sizing import FLOOR_WORK

    target = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=1)
    small = [c for c in plan(torch, target, None, free_bytes=None) if c.kernel == "matmul_small"]
    assert [c.ladder for c in small] == [((n, n, n),) for n in CPU_SMALL]
    # On several threads they are timed at the job's threads and again at one.
    two = Target(device="cpu", kind="cpu", index=None, name=None, uuid=None, threads=2)
    cases = [c for c in plan(torch, two, None, free_bytes=None) if c.kernel == "matmul_small"]
    assert sorted(c.target.threads for c in cases) == [1] * len(CPU_SMALL) + [2] * len(CPU_SMALL)
    assert all(matmul_work(c.ladder[0]) < FLOOR_WORK[("matmul", "cpu")] for c in small)
    out = small[0].build(small[0].ladder[0])()
    assert tuple(out.shape) == (CPU_SMALL[0], CPU_SMALL[0])
    gpu = Target(device="cuda:0", kind="cuda", index=0, name=None, uuid=None, threads=1)
    assert not [c for c in plan(torch, gpu, None, free_bytes=None) if c.kernel == "matmul_small"]
