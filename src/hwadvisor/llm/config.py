"""An :class:`LlmArch` from a Hugging Face ``config.json`` (a dict, a file or a folder).

Reads the keys the common decoder families use (llama, mistral, mixtral, qwen2/3 and their
MoE, phi3, gemma2/3) and those of 2025-26: multi-head latent attention and shared experts
after dense first layers (deepseek_v2/v3, Kimi-K2: ``kv_lora_rank``, ``n_shared_experts``,
``first_k_dense_replace``, ``num_nextn_predict_layers``), gpt-oss (attention sinks,
alternating 128-token windows, MXFP4 experts) and Llama-4 (MoE interleaved with dense
layers, chunked attention on its rope layers). Every number passes the bounds of
:mod:`hwadvisor.llm.bounds` before it is used. With ``transformers`` installed a folder is
read through ``AutoConfig.from_pretrained`` (which fills each family's defaults) once the
file's own numbers have passed those bounds; without it, or for a model type it does not
know, the JSON is read as it stands with the same family defaults applied here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm._data import has_module, optional_module
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.bounds import optional_whole, whole
from hwadvisor.llm.quant_config import quant_config

__all__ = ["arch_from_dict", "arch_from_folder", "quant_config", "read_config_json"]

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

#: Each field: the keys that spell it, and the bound it is held to (bounds.LIMITS).
_KEYS = {
    "layers": ("num_hidden_layers", "n_layer", "num_layers"),
    "hidden": ("hidden_size", "n_embd", "d_model"),
    "heads": ("num_attention_heads", "n_head"),
    "intermediate": ("intermediate_size", "ffn_dim", "n_inner"),
    "experts": ("num_local_experts", "num_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "experts_per_token", "moe_top_k", "top_k"),
    "max_context": ("max_position_embeddings", "n_positions", "max_sequence_length"),
}
_KIND = {
    "layers": "layers",
    "hidden": "width",
    "heads": "heads",
    "intermediate": "width",
    "experts": "experts",
    "experts_per_token": "experts",
    "max_context": "context",
}


def _first(cfg: dict[str, Any], field: str) -> Any:
    for key in _KEYS[field]:
        if cfg.get(key) is not None:
            return cfg[key]
    return None


def _key(cfg: dict[str, Any], field: str) -> str:
    """The key that spells ``field`` in ``cfg`` (for messages)."""
    return next((k for k in _KEYS[field] if cfg.get(k) is not None), _KEYS[field][0])


def _get(cfg: dict[str, Any], field: str, where: str) -> int | None:
    """``field`` bounded, or None when absent."""
    return optional_whole(_first(cfg, field), _key(cfg, field), where, _KIND[field])


def _sliding(
    cfg: dict[str, Any], model_type: str, layers: int, where: str
) -> tuple[int | None, tuple[bool, ...]]:
    """The sliding window (or Llama-4 chunk) and which layers use it (empty: none)."""
    chunk = optional_whole(
        cfg.get("attention_chunk_size"), "attention_chunk_size", where, "context"
    )
    if chunk is not None and model_type.startswith("llama4"):
        return chunk, _chunked_layers(cfg, layers, where)
    raw = cfg.get("sliding_window")
    if raw is None or raw is False or cfg.get("use_sliding_window") is False:
        return None, ()  # Qwen2 states a window it does not use
    window = whole(raw, "sliding_window", where, "context")
    types = cfg.get("layer_types")
    if isinstance(types, list) and len(types) == layers:
        return window, tuple(str(t) == "sliding_attention" for t in types)
    pattern = optional_whole(
        cfg.get("sliding_window_pattern"), "sliding_window_pattern", where, "layers"
    )
    if pattern is not None and pattern > 1:  # Gemma-3: every pattern-th layer is global
        return window, tuple((i + 1) % pattern != 0 for i in range(layers))
    if model_type in {"gemma2", "gpt_oss"}:  # sliding, global, sliding, ... from layer 0
        return window, tuple(i % 2 == 0 for i in range(layers))
    if model_type in {"qwen2", "qwen2_moe", "qwen3", "qwen3_moe"}:
        first = optional_whole(
            cfg.get("max_window_layers"), "max_window_layers", where, "layers", minimum=0
        )
        return window, tuple(i >= (first or 0) for i in range(layers))
    return window, (True,) * layers


def _chunked_layers(cfg: dict[str, Any], layers: int, where: str) -> tuple[bool, ...]:
    """Llama-4: the rope layers attend within chunks, every ``no_rope_layer_interval``-th
    layer (4) globally without rope (``no_rope_layers``: 1 where rope, so chunked)."""
    flags = cfg.get("no_rope_layers")
    if isinstance(flags, list) and len(flags) == layers:
        return tuple(bool(f) for f in flags)
    interval = optional_whole(
        cfg.get("no_rope_layer_interval"), "no_rope_layer_interval", where, "layers"
    )
    step = interval or 4
    return tuple((i + 1) % step != 0 for i in range(layers))


def arch_from_dict(cfg: Any, *, name: str = "model", where: str = "config.json") -> LlmArch:
    """The architecture a config dict describes; a config lacking a field is a UsageError."""
    if not isinstance(cfg, dict):
        raise UsageError("config.json must hold a JSON object", where=where)
    cfg = _text_config(cfg)
    model_type = str(cfg.get("model_type") or "").lower()
    sizes = _sizes(cfg, where)
    if cfg.get("vocab_size") is None:
        raise UsageError("config lacks vocab_size", where=where)
    vocab = whole(cfg["vocab_size"], "vocab_size", where, "vocab")
    mla = _mla(cfg, where)
    kv_heads, head_dim = _attention(cfg, sizes["hidden"], sizes["heads"], where)
    if mla:
        kv_heads, head_dim = 1, mla["head_dim"]
    window, sliding = _sliding(cfg, model_type, sizes["layers"], where)
    moe = _experts(cfg, model_type, sizes["layers"], where)
    tied = cfg.get("tie_word_embeddings")
    max_ctx = _get(cfg, "max_context", where)
    return LlmArch(
        name=name,
        layers=sizes["layers"],
        hidden=sizes["hidden"],
        heads=sizes["heads"],
        kv_heads=kv_heads,
        head_dim=head_dim,
        intermediate=moe.pop("dense_intermediate", None) or sizes["intermediate"],
        vocab=vocab,
        tied_embeddings=bool(model_type in _TIED_BY_DEFAULT if tied is None else tied),
        gated_mlp=model_type not in _PLAIN_MLP,
        attention_bias=bool(cfg.get("attention_bias") or model_type in _QKV_BIAS),
        norms_per_layer=4 if model_type in _FOUR_NORMS else 2,
        sliding_window=window,
        sliding_layers=sliding,
        max_context=max_ctx,
        dtype=str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16").removeprefix("torch."),
        quantization=quant_config(cfg.get("quantization_config"), where),
        source=where,
        q_lora_rank=mla.get("q_lora_rank"),
        kv_lora_rank=mla.get("kv_lora_rank"),
        qk_rope_head_dim=mla.get("qk_rope_head_dim"),
        v_head_dim=mla.get("v_head_dim"),
        attention_sinks=model_type == "gpt_oss",
        chunked_attention=bool(sliding) and model_type.startswith("llama4"),
        **moe,
    )


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """A multimodal config's language model (its ``text_config``, with the checkpoint's
    quantization), else ``cfg`` itself."""
    if "hidden_size" not in cfg and isinstance(cfg.get("text_config"), dict):
        quant = cfg["text_config"].get("quantization_config") or cfg.get("quantization_config")
        return {**cfg["text_config"], "quantization_config": quant}
    return cfg


def _sizes(cfg: dict[str, Any], where: str) -> dict[str, int]:
    """Layers, hidden size, heads and MLP width (4 x hidden when not given)."""
    sizes: dict[str, int] = {}
    for field in ("layers", "hidden", "heads", "intermediate"):
        value = _get(cfg, field, where)
        if value is None and field == "intermediate" and "hidden" in sizes:
            value = 4 * sizes["hidden"]
        if value is None:
            raise UsageError(f"config lacks {_KEYS[field][0]}", where=where)
        sizes[field] = value
    return sizes


def _attention(cfg: dict[str, Any], hidden: int, heads: int, where: str) -> tuple[int, int]:
    """The key/value heads (one for multi-query attention, else as many as the query
    heads unless given) and the head dimension (hidden / heads unless given)."""
    kv_raw = cfg.get("num_key_value_heads")
    kv = 1 if cfg.get("multi_query") and kv_raw is None else kv_raw or heads
    head_dim = optional_whole(cfg.get("head_dim"), "head_dim", where, "width")
    if head_dim is None and hidden % heads and not cfg.get("kv_lora_rank"):
        raise UsageError(f"hidden_size {hidden} is not a multiple of {heads} heads", where=where)
    return (
        whole(kv, "num_key_value_heads", where, "heads"),
        head_dim or max(1, hidden // heads),
    )


def _mla(cfg: dict[str, Any], where: str) -> dict[str, int]:
    """Multi-head latent attention's widths (DeepSeek-V2/V3, Kimi-K2); {} without it."""
    if cfg.get("kv_lora_rank") is None:
        return {}
    out = {
        "kv_lora_rank": whole(cfg["kv_lora_rank"], "kv_lora_rank", where, "width"),
        "qk_rope_head_dim": whole(cfg.get("qk_rope_head_dim"), "qk_rope_head_dim", where, "width"),
    }
    nope = whole(cfg.get("qk_nope_head_dim"), "qk_nope_head_dim", where, "width")
    out["head_dim"] = nope + out["qk_rope_head_dim"]
    out["v_head_dim"] = whole(cfg.get("v_head_dim") or nope, "v_head_dim", where, "width")
    q_lora = optional_whole(cfg.get("q_lora_rank"), "q_lora_rank", where, "width")
    if q_lora is not None:
        out["q_lora_rank"] = q_lora
    return out


def _experts(cfg: dict[str, Any], model_type: str, layers: int, where: str) -> dict[str, Any]:
    """A mixture of experts: experts, those each token uses, an expert's width, shared
    experts, dense first layers, the MoE interleave, the MTP modules; {} for a dense model."""
    mtp = optional_whole(
        cfg.get("num_nextn_predict_layers"), "num_nextn_predict_layers", where, "layers", minimum=0
    )
    out: dict[str, Any] = {"mtp_layers": mtp or 0}
    experts = _get(cfg, "experts", where)
    if not experts or experts == 1:
        return out
    per_token = _get(cfg, "experts_per_token", where) or 1
    if per_token > experts:
        raise UsageError(f"{per_token} experts per token of {experts}", where=where)
    width = optional_whole(
        cfg.get("moe_intermediate_size"), "moe_intermediate_size", where, "width"
    )
    out.update(experts=experts, experts_per_token=per_token, expert_intermediate=width)
    shared = optional_whole(
        cfg.get("n_shared_experts"), "n_shared_experts", where, "experts", minimum=0
    )
    shared_width = optional_whole(
        cfg.get("shared_expert_intermediate_size"),
        "shared_expert_intermediate_size",
        where,
        "width",
    )
    if shared_width:  # Qwen2-MoE: one shared expert of its own width
        out.update(shared_experts=1, shared_intermediate=shared_width)
    elif shared:
        out["shared_experts"] = shared
    dense = optional_whole(
        cfg.get("first_k_dense_replace"), "first_k_dense_replace", where, "layers", minimum=0
    )
    if dense is not None:
        out["dense_layers"] = min(dense, layers)
    step_key = next(
        (
            k
            for k in ("interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq")
            if cfg.get(k)
        ),
        None,
    )
    if step_key is not None:
        out["moe_layer_step"] = whole(cfg[step_key], step_key, where, "layers")
    if model_type.startswith("llama4"):
        # Llama-4: routed experts and one shared expert of intermediate_size each; the
        # dense layers' MLP is intermediate_size_mlp wide.
        inner = whole(cfg.get("intermediate_size"), "intermediate_size", where, "width")
        out.update(expert_intermediate=inner, shared_experts=1)
        mlp = optional_whole(
            cfg.get("intermediate_size_mlp"), "intermediate_size_mlp", where, "width"
        )
        out["dense_intermediate"] = mlp
    return out


def read_config_json(path: Path) -> dict[str, Any]:
    """The JSON object of a config.json file; unreadable or not JSON -> UsageError."""
    where = str(path)
    try:
        if not path.is_file():
            raise UsageError("config.json not found (or not a regular file)", where=where)
        if path.stat().st_size > MAX_CONFIG_BYTES:
            raise UsageError("config.json is too large to be a model config", where=where)
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"cannot read config.json: {exc}", where=where) from exc
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, a 5,000-digit number
        raise UsageError(
            "config.json is not valid JSON (or holds a number too long)", where=where
        ) from exc
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
    """The architecture of a local model folder (or a config.json path).

    The file's own numbers are read (and bounded) first: transformers builds per-layer
    lists from them, so an absurd layer count must never reach it.
    """
    path = folder / "config.json" if folder.is_dir() else folder
    raw = read_config_json(path)
    _require_shape(raw, str(path))
    own = arch_from_dict(raw, name=name or path.parent.name, where=str(path))
    cfg = _through_transformers(path.parent, raw)
    if cfg is raw:
        return own
    try:
        return arch_from_dict(cfg, name=own.name, where=str(path))
    except UsageError:
        return own  # transformers' completion is not readable: the file as it stands
