"""An :class:`LlmArch` from a Hugging Face ``config.json`` (a dict, a file or a folder).

Reads the keys the common decoder families use (llama, mistral, mixtral, qwen2, phi3,
gemma2 and their relatives). With ``transformers`` installed a folder is read through
``AutoConfig.from_pretrained`` (which fills each family's defaults, e.g. Gemma-2's
``layer_types``); without it, or for a model type that transformers does not know, the
JSON is read as it stands with the same family defaults applied here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm._data import has_module, optional_module
from hwadvisor.llm.arch import LlmArch, QuantConfig

#: config.json files larger than this are not configs (the Hub's largest are a few KiB).
MAX_CONFIG_BYTES = 4 * 1024 * 1024

#: Families whose MLP is two matrices (up, down), not gated (gate, up, down).
_PLAIN_MLP = {"gpt2", "gpt_neox", "gptj", "opt", "phi", "falcon", "bloom", "starcoder2"}
#: Families with q/k/v biases that their config does not state.
_QKV_BIAS = {"qwen2", "qwen2_moe"}
#: Families with four norms per layer (pre/post attention, pre/post MLP).
_FOUR_NORMS = {"gemma2", "gemma3", "gemma3_text"}
#: Families that tie lm_head to the embedding unless the config says otherwise.
_TIED_BY_DEFAULT = {"gemma", "gemma2", "gemma3", "gemma3_text"}

_KEYS = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "intermediate": ("intermediate_size", "ffn_dim", "n_inner"),
    "experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "moe_top_k", "top_k"),
    "max_context": ("max_position_embeddings", "n_positions", "max_sequence_length"),
}


def _first(cfg: dict[str, Any], field: str) -> Any:
    for key in _KEYS[field]:
        if cfg.get(key) is not None:
            return cfg[key]
    return None


def _int(value: Any, field: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise UsageError(f"{field} must be a whole number, got {value!r}", where=where)
    if int(value) <= 0:
        raise UsageError(f"{field} must be positive, got {value!r}", where=where)
    return int(value)


def quant_config(raw: Any) -> QuantConfig | None:
    """The ``quantization_config`` of a checkpoint, mapped to a format id where known."""
    if not isinstance(raw, dict):
        return None
    method = str(raw.get("quant_method") or ("bitsandbytes" if "load_in_4bit" in raw else "?"))
    bits = raw.get("bits") or raw.get("w_bit")
    group = raw.get("group_size") or raw.get("q_group_size")
    fmt: str | None = {"awq": "awq", "gptq": "gptq", "fp8": "fp8"}.get(method.lower())
    if method.lower() == "bitsandbytes":
        if raw.get("load_in_4bit"):
            bits = 4
            fmt = "nf4" if str(raw.get("bnb_4bit_quant_type", "fp4")).lower() == "nf4" else None
        elif raw.get("load_in_8bit"):
            bits, fmt = 8, "int8"
    if fmt in {"awq", "gptq"} and bits not in (None, 4):
        fmt = None  # 2/3/8-bit AWQ/GPTQ are not the 4-bit format priced here
    return QuantConfig(
        method=method,
        bits=int(bits) if isinstance(bits, (int, float)) and not isinstance(bits, bool) else None,
        group_size=int(group) if isinstance(group, int) and not isinstance(group, bool) else None,
        format_id=fmt,
    )


def _sliding(
    cfg: dict[str, Any], model_type: str, layers: int
) -> tuple[int | None, tuple[bool, ...]]:
    """The sliding window and which layers use it (empty: none)."""
    window = cfg.get("sliding_window")
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        return None, ()
    if cfg.get("use_sliding_window") is False:
        return None, ()  # Qwen2 states a window it does not use
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return window, tuple(str(t) == "sliding_attention" for t in types)
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1:  # Gemma-3: every pattern-th layer is global
        return window, tuple((i + 1) % pattern != 0 for i in range(layers))
    if model_type == "gemma2":  # sliding, global, sliding, ... from layer 0
        return window, tuple(i % 2 == 0 for i in range(layers))
    if model_type in {"qwen2", "qwen2_moe"}:
        first = cfg.get("max_window_layers", 0)
        return window, tuple(i >= first for i in range(layers))
    return window, (True,) * layers


def arch_from_dict(cfg: Any, *, name: str = "model", where: str = "config.json") -> LlmArch:
    """The architecture a config dict describes; a config lacking a field is a UsageError."""
    if not isinstance(cfg, dict):
        raise UsageError("config.json must hold a JSON object", where=where)
    cfg = _text_config(cfg)
    model_type = str(cfg.get("model_type") or "").lower()
    sizes = _sizes(cfg, where)
    if cfg.get("vocab_size") is None:
        raise UsageError("config lacks vocab_size", where=where)
    vocab = _int(cfg["vocab_size"], "vocab_size", where)
    kv_heads, head_dim = _attention(cfg, sizes["hidden"], sizes["heads"], where)
    window, sliding = _sliding(cfg, model_type, sizes["layers"])
    experts, per_token, expert_intermediate = _experts(cfg, where)
    tied = cfg.get("tie_word_embeddings")
    max_ctx = _first(cfg, "max_context")
    return LlmArch(
        name=name,
        layers=sizes["layers"],
        hidden=sizes["hidden"],
        heads=sizes["heads"],
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=sizes["intermediate"],
        vocab=vocab,
        tied_embeddings=bool(model_type in _TIED_BY_DEFAULT if tied is None else tied),
        gated_mlp=model_type not in _PLAIN_MLP,
        attention_bias=bool(cfg.get("attention_bias") or model_type in _QKV_BIAS),
        norms_per_layer=4 if model_type in _FOUR_NORMS else 2,
        experts=experts,
        experts_per_token=per_token,
        expert_intermediate=expert_intermediate,
        sliding_window=window,
        sliding_layers=sliding,
        max_context=_int(max_ctx, "max_position_embeddings", where) if max_ctx else None,
        dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16").removeprefix("torch."),
        quantization=quant_config(cfg.get("quantization_config")),
        source=where,
    )


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's language model (its ``text_config``, with the checkpoint's
    quantization), else ``cfg`` itself."""
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):
        return {**cfg["text_config"], "quantization_config": cfg.get("quantization_config")}
    return cfg


def _sizes(cfg: dict[str, Any], where: str) -> dict[str, int]:
    """Layers, hidden size, heads and MLP width (4 x hidden when not given)."""
    sizes: dict[str, int] = {}
    for field in ("layers", "hidden", "heads", "intermediate"):
        raw = _first(cfg, field)
        if raw is None and field == "intermediate" and "hidden" in sizes:
            raw = 4 * sizes["hidden"]
        if raw is None:
            raise UsageError(f"config lacks {_KEYS[field][0]}", where=where)
        sizes[field] = _int(raw, _KEYS[field][0], where)
    return sizes


def _attention(cfg: dict[str, Any], hidden: int, heads: int, where: str) -> tuple[int, int]:
    """The key/value heads (one for multi-query attention, else as many as the query
    heads unless given) and the head dimension (hidden / heads unless given)."""
    kv_raw = cfg.get("num_key_value_heads")
    kv = 1 if cfg.get("multi_query") and kv_raw is None else kv_raw or heads
    head_dim_raw = cfg.get("head_dim")
    if head_dim_raw is None and hidden % heads:
        raise UsageError(f"hidden_size {hidden} is not a multiple of {heads} heads", where=where)
    return (
        _int(kv, "num_key_value_heads", where),
        _int(head_dim_raw or hidden // heads, "head_dim", where),
    )


def _experts(cfg: dict[str, Any], where: str) -> tuple[int, int, int | None]:
    """A mixture of experts: the experts, those each token uses, and an expert's MLP
    width when it differs from the dense one; (1, 1, None) for a dense model."""
    experts = _first(cfg, "experts")
    if not experts:
        return 1, 1, None
    per_token = _int(_first(cfg, "experts_per_token") or 1, "num_experts_per_tok", where)
    width = cfg.get("moe_intermediate_size")
    return (
        _int(experts, "num_local_experts", where),
        per_token,
        _int(width, "moe_intermediate_size", where) if width else None,
    )


def read_config_json(path: Path) -> dict[str, Any]:
    """The JSON object of a config.json file; unreadable or not JSON -> UsageError."""
    where = str(path)
    try:
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise UsageError("config.json is too large to be a model config", where=where)
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise UsageError("config.json not found", where=where) from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read config.json: {exc}", where=where) from exc
    except (json.JSONDecodeError, RecursionError) as exc:
        raise UsageError("config.json is not valid JSON", where=where) from exc
    if not isinstance(data, dict):
        raise UsageError("config.json must hold a JSON object", where=where)
    return data


def _through_transformers(folder: Path, raw: dict[str, Any]) -> dict[str, Any]:
    """The config as transformers completes it (class defaults), or ``raw`` if it cannot."""
    if not has_module("transformers") or "model_type" not in raw:
        return raw
    transformers = optional_module("transformers")
    try:
        config = transformers.AutoConfig.from_pretrained(str(folder), trust_remote_code=False)
        full = config.to_dict()
    except Exception:  # unknown model type, remote code: read the JSON as it stands
        return raw
    text = full.get("text_config") if "hidden_size" not in full else None
    merged = {**(text if isinstance(text, dict) else {}), **full}
    return merged if isinstance(merged, dict) else raw


def _require_shape(raw: dict[str, Any], where: str) -> None:
    """The shape keys must be the file's own: transformers would fill a missing one with
    its class default (``LlamaConfig``'s hidden_size 4096), pricing a model nobody has."""
    cfg = (
        raw
        if "hidden_size" in raw or not isinstance(raw.get("text_config"), dict)
        else raw["text_config"]
    )
    for field in ("hidden", "layers", "heads"):
        if _first(cfg, field) is None:
            raise UsageError(f"config lacks {_KEYS[field][0]}", where=where)


def arch_from_folder(folder: Path, *, name: str | None = None) -> LlmArch:
    """The architecture of a local model folder (or a config.json path)."""
    path = folder / "config.json" if folder.is_dir() else folder
    raw = read_config_json(path)
    _require_shape(raw, str(path))
    cfg = _through_transformers(path.parent, raw)
    return arch_from_dict(cfg, name=name or path.parent.name, where=str(path))
