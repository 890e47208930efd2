"""Config dicts as the Hub publishes them (trimmed to the keys that matter), and writers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

#: meta-llama/Meta-Llama-3-8B config.json (the shape keys).
LLAMA3_8B: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 8192,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
#: mistralai/Mixtral-8x7B-v0.1 config.json.
MIXTRAL: dict[str, Any] = {
    "model_type": "mixtral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
    "vocab_size": 32000,
    "max_position_embeddings": 32768,
    "sliding_window": None,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
#: mistralai/Mistral-7B-v0.1 config.json.
MISTRAL: dict[str, Any] = {
    "model_type": "mistral",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 32000,
    "sliding_window": 4096,
    "max_position_embeddings": 32768,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
#: Qwen/Qwen2.5-0.5B config.json (states a window it does not use).
QWEN25_05B: dict[str, Any] = {
    "model_type": "qwen2",
    "hidden_size": 896,
    "intermediate_size": 4864,
    "num_hidden_layers": 24,
    "num_attention_heads": 14,
    "num_key_value_heads": 2,
    "vocab_size": 151936,
    "max_position_embeddings": 32768,
    "sliding_window": 32768,
    "use_sliding_window": False,
    "max_window_layers": 24,
    "tie_word_embeddings": True,
    "torch_dtype": "bfloat16",
}
#: microsoft/Phi-3-mini-4k-instruct config.json.
PHI3_MINI: dict[str, Any] = {
    "model_type": "phi3",
    "hidden_size": 3072,
    "intermediate_size": 8192,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 32,
    "vocab_size": 32064,
    "max_position_embeddings": 4096,
    "sliding_window": 2047,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
}
#: google/gemma-2-9b config.json (no layer_types key: transformers fills it).
GEMMA2_9B: dict[str, Any] = {
    "model_type": "gemma2",
    "hidden_size": 3584,
    "intermediate_size": 14336,
    "num_hidden_layers": 42,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 256,
    "vocab_size": 256000,
    "max_position_embeddings": 8192,
    "sliding_window": 4096,
    "query_pre_attn_scalar": 256,
}


def write_config(folder: Path, cfg: dict[str, Any] | str) -> Path:
    """A model folder holding ``cfg`` as config.json (a str is written as it is)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = cfg if isinstance(cfg, str) else json.dumps(cfg)
    (folder / "config.json").write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    """A folder with the Llama-3-8B config."""
    return write_config(tmp_path / "llama3", LLAMA3_8B)
