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
