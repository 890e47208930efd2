"""Memory formulas: bytes per parameter, activations, KV cache, the peak as a sum, sharding."""

from __future__ import annotations

import pytest

from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown, fits
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
        (Precision.AMP, Optimizer.ADAMW, False, 18),  # + the 16-bit copies autocast keeps
        (Precision.BF16, Optimizer.ADAMW, False, 16),  # ZeRO's 2 + 2 + 12
        (Precision.FP32, Optimizer.SGD, False, 12),  # SGD with momentum
        (Precision.FP32, Optimizer.ADAMW, True, 10),  # 8-bit Adam state: 2 bytes
    ],
)
def test_bytes_per_param(
    precision: Precision, optimizer: Optimizer, eight_bit: bool, expected: int
) -> None:
    wl = _wl(optimizer=optimizer, precision=precision)
    plan = MemoryPlan(precision=precision, batch=1, optimizer_8bit=eight_bit)
    mb = breakdown(wl, plan, gpu=True)
    assert mb is not None and mb.lower_bytes is not None
    assert (mb.lower_bytes - mb.runtime_bytes) / N == expected


def test_total_is_what_is_live_at_the_peak() -> None:
    wl = _wl(activation_bytes_per_sample=1e6)
    mb = breakdown(wl, MemoryPlan(precision=Precision.FP32, batch=8), gpu=True)
    assert mb is not None and mb.total_bytes is not None
    parts = [
        mb.weights_bytes,
        mb.gradients_bytes,
        mb.optimizer_bytes,
        mb.activations_bytes or 0,
        mb.temporaries_bytes,
        mb.runtime_bytes,
    ]
    assert mb.total_bytes == sum(parts)
    assert mb.activations_bytes == 8_000_000


def test_optimizer_step_is_the_peak_when_activations_are_small() -> None:
    # Without activations the step holds weights, gradients, state and foreach AdamW's
    # fp32 list of denominators (4 bytes a parameter on a GPU).
    mb = breakdown(_wl(), MemoryPlan(precision=Precision.FP32, batch=1), gpu=True)
    assert mb is not None
    assert mb.temporaries_bytes == 4 * N
    assert mb.total_bytes == 20 * N + mb.runtime_bytes


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
    one_layer = s * b * h * (34 + 5 * heads * s / h)
    assert bf16.activations_bytes == int(one_layer * layers)
    fp32 = breakdown(wl, MemoryPlan(precision=Precision.FP32, batch=b), gpu=True)
    assert fp32 is not None and fp32.activations_bytes == int(2 * one_layer * layers)
    ckpt = breakdown(
        wl, MemoryPlan(precision=Precision.BF16, batch=b, checkpointing=True), gpu=True
    )
    # Full recomputation keeps each layer's input (2·s·b·h) and recomputes one layer.
    assert ckpt is not None and ckpt.activations_bytes == int(2 * s * b * h * layers + one_layer)


def test_decoders_add_the_fp32_logits() -> None:
    s, b, h, layers = 256, 2, 512, 4
    dec = _wl(
        kind=ModelKind.DECODER,
        seq_len=s,
        hidden=h,
        layers=layers,
        heads=8,
        activation_bytes_per_sample=None,
    )
    enc = dec.model_copy(update={"kind": ModelKind.ENCODER})
    plan = MemoryPlan(precision=Precision.BF16, batch=b)
    d, e = breakdown(dec, plan, gpu=True), breakdown(enc, plan, gpu=True)
    assert d is not None and e is not None
    assert (d.activations_bytes or 0) - (e.activations_bytes or 0) == 4 * s * b * 32_000


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
    assert mb.lower_bytes == mb.weights_bytes + mb.kv_cache_bytes + mb.runtime_bytes


@pytest.mark.parametrize(("shards", "heads_per_gpu"), [(1, 8), (2, 4), (8, 1), (16, 1)])
def test_tensor_parallel_splits_the_kv_cache_by_kv_heads(shards: int, heads_per_gpu: int) -> None:
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
    plan = MemoryPlan(precision=Precision.FP16, batch=b, zero_stage=3, shards=shards)
    mb = breakdown(wl, plan, gpu=True)
    assert mb is not None
    # 8 KV heads over the GPUs; past 8 GPUs each keeps one (a KV head is not split).
    assert mb.kv_cache_bytes == 2 * layers * heads_per_gpu * (h // heads) * s * b * 2
    assert mb.weights_bytes == 2 * N // shards


def test_zero_stages_divide_state_gradients_weights() -> None:
    wl = _wl()

    def lower(stage: int, n: int = 4) -> int:
        mb = breakdown(
            wl,
            MemoryPlan(precision=Precision.BF16, batch=1, zero_stage=stage, shards=n),
            gpu=True,
        )
        assert mb is not None and mb.lower_bytes is not None
        return mb.lower_bytes - mb.runtime_bytes

    # ZeRO paper, mixed-precision Adam (K = 12): 2Ψ + 2Ψ + KΨ/n, 2Ψ + (2 + K)Ψ/n,
    # (2 + 2 + K)Ψ/n.
    assert lower(0) == 16 * N
    assert lower(1) == 2 * N + 2 * N + 12 * N // 4
    assert lower(2) == 2 * N + 14 * N // 4
    assert lower(3) == 16 * N // 4


def test_offload_leaves_16_bit_weights_and_gradients() -> None:
    mb = breakdown(_wl(), MemoryPlan(precision=Precision.BF16, batch=1, offload=True), gpu=True)
    assert mb is not None and mb.lower_bytes == 4 * N + mb.runtime_bytes


def test_unknown_params_stay_unknown() -> None:
    assert (
        breakdown(_wl(params=None), MemoryPlan(precision=Precision.FP32, batch=1), gpu=True) is None
    )
    assert fits(None, 10**9) is None and fits(10**9, None) is None


def test_fit_keeps_ten_percent_headroom() -> None:
    assert fits(89, 100) is True
    assert fits(91, 100) is False
