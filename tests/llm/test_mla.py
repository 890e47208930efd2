"""Multi-head latent attention (DeepSeek-V3, Kimi-K2) in the serving step and in LoRA."""

from __future__ import annotations

import pytest

from hwadvisor.catalog import find_device
from hwadvisor.llm import DeviceSpec, find_engine, find_format, lora_params, resolve_model
from hwadvisor.llm.serving import decode_step_seconds
from hwadvisor.llm.step import prefill_flops_per_key

MLA_MODELS = ("deepseek-v3", "kimi-k2")


@pytest.mark.parametrize("model", MLA_MODELS)
def test_decode_scores_each_key_in_the_absorbed_form(model: str) -> None:
    arch = resolve_model(model).arch
    device = DeviceSpec.from_catalog(find_device("h200"))
    engine, fp8 = find_engine("sglang"), find_format("fp8")
    batch, short, long = 64, 2_048, 34_816

    def step(context: int) -> float:
        seconds, _ = decode_step_seconds(arch, fp8, engine, device, context=context,
                                         batch=batch, tp=8)  # fmt: skip
        return seconds

    # What 32k more keys per sequence add: the latent's bytes or the absorbed FLOPs
    # (each head against the 512 + 64 wide latent key and the 512 wide latent value).
    keys = batch * arch.layers * (long - short)
    absorbed = 2 * arch.heads * (2 * 512 + 64)
    flops_s = keys * absorbed / (device.flops("bf16")[0] * device.gemm_fraction * 8)
    bytes_s = keys * (512 + 64) * 2 * engine.kv_passes / (device.effective_bandwidth * 8)
    assert step(long) - step(short) == pytest.approx(max(flops_s, bytes_s), rel=1e-6)
    # The per-head form (4 x heads x 192) would be 2.8x fewer FLOPs a key.
    assert absorbed > 2.5 * 4 * arch.heads * arch.head_dim


@pytest.mark.parametrize("model", MLA_MODELS)
def test_a_prompt_attends_in_the_expanded_form(model: str) -> None:
    arch = resolve_model(model).arch
    # Per head: scores over the 128 + 64 wide key, values 128 wide.
    assert prefill_flops_per_key(arch) == 2 * arch.heads * (192 + 128)
    assert prefill_flops_per_key(arch) < arch.attention_flops_per_key


def test_a_per_head_model_attends_alike_in_prompt_and_decode() -> None:
    arch = resolve_model("llama-3-8b").arch
    assert prefill_flops_per_key(arch) == arch.attention_flops_per_key == 4 * 32 * 128


@pytest.mark.parametrize(
    ("model", "heads"),
    [("deepseek-v3", 128), ("kimi-k2", 64)],
)
def test_lora_adapts_the_latent_projections_not_q_k_v(model: str, heads: int) -> None:
    arch = resolve_model(model).arch
    h = 7168
    # modeling_deepseek.py: q_a (h -> 1536), q_b (1536 -> heads x 192),
    # kv_a_proj_with_mqa (h -> 512 + 64), kv_b (512 -> heads x (128 + 128)), o (heads x 128 -> h).
    widths = (h + 1536) + (1536 + heads * 192) + (h + 576) + (512 + heads * 256) + (heads * 128 + h)
    assert lora_params(arch, 16) == arch.layers * 16 * widths
