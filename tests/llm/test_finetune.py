"""Fine-tuning memory: full vs LoRA vs QLoRA, rank, targets, checkpointing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.catalog import find_device
from hwadvisor.errors import UsageError
from hwadvisor.llm import FinetuneRequest, finetune_memory, lora_params, resolve_model
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.finetune import lighter_methods

GPU24 = find_device("rtx-4090").memory_bytes
LLAMA3 = resolve_model("llama-3-8b").arch


def test_qlora_of_8b_fits_24gb_full_does_not() -> None:
    qlora = finetune_memory(LLAMA3, FinetuneRequest(method="qlora"))
    full = finetune_memory(LLAMA3, FinetuneRequest(method="full"))
    assert qlora.total_bytes < GPU24 < full.total_bytes
    assert full.optimizer_bytes == 12 * LLAMA3.params_total  # fp32 master + two moments
    assert qlora.checkpointing


def test_lora_prices_only_adapters_for_gradients_and_optimizer() -> None:
    lora = finetune_memory(LLAMA3, FinetuneRequest(method="lora", lora_rank=16))
    r = 16
    per_layer = r * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096))
    assert lora.trainable_params == 32 * per_layer == lora_params(LLAMA3, 16)
    assert lora.optimizer_bytes == 8 * lora.trainable_params
    assert lora.weights_bytes == pytest.approx(2 * LLAMA3.params_total, rel=1e-4)


def test_rank_and_targets_change_the_adapters() -> None:
    small = lora_params(LLAMA3, 8)
    assert lora_params(LLAMA3, 64) == 8 * small
    assert lora_params(LLAMA3, 8, "all-linear") > 3 * small


def test_checkpointing_visibly_changes_the_activation_term() -> None:
    off = finetune_memory(
        LLAMA3, FinetuneRequest(method="lora", seq_len=4096, gradient_checkpointing=False)
    )
    on = finetune_memory(
        LLAMA3, FinetuneRequest(method="lora", seq_len=4096, gradient_checkpointing=True)
    )
    assert on.activation_bytes < off.activation_bytes / 3
    assert on.total_bytes < off.total_bytes
    eager = finetune_memory(
        LLAMA3, FinetuneRequest(method="lora", seq_len=4096, fused_attention=False)
    )
    assert eager.activation_bytes > off.activation_bytes  # s^2 attention scores stored


def test_lighter_methods_are_lora_then_qlora() -> None:
    steps = lighter_methods(LLAMA3, FinetuneRequest(method="full"))
    assert [m.method for m in steps] == ["lora", "qlora"]
    assert steps[0].total_bytes > steps[1].total_bytes
    assert finetune_memory(LLAMA3, FinetuneRequest(method="full")).sharded_total(8) < GPU24 * 4


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(1, 96),
    hidden_heads=st.sampled_from([(512, 8), (2048, 16), (4096, 32), (8192, 64)]),
    kv_div=st.sampled_from([1, 2, 4, 8]),
    vocab=st.integers(1000, 260000),
    rank=st.integers(1, 256),
    targets=st.sampled_from(["attention", "all-linear"]),
    seq=st.integers(16, 16384),
    batch=st.integers(1, 16),
    ckpt=st.booleans(),
)
def test_qlora_never_above_lora(
    layers: int,
    hidden_heads: tuple[int, int],
    kv_div: int,
    vocab: int,
    rank: int,
    targets: str,
    seq: int,
    batch: int,
    ckpt: bool,
) -> None:
    hidden, heads = hidden_heads
    arch = LlmArch("m", layers, hidden, heads, heads // kv_div, hidden // heads, hidden * 3, vocab)
    common = {"lora_rank": rank, "target_modules": targets, "seq_len": seq, "batch_size": batch}
    lora = finetune_memory(
        arch, FinetuneRequest(method="lora", gradient_checkpointing=ckpt, **common)
    )
    qlora = finetune_memory(arch, FinetuneRequest(method="qlora", **common))
    assert qlora.total_bytes <= lora.total_bytes
    assert qlora.weights_bytes < lora.weights_bytes


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "sft"},
        {"lora_rank": 0},
        {"target_modules": "mlp"},
        {"seq_len": 0},
        {"batch_size": -1},
    ],
)
def test_bad_requests_are_usage_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        FinetuneRequest(**kwargs)  # type: ignore[arg-type]
