"""Parameter counts and KV cache from a model's shape agree with the published figures."""

from __future__ import annotations

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.llm import arch_from_catalog, arch_from_dict
from hwadvisor.llm.arch import LlmArch

from .conftest import GEMMA2_9B, LLAMA3_8B, MIXTRAL

KIB = 1024


def test_llama2_7b_total_is_the_published_6_74_b() -> None:
    arch = LlmArch("llama-2-7b", 32, 4096, 32, 32, 128, 11008, 32000)
    assert arch.params_total == 6_738_415_616
    assert arch.params_active == arch.params_total


def test_llama3_8b_total_and_gqa_kv_of_128_kib_per_token() -> None:
    arch = arch_from_dict(LLAMA3_8B)
    assert arch.params_total == 8_030_261_248
    assert arch.kv_bytes_per_token() == 128 * KIB  # 2 x 32 layers x 8 KV heads x 128 x 2 B
    assert arch.kv_cache_bytes(8192) == 8192 * 128 * KIB


def test_mixtral_total_46_7_b_and_active_12_9_b() -> None:
    arch = arch_from_dict(MIXTRAL)
    assert arch.params_total == 46_702_792_704
    assert round(arch.params_active / 1e9, 1) == 12.9
    assert arch.is_moe and arch.experts == 8 and arch.experts_per_token == 2


def test_sliding_layers_hold_their_window_only() -> None:
    gemma = arch_from_dict(GEMMA2_9B)
    assert sum(gemma.sliding_layers) == 21 and gemma.sliding_layers[0]
    per_layer = gemma.kv_bytes_per_token_per_layer()
    # Below the window every layer holds every token; above it half the layers stop at 4096.
    assert gemma.kv_cache_bytes(2048) == 42 * 2048 * per_layer
    assert gemma.kv_cache_bytes(8192) == (21 * 8192 + 21 * 4096) * per_layer
    assert gemma.kv_bytes_per_token(8192) < gemma.kv_bytes_per_token()
    assert gemma.params_total == 9_241_705_984  # tied embedding, 4 norms per layer


def test_attention_flops_grow_with_context_but_sliding_caps_them() -> None:
    llama = arch_from_dict(LLAMA3_8B)
    assert llama.flops_per_token(8192) > llama.flops_per_token(16)
    assert llama.flops_per_token(1) == pytest.approx(
        2 * (llama.params_total - llama.embedding_params), rel=1e-3
    )
    mistral = llama.with_changes(sliding_window=4096, sliding_layers=(True,) * 32)
    assert mistral.flops_per_token(16384) == mistral.flops_per_token(4096)


@pytest.mark.parametrize(
    "changes",
    [
        {"layers": 0},
        {"kv_heads": 5},
        {"kv_heads": 64},
        {"experts_per_token": 3},
        {"sliding_layers": (True,)},
    ],
)
def test_impossible_shapes_are_usage_errors(changes: dict[str, object]) -> None:
    base = LlmArch("m", 2, 64, 8, 8, 8, 128, 100)
    with pytest.raises(UsageError):
        base.with_changes(**changes)


def test_negative_context_is_refused() -> None:
    with pytest.raises(UsageError):
        arch_from_dict(LLAMA3_8B).kv_cache_bytes(-1)


def test_gpt2_catalog_entry_is_not_an_llm_shape() -> None:
    from hwadvisor.catalog import find_model

    with pytest.raises(UsageError, match="not an LLM"):
        arch_from_catalog(find_model("gpt2"))
