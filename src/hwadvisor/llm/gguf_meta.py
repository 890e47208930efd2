"""An :class:`LlmArch` from a GGUF file's metadata (``{arch}.block_count`` and friends).

GGUF stores the shape under keys named for the architecture (the GGUF specification,
ggml-org/ggml docs/gguf.md): ``llama.block_count``, ``llama.embedding_length``,
``llama.attention.head_count``, ``llama.attention.head_count_kv``,
``llama.feed_forward_length``, ``llama.context_length``, ``llama.expert_count``,
``llama.expert_used_count``, ``llama.attention.sliding_window``, and the vocabulary as
``tokenizer.ggml.tokens``. Whether the output matrix is tied shows as the absence of an
``output.weight`` tensor. MLA models (``deepseek2``) state ``attention.kv_lora_rank``;
MoE ones ``expert_shared_count`` and ``leading_dense_block_count``. The header is read by
:mod:`hwadvisor.llm.gguf_header`, bounded, without the tensor data.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch, QuantConfig
from hwadvisor.llm.bounds import whole
from hwadvisor.llm.gguf_header import GgufHeader, file_reader, read_header

#: general.file_type values (llama_ftype, llama.cpp include/llama.h) -> format ids.
FILE_TYPES = {
    0: "fp32",
    1: "fp16",
    2: "q4_0",
    7: "q8_0",
    12: "q3_k_m",
    15: "q4_k_m",
    17: "q5_k_m",
    18: "q6_k",
    30: "iq4_xs",
    32: "bf16",
    38: "mxfp4",
}
_KIND = {
    "block_count": "layers",
    "embedding_length": "width",
    "attention.head_count": "heads",
    "attention.head_count_kv": "heads",
    "feed_forward_length": "width",
    "expert_feed_forward_length": "width",
    "attention.key_length": "width",
    "expert_count": "experts",
    "expert_used_count": "experts",
    "expert_shared_count": "experts",
    "leading_dense_block_count": "layers",
    "attention.sliding_window": "context",
    "context_length": "context",
    "attention.kv_lora_rank": "width",
    "attention.q_lora_rank": "width",
    "rope.dimension_count": "width",
    "nextn_predict_layers": "layers",
}


def read_gguf(path: Path) -> GgufHeader:
    """The header of a local GGUF file (a regular file only)."""
    if not path.is_file():
        raise UsageError("GGUF file not found (or not a regular file)", where=str(path))
    try:
        head = read_header(file_reader(path), str(path))
        size = path.stat().st_size
    except OSError as exc:
        raise UsageError(f"cannot read GGUF file: {exc.strerror or exc}", where=str(path)) from exc
    except UsageError as exc:
        raise UsageError(f"not a readable GGUF file ({exc.message})", where=str(path)) from exc
    if size < head.data_end:
        raise UsageError(
            f"not a readable GGUF file (truncated: {size:,} bytes of {head.data_end:,})",
            where=str(path),
        )
    return head


def _count(
    head: GgufHeader, arch: str, key: str, where: str, *, required: bool = False
) -> int | None:
    name = f"{arch}.{key}"
    value = head.fields.get(name)
    if isinstance(value, list):  # per-layer arrays (some hybrids): the largest entry
        value = max(value) if value else None
    if value is None:
        if required:
            raise UsageError(f"GGUF metadata lacks {name}", where=where)
        return None
    minimum = (
        0
        if key in ("leading_dense_block_count", "nextn_predict_layers", "expert_shared_count")
        else 1
    )
    return whole(value, name, where, _KIND[key], minimum=minimum)


def _vocab(head: GgufHeader, where: str) -> int:
    """The vocabulary: the tokenizer's tokens, else the token embedding's larger side."""
    vocab = head.array_lengths.get("tokenizer.ggml.tokens")
    if not vocab:
        embd = next((t for t in head.tensors if t.name == "token_embd.weight"), None)
        vocab = max(embd.dims) if embd is not None else None
    if not vocab:
        raise UsageError("GGUF file states no vocabulary (tokenizer.ggml.tokens)", where=where)
    return whole(vocab, "tokenizer.ggml.tokens", where, "vocab")


def _quantization(head: GgufHeader) -> QuantConfig | None:
    """The quant format ``general.file_type`` names, when it is one we know."""
    ftype = head.fields.get("general.file_type")
    fmt = FILE_TYPES.get(int(ftype)) if isinstance(ftype, int) else None
    return QuantConfig(method="gguf", format_id=fmt) if fmt else None


def arch_from_gguf(path: Path, header: GgufHeader | None = None) -> LlmArch:
    """The shape a GGUF file states, with the quant format its file_type names."""
    where = str(path)
    head = header or read_gguf(path)
    arch = head.fields.get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise UsageError("GGUF metadata lacks general.architecture", where=where)

    def get(key: str, required: bool = False) -> Any:
        return _count(head, arch, key, where, required=required)

    layers, hidden, heads = (
        get("block_count", True),
        get("embedding_length", True),
        get("attention.head_count", True),
    )
    names = {t.name for t in head.tensors}
    experts = get("expert_count") or 1
    window = get("attention.sliding_window")
    mla = get("attention.kv_lora_rank")
    rope = get("rope.dimension_count") if mla else None
    return LlmArch(
        name=str(head.fields.get("general.name") or path.stem)[:200],
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=1 if mla else get("attention.head_count_kv") or heads,
        head_dim=get("attention.key_length") or max(1, hidden // heads),
        intermediate=get("feed_forward_length") or 4 * hidden,
        vocab=_vocab(head, where),
        tied_embeddings="output.weight" not in names,
        gated_mlp=arch not in {"gpt2", "gptneox", "falcon", "bloom", "phi2", "starcoder"},
        attention_bias="blk.0.attn_q.bias" in names,
        norms_per_layer=4 if arch in {"gemma2", "gemma3"} else 2,
        experts=experts,
        experts_per_token=min(get("expert_used_count") or 1, experts),
        expert_intermediate=get("expert_feed_forward_length") if experts > 1 else None,
        shared_experts=(get("expert_shared_count") or 0) if experts > 1 else 0,
        dense_layers=min(get("leading_dense_block_count") or 0, layers) if experts > 1 else 0,
        sliding_window=window,
        sliding_layers=_sliding_layers(arch, layers) if window else (),
        max_context=get("context_length"),
        dtype="float16",
        quantization=_quantization(head),
        source=where,
        q_lora_rank=get("attention.q_lora_rank") if mla else None,
        kv_lora_rank=mla,
        qk_rope_head_dim=rope or (64 if mla else None),
        attention_sinks=arch == "gpt-oss",
    )


def _sliding_layers(arch: str, layers: int) -> tuple[bool, ...]:
    """Which layers slide (layers is bounded, at most 10,000)."""
    if arch in ("gemma2", "gpt-oss"):
        return tuple(i % 2 == 0 for i in range(layers))
    if arch == "gemma3":
        return tuple((i + 1) % 6 != 0 for i in range(layers))
    return (True,) * layers
