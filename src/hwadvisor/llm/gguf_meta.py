"""An :class:`LlmArch` from a GGUF file's metadata (``{arch}.block_count`` and friends).

GGUF stores the shape under keys named for the architecture (the GGUF specification,
ggml-org/ggml docs/gguf.md): ``llama.block_count``, ``llama.embedding_length``,
``llama.attention.head_count``, ``llama.attention.head_count_kv``,
``llama.feed_forward_length``, ``llama.context_length``, ``llama.expert_count``,
``llama.expert_used_count``, ``llama.attention.sliding_window``, and the vocabulary as
``tokenizer.ggml.tokens``. Whether the output matrix is tied shows as the absence of an
``output.weight`` tensor.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch, QuantConfig
from hwadvisor.llm.weights import open_gguf

#: general.file_type values (llama_ftype) -> hwadvisor format ids.
FILE_TYPES = {0: "fp32", 1: "fp16", 2: "q4_0", 7: "q8_0", 15: "q4_k_m", 32: "bf16"}


def _value(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return None
    try:
        return field.contents()
    except Exception:  # a field the reader cannot decode counts as absent
        return None


def _count(reader: Any, key: str, where: str, *, required: bool = True) -> int | None:
    value = _value(reader, key)
    if isinstance(value, list):  # per-layer arrays (some hybrids): the largest entry
        value = max(value) if value else None
    if value is None:
        if required:
            raise UsageError(f"GGUF metadata lacks {key}", where=where)
        return None
    if not isinstance(value, (int, float)) or int(value) <= 0:
        raise UsageError(f"GGUF metadata {key} is not a positive number", where=where)
    return int(value)


def arch_from_gguf(path: Path) -> LlmArch:
    """The shape a GGUF file states, with the quant format its file_type names."""
    where = str(path)
    reader = open_gguf(path)
    arch = _value(reader, "general.architecture")
    if not isinstance(arch, str) or not arch:
        raise UsageError("GGUF metadata lacks general.architecture", where=where)
    layers = _count(reader, f"{arch}.block_count", where)
    hidden = _count(reader, f"{arch}.embedding_length", where)
    heads = _count(reader, f"{arch}.attention.head_count", where)
    assert layers is not None and hidden is not None and heads is not None
    kv = _count(reader, f"{arch}.attention.head_count_kv", where, required=False) or heads
    ffn = _count(reader, f"{arch}.feed_forward_length", where, required=False) or 4 * hidden
    head_dim = (
        _count(reader, f"{arch}.attention.key_length", where, required=False) or hidden // heads
    )
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    vocab = len(tokens.data) if tokens is not None else None
    names = {t.name for t in reader.tensors}
    if not vocab:
        embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
        vocab = int(max(embd.shape)) if embd is not None else None
    if not vocab:
        raise UsageError("GGUF file states no vocabulary (tokenizer.ggml.tokens)", where=where)
    experts = _count(reader, f"{arch}.expert_count", where, required=False) or 1
    used = _count(reader, f"{arch}.expert_used_count", where, required=False) or 1
    window = _count(reader, f"{arch}.attention.sliding_window", where, required=False)
    ftype = _value(reader, "general.file_type")
    fmt = FILE_TYPES.get(int(ftype)) if isinstance(ftype, int) else None
    return LlmArch(
        name=str(_value(reader, "general.name") or path.stem),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv,
        head_dim=head_dim,
        intermediate=ffn,
        vocab=vocab,
        tied_embeddings="output.weight" not in names,
        gated_mlp=arch not in {"gpt2", "gptneox", "falcon", "bloom", "phi2", "starcoder"},
        attention_bias="blk.0.attn_q.bias" in names,
        norms_per_layer=4 if arch in {"gemma2", "gemma3"} else 2,
        experts=experts,
        experts_per_token=min(used, experts),
        sliding_window=window,
        sliding_layers=_sliding_layers(arch, layers) if window else (),
        max_context=_count(reader, f"{arch}.context_length", where, required=False),
        dtype="float16",
        quantization=QuantConfig(method="gguf", format_id=fmt) if fmt else None,
        source=where,
    )


def _sliding_layers(arch: str, layers: int) -> tuple[bool, ...]:
    if arch == "gemma2":
        return tuple(i % 2 == 0 for i in range(layers))
    if arch == "gemma3":
        return tuple((i + 1) % 6 != 0 for i in range(layers))
    return (True,) * layers
