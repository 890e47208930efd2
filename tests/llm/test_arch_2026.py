"""Architectures of 2025-26 from their published configs: totals, KV, formats, bounds."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.llm_shape import arch_of, shape_of
from hwadvisor.llm import (
    arch_from_dict,
    arch_from_folder,
    default_format,
    find_format,
    resolve_model,
)
from hwadvisor.llm.config import quant_config
from hwadvisor.llm.resolve import ResolvedModel

from .conftest import write_config
from .fake_hub import CONFIGS

GIB = 1024**3


def _config(repo: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CONFIGS / f"{repo.replace('/', '--')}.json").read_text())
    return data


#: Published totals and active parameters (billions) and where they are stated. Active
#: counts of gpt-oss and DeepSeek-V2-Lite leave out the input embedding, as their cards do.
PUBLISHED = [
    ("deepseek-ai/DeepSeek-V3", 671, 37, 0.02, False),  # tech report arXiv:2412.19437
    ("moonshotai/Kimi-K2-Instruct", 1026, 32, 0.03, False),  # model card: 1 T total, 32 B active
    ("deepseek-ai/DeepSeek-V2-Lite", 15.7, 2.4, 0.03, True),  # model card: 15.7 B, 2.4 B active
    ("openai/gpt-oss-20b", 20.91, 3.61, 0.005, True),  # model card table
    ("openai/gpt-oss-120b", 116.83, 5.13, 0.005, True),  # model card table
    ("meta-llama/Llama-4-Scout-17B-16E-Instruct", 107.8, 17, 0.02, False),  # HF: 108 B text
    ("meta-llama/Llama-4-Maverick-17B-128E-Instruct", 400, 17, 0.02, False),  # model card
    ("Qwen/Qwen3-30B-A3B", 30.5, 3.3, 0.02, False),  # model card
    ("Qwen/Qwen3-235B-A22B", 235, 22, 0.02, False),  # model card
    ("Qwen/Qwen3-8B", 8.2, 8.2, 0.01, False),  # model card
    ("google/gemma-3-27b-it", 27, 27, 0.02, False),  # text model of Gemma 3 27B
    ("mistralai/Mistral-Small-24B-Instruct-2501", 23.6, 23.6, 0.01, False),
    ("microsoft/phi-4", 14.7, 14.7, 0.01, False),  # arXiv:2412.08905: 14 B
    ("meta-llama/Llama-3.3-70B-Instruct", 70.6, 70.6, 0.01, False),
    ("meta-llama/Llama-3.2-3B-Instruct", 3.21, 3.21, 0.01, False),
]


@pytest.mark.parametrize(("repo", "total", "active", "rel", "no_embedding"), PUBLISHED)
def test_published_totals_and_active_parameters(
    repo: str, total: float, active: float, rel: float, no_embedding: bool
) -> None:
    arch = arch_from_dict(_config(repo))
    assert arch.params_total / 1e9 == pytest.approx(total, rel=rel)
    counted = arch.params_active - (arch.embedding_params if no_embedding else 0)
    assert counted / 1e9 == pytest.approx(active, rel=max(rel, 0.05))


def test_mla_caches_the_latent_and_counts_flops_absorbed() -> None:
    arch = arch_from_dict(_config("deepseek-ai/DeepSeek-V3"))
    assert arch.is_mla and arch.kv_heads == 1
    # (512 + 64) x 61 layers x 2 bytes = 70,272 B = 68.6 KiB a token (issue 43: ~69 KiB)
    assert arch.kv_bytes_per_token() == (512 + 64) * 61 * 2
    per_head_kv = 2 * 128 * (128 + 64) * 61 * 2  # what per-head K and V would cost
    assert per_head_kv / arch.kv_bytes_per_token() > 20
    assert arch.attention_flops_per_key == 2 * 128 * (2 * 512 + 64)
    assert arch.dense_layers == 3 and arch.shared_experts == 1 and arch.moe_layers == 58
    # The MTP module is apart: 671 B served, 14 B more in the Hub copy with its own
    # embedding and head (DeepSeek-V3 README: 685 B = 671 B + 14 B).
    assert (arch.params_mtp + 2 * arch.embedding_params) / 1e9 == pytest.approx(14, rel=0.05)
    assert default_format(arch).id == "fp8"


def test_gpt_oss_is_mxfp4_experts_with_16_bit_attention_and_fits_its_gpus() -> None:
    small = arch_from_dict(_config("openai/gpt-oss-20b"))
    big = arch_from_dict(_config("openai/gpt-oss-120b"))
    fmt = default_format(small)
    assert fmt.id == "mxfp4" and fmt.bits_per_weight == 4.25
    assert set(small.quantization.skip) == {"attention", "router", "embedding", "head"}  # type: ignore[union-attr]
    # Model card: checkpoints of 12.8 GiB and 60.8 GiB
    assert fmt.weight_bytes(small) / GIB == pytest.approx(12.8, rel=0.01)
    assert fmt.weight_bytes(big) / GIB == pytest.approx(60.8, rel=0.01)
    assert fmt.weight_bytes(small) < 16e9 and fmt.weight_bytes(big) < 80e9
    # --quant overrides: all of it MXFP4 is smaller still; bf16 is the 39 GiB of issue 43
    assert find_format("bf16").weight_bytes(small) / GIB == pytest.approx(38.9, rel=0.01)
    assert small.attention_sinks and small.sliding_window == 128
    assert small.sliding_layers[:4] == (True, False, True, False)
    assert small.kv_cache_bytes(8192) < small.kv_bytes_per_token() * 8192 * 0.51


def test_llama4_chunked_layers_and_interleaved_moe() -> None:
    scout = arch_from_dict(_config("meta-llama/Llama-4-Scout-17B-16E-Instruct"))
    maverick = arch_from_dict(_config("meta-llama/Llama-4-Maverick-17B-128E-Instruct"))
    assert scout.chunked_attention and scout.sliding_window == 8192
    assert scout.sliding_layers[:4] == (True, True, True, False)  # every 4th layer global
    assert scout.moe_layers == 48 and maverick.moe_layers == 24 and scout.shared_experts == 1
    assert scout.max_context == 10_485_760


def test_gemma3_five_local_to_one_global() -> None:
    arch = arch_from_dict(_config("google/gemma-3-27b-it"))
    assert arch.sliding_layers[:6] == (True,) * 5 + (False,)
    assert sum(arch.sliding_layers) == 52 and arch.sliding_window == 1024


def test_llama3_family_reads_its_128k_context() -> None:
    for repo in ("meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Llama-3.3-70B-Instruct"):
        assert arch_from_dict(_config(repo)).max_context == 131_072


@pytest.mark.parametrize(
    ("raw", "fmt", "skip"),
    [
        ({"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}, "fp8", ()),
        ({"quant_method": "awq", "bits": 4, "group_size": 128}, "awq", ()),
        ({"quant_method": "gptq", "bits": 8}, None, ()),
        ({"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}, "nf4", ()),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4"}, "nvfp4", ()),
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head"]}, "mxfp4", ("head",)),
    ],
)
def test_quantization_configs_map_to_formats(
    raw: dict[str, Any], fmt: str | None, skip: tuple[str, ...]
) -> None:
    q = quant_config(raw)
    assert q is not None and q.format_id == fmt and q.skip == skip


def test_the_workload_copy_keeps_the_new_fields() -> None:
    resolved = resolve_model("deepseek-v3")
    back = arch_of(shape_of(resolved))
    assert back.kv_bytes_per_token() == resolved.arch.kv_bytes_per_token()
    assert back.params_total == resolved.arch.params_total
    oss = resolve_model("gpt-oss-20b").arch
    again = arch_of(shape_of(ResolvedModel(oss, "catalog")))
    assert default_format(again).weight_bytes(again) == default_format(oss).weight_bytes(oss)


# -- bounds ---------------------------------------------------------------------------

BASE = {
    "model_type": "llama",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "vocab_size": 100,
}


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"num_hidden_layers": 10**15, "sliding_window": 4096}, "num_hidden_layers"),
        ({"vocab_size": 10**8}, "vocab_size"),
        ({"max_position_embeddings": 10**9}, "max_position_embeddings"),
        ({"hidden_size": -64}, "hidden_size"),
        ({"num_local_experts": 10**6, "num_experts_per_tok": 2}, "num_local_experts"),
        ({"sliding_window": 1e300}, "sliding_window"),
    ],
)
def test_out_of_range_numbers_are_one_line_naming_file_and_field(
    tmp_path: Path, change: dict[str, Any], field: str
) -> None:
    folder = write_config(tmp_path / "m", {**BASE, **change})
    start = time.perf_counter()
    with pytest.raises(UsageError) as err:
        arch_from_folder(folder)
    assert time.perf_counter() - start < 2
    line = err.value.line()
    assert field in line and "config.json" in line and "\n" not in line and err.value.exit_code == 2


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "1" * 5000])
def test_non_finite_and_endless_numbers_are_refused(tmp_path: Path, text: str) -> None:
    raw = json.dumps(BASE).replace('"hidden_size": 64', f'"hidden_size": {text}')
    folder = write_config(tmp_path / "m", raw)
    with pytest.raises(UsageError) as err:
        arch_from_folder(folder)
    assert "\n" not in err.value.line()


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "num_hidden_layers",
                "hidden_size",
                "num_attention_heads",
                "vocab_size",
                "num_key_value_heads",
                "sliding_window",
                "kv_lora_rank",
                "qk_rope_head_dim",
                "qk_nope_head_dim",
                "n_routed_experts",
                "num_experts_per_tok",
                "first_k_dense_replace",
                "head_dim",
                "max_position_embeddings",
            ]
        ),
        st.one_of(st.integers(-5, 10**20), st.floats(allow_nan=True), st.none(), st.booleans()),
    )
)
def test_any_numbers_give_an_arch_or_one_usage_error(numbers: dict[str, Any]) -> None:
    try:
        arch = arch_from_dict({**BASE, **numbers})
    except UsageError as exc:
        assert "\n" not in exc.line()
        return
    assert math.isfinite(arch.kv_bytes_per_token()) and arch.params_total > 0
