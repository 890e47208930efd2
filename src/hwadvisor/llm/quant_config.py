"""A checkpoint's ``quantization_config`` -> :class:`QuantConfig` (its weight format).

The methods a checkpoint on the Hub states, and the hwadvisor format each maps to:

- ``mxfp4`` (gpt-oss): MXFP4 experts; ``modules_to_not_convert`` names what stays bf16
  (attention, router, embedding, lm_head) -> ``mxfp4`` with those parts skipped.
- ``fp8`` (DeepSeek-V3, Kimi-K2, Qwen3-FP8: ``fmt: e4m3``, ``weight_block_size:
  [128, 128]``): one fp32 scale per 128 x 128 block adds 32/16384 = 0.002 bits a weight,
  so the block-wise checkpoint is priced as ``fp8``.
- ``awq`` / ``gptq`` at 4 bits, ``bitsandbytes`` NF4 and int8.
- ``compressed-tensors`` (llm-compressor) and ``modelopt`` (NVIDIA ModelOpt): FP8, NVFP4
  and 4-bit integer weights.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.llm.arch import QuantConfig
from hwadvisor.llm.bounds import optional_whole

#: ``modules_to_not_convert`` / ``ignore`` patterns -> the parts they keep in 16 bits.
_SKIP_PATTERNS = (
    ("self_attn", "attention"),
    ("attn", "attention"),
    ("router", "router"),
    ("mlp.gate", "router"),
    ("embed_tokens", "embedding"),
    ("lm_head", "head"),
    ("shared_expert", "shared_experts"),
)


def _skipped(raw: dict[str, Any]) -> tuple[str, ...]:
    """The parts a checkpoint leaves unquantized, from its module patterns."""
    patterns = raw.get("modules_to_not_convert") or raw.get("ignore") or []
    if not isinstance(patterns, list):
        return ()
    parts: set[str] = set()
    for pattern in patterns[:1000]:  # a config is a few KiB; more is not a config
        text = str(pattern)
        for needle, part in _SKIP_PATTERNS:
            if needle in text and not (part == "router" and "gate_proj" in text):
                parts.add(part)
                break
    return tuple(sorted(parts))


def _compressed_tensors(raw: dict[str, Any]) -> str | None:
    """The format of an llm-compressor checkpoint: its weights' bits and type."""
    fmt = str(raw.get("format") or "").lower()
    if "nvfp4" in fmt:
        return "nvfp4"
    groups = raw.get("config_groups")
    if not isinstance(groups, dict):
        return None
    for group in list(groups.values())[:16]:
        weights = group.get("weights") if isinstance(group, dict) else None
        if not isinstance(weights, dict):
            continue
        bits, kind = weights.get("num_bits"), str(weights.get("type") or "").lower()
        if bits == 8 and kind == "float":
            return "fp8"
        if bits == 4 and kind == "float":
            return "nvfp4"
        if bits == 4 and kind == "int":
            return "gptq"
    return None


def _format(method: str, raw: dict[str, Any], bits: int | None) -> tuple[str | None, int | None]:
    """The format id a method names, and its bits."""
    if method == "mxfp4":
        return "mxfp4", 4
    if method in ("fp8", "fbgemm_fp8"):
        return "fp8", 8
    if method == "modelopt":
        algo = str(raw.get("quant_algo") or "").upper()
        return {"FP8": ("fp8", 8), "NVFP4": ("nvfp4", 4)}.get(algo, (None, bits))
    if method == "compressed-tensors":
        fmt = _compressed_tensors(raw)
        return fmt, {"fp8": 8, "nvfp4": 4, "gptq": 4}.get(fmt or "", bits)
    if method == "bitsandbytes":
        if raw.get("load_in_4bit"):
            nf4 = str(raw.get("bnb_4bit_quant_type", "fp4")).lower() == "nf4"
            return ("nf4" if nf4 else None), 4
        if raw.get("load_in_8bit"):
            return "int8", 8
    if method in ("awq", "gptq"):
        # 2/3/8-bit AWQ/GPTQ are not the 4-bit format priced here
        return (method if bits in (None, 4) else None), bits
    return None, bits


def quant_config(raw: Any, where: str = "config.json") -> QuantConfig | None:
    """The ``quantization_config`` of a checkpoint, mapped to a format id where known."""
    if not isinstance(raw, dict):
        return None
    method = str(raw.get("quant_method") or ("bitsandbytes" if "load_in_4bit" in raw else "?"))
    method = method.lower()[:64]
    bits_raw = raw.get("bits") if raw.get("bits") is not None else raw.get("w_bit")
    group_raw = (
        raw.get("group_size") if raw.get("group_size") is not None else raw.get("q_group_size")
    )
    bits = optional_whole(bits_raw, "quantization_config.bits", where, "bits")
    group = (
        optional_whole(group_raw, "quantization_config.group_size", where, "width", minimum=-1)
        if not isinstance(group_raw, bool)
        else None
    )
    fmt, bits = _format(method, raw, bits)
    return QuantConfig(
        method=method,
        bits=bits,
        group_size=group if group and group > 0 else None,
        format_id=fmt,
        skip=_skipped(raw),
    )
