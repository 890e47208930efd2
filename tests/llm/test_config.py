"""config.json -> LlmArch for the common families; bad configs are one UsageError line."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.llm import arch_from_dict, arch_from_folder
from hwadvisor.llm._data import has_module

from .conftest import GEMMA2_9B, LLAMA3_8B, MISTRAL, MIXTRAL, PHI3_MINI, QWEN25_05B, write_config

FAMILIES = {
    "llama3": (LLAMA3_8B, 8_030_261_248),
    "mixtral": (MIXTRAL, 46_702_792_704),
    "mistral": (MISTRAL, 7_241_732_096),
    "qwen2": (QWEN25_05B, 494_032_768),
    "phi3": (PHI3_MINI, 3_821_079_552),
    "gemma2": (GEMMA2_9B, 9_241_705_984),
}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_plain_json_reading_gives_the_published_totals(family: str) -> None:
    cfg, total = FAMILIES[family]
    assert arch_from_dict(cfg, name=family).params_total == total


@pytest.mark.parametrize("family", list(FAMILIES))
def test_folder_reads_the_same_with_or_without_transformers(family: str, tmp_path: Path) -> None:
    cfg, total = FAMILIES[family]
    folder = write_config(tmp_path / family, cfg)
    arch = arch_from_folder(folder)
    plain = arch_from_dict(cfg, name=family)
    assert arch.params_total == total
    assert (arch.kv_heads, arch.head_dim, arch.tied_embeddings) == (
        plain.kv_heads,
        plain.head_dim,
        plain.tied_embeddings,
    )
    assert arch.kv_cache_bytes(8192) == plain.kv_cache_bytes(8192)


def test_family_details() -> None:
    qwen = arch_from_dict(QWEN25_05B)
    assert qwen.attention_bias and qwen.tied_embeddings and qwen.sliding_layers == ()
    mistral = arch_from_dict(MISTRAL)
    assert mistral.sliding_window == 4096 and all(mistral.sliding_layers)
    gemma = arch_from_dict(GEMMA2_9B)
    assert gemma.head_dim == 256 and gemma.norms_per_layer == 4 and gemma.tied_embeddings
    assert gemma.sliding_layers[:4] == (True, False, True, False)
    mixtral = arch_from_dict(MIXTRAL)
    assert mixtral.sliding_window is None and mixtral.dtype == "bfloat16"


def test_layer_types_and_quantization_config_are_read() -> None:
    cfg = {
        **LLAMA3_8B,
        "num_hidden_layers": 4,
        "sliding_window": 1024,
        "layer_types": [
            "sliding_attention",
            "full_attention",
            "sliding_attention",
            "full_attention",
        ],
        "quantization_config": {"quant_method": "awq", "bits": 4, "group_size": 128},
    }
    arch = arch_from_dict(cfg)
    assert arch.sliding_layers == (True, False, True, False)
    assert arch.quantization is not None and arch.quantization.format_id == "awq"
    bnb = arch_from_dict(
        {**LLAMA3_8B, "quantization_config": {"load_in_4bit": True, "bnb_4bit_quant_type": "nf4"}}
    )
    assert bnb.quantization is not None and bnb.quantization.format_id == "nf4"


def test_multimodal_text_config_is_used() -> None:
    arch = arch_from_dict({"model_type": "llava", "text_config": LLAMA3_8B})
    assert arch.params_total == 8_030_261_248


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "JSON object"),
        (
            '{"num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10}',
            "lacks hidden_size",
        ),
        (
            '{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2}',
            "lacks vocab_size",
        ),
        (
            '{"hidden_size": 64.5, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 9}',
            "whole number",
        ),
        (
            '{"hidden_size": 65, "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 9}',
            "multiple",
        ),
    ],
)
def test_bad_configs_are_one_line_usage_errors(tmp_path: Path, text: str, message: str) -> None:
    folder = write_config(tmp_path / "bad", text)
    with pytest.raises(UsageError, match=message) as err:
        arch_from_folder(folder)
    assert "\n" not in err.value.line() and err.value.exit_code == 2


def test_missing_config_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not found"):
        arch_from_folder(tmp_path / "config.json")


@pytest.mark.skipif(not has_module("transformers"), reason="transformers not installed")
def test_unknown_model_type_falls_back_to_the_json(tmp_path: Path) -> None:
    folder = write_config(tmp_path / "custom", {**LLAMA3_8B, "model_type": "made_up_family"})
    assert arch_from_folder(folder).params_total == 8_030_261_248
