"""Memory formulas against REFERENCE.md: bytes per parameter, activations, KV cache, sums."""

from __future__ import annotations

import pytest

from hwadvisor.estimate.memory import MemoryPlan, breakdown, fits
from hwadvisor.models.workload import ModelKind, Optimizer, Precision, Task, Workload

N = 1_000_000


def _wl(**kw: object) -> Workload:
    base: dict[str, object] = {
        "params": N,
        "kind": ModelKind.MLP,
        "activation_bytes_per_sample": 0.0,
    }
    base.update(kw)
    return Workload(**base)  # type: ignore[arg-type]


def _state_per_param(wl: Workload, plan: MemoryPlan) -> float:
    mb = breakdown(wl, plan, gpu=True)
    assert mb is not None
    return (mb.weights_bytes + mb.gradients_bytes + mb.optimizer_bytes) / N


@pytest.mark.parametrize(
    ("precision", "optimizer", "eight_bit", "expected"),
    [
        (Precision.FP32, Optimizer.ADAMW, False, 16),  # 4 + 4 + 8
        (Precision.AMP, Optimizer.ADAMW, False, 18),  # mixed precision 16-18
        (Precision.BF16, Optimizer.ADAMW, False, 16),
        (Precision.FP32, Optimizer.SGD, False, 12),  # SGD with momentum
        (Precision.FP32, Optimizer.ADAMW, True, 10),  # 8-bit Adam ~10-12
    ],
)
def test_bytes_per_param(
    precision: Precision, optimizer: Optimizer, eight_bit: bool, expected: int
) -> None:
    wl = _wl(optimizer=optimizer, precision=precision)
    plan = MemoryPlan(precision=precision, batch=1, optimizer_8bit=eight_bit)
    assert _state_per_param(wl, plan) == expected


def test_total_is_the_sum_not_the_max() -> None:
    wl = _wl(activation_bytes_per_sample=1e6)
    mb = breakdown(wl, MemoryPlan(precision=Precision.FP32, batch=8), gpu=True)
    assert mb is not None and mb.total_bytes is not None
    parts = [
        mb.weights_bytes,
        mb.gradients_bytes,
        mb.optimizer_bytes,
        mb.activations_bytes or 0,
        mb.runtime_bytes,
    ]
    assert mb.total_bytes == sum(parts)
    assert mb.activations_bytes == 8_000_000


def test_transformer_activation_formula() -> None:
    s, b, h, layers, heads = 512, 4, 1024, 24, 16
    wl = _wl(
        kind=ModelKind.ENCODER,
        seq_len=s,
        hidden=h,
        layers=layers,
        heads=heads,
        activation_bytes_per_sample=None,
    )
    bf16 = breakdown(wl, MemoryPlan(precision=Precision.BF16, batch=b), gpu=True)
    assert bf16 is not None
    assert bf16.activations_bytes == int(s * b * h * layers * (34 + 5 * heads * s / h))
    ckpt = breakdown(
        wl, MemoryPlan(precision=Precision.BF16, batch=b, checkpointing=True), gpu=True
    )
    assert ckpt is not None and ckpt.activations_bytes == 2 * s * b * h * layers


def test_inference_kv_cache_for_decoders() -> None:
    layers, h, heads, s, b = 32, 4096, 32, 2048, 2
    wl = _wl(
        kind=ModelKind.DECODER,
        task=Task.INFER,
        seq_len=s,
        hidden=h,
        layers=layers,
        heads=heads,
        kv_heads=8,
    )
    mb = breakdown(wl, MemoryPlan(precision=Precision.FP16, batch=b), gpu=True)
    assert mb is not None
    assert mb.kv_cache_bytes == 2 * layers * 8 * (h // heads) * s * b * 2
    assert mb.weights_bytes == 2 * N and mb.gradients_bytes == 0 and mb.optimizer_bytes == 0


def test_sharding_divides_by_stage() -> None:
    wl = _wl()
    full = breakdown(wl, MemoryPlan(precision=Precision.FP32, batch=1), gpu=True)
    z1 = breakdown(
        wl, MemoryPlan(precision=Precision.FP32, batch=1, zero_stage=1, shards=4), gpu=True
    )
    z3 = breakdown(
        wl, MemoryPlan(precision=Precision.FP32, batch=1, zero_stage=3, shards=4), gpu=True
    )
    assert full and z1 and z3
    assert (
        z1.optimizer_bytes == full.optimizer_bytes // 4 and z1.weights_bytes == full.weights_bytes
    )
    assert (
        z3.weights_bytes == full.weights_bytes // 4
        and z3.gradients_bytes == full.gradients_bytes // 4
    )


def test_unknown_stays_unknown() -> None:
    assert (
        breakdown(_wl(params=None), MemoryPlan(precision=Precision.FP32, batch=1), gpu=True) is None
    )
    mb = breakdown(
        _wl(activation_bytes_per_sample=None),
        MemoryPlan(precision=Precision.FP32, batch=1),
        gpu=True,
    )
    assert mb is not None and mb.total_bytes is None
    assert fits(None, 10**9) is None and fits(10**9, None) is None


def test_fit_keeps_ten_percent_headroom() -> None:
    assert fits(89, 100) is True
    assert fits(91, 100) is False
