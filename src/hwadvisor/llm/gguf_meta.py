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


def _size(reader: Any, key: str, where: str) -> int:
    """A count the shape cannot do without (a UsageError when absent)."""
    value = _count(reader, key, where)
    assert value is not None  # required: absent raised
    return value


def _optional(reader: Any, key: str, where: str) -> int | None:
    """A count the file may leave out (None), checked when present."""
    return _count(reader, key, where, required=False)


def _architecture(reader: Any, where: str) -> str:
    """``general.architecture``: the prefix of the shape's keys (``llama``)."""
    arch = _value(reader, "general.architecture")
    if not isinstance(arch, str) or not arch:
        raise UsageError("GGUF metadata lacks general.architecture", where=where)
    return arch


def _vocab(reader: Any, where: str) -> int:
    """The vocabulary: the tokenizer's tokens, else the token embedding's larger side."""
    tokens = reader.fields.get("tokenizer.ggml.tokens")
    vocab = len(tokens.data) if tokens is not None else None
    if not vocab:
        embd = next((t for t in reader.tensors if t.name == "token_embd.weight"), None)
        vocab = int(max(embd.shape)) if embd is not None else None
    if not vocab:
        raise UsageError("GGUF file states no vocabulary (tokenizer.ggml.tokens)", where=where)
    return vocab


def _quantization(reader: Any) -> QuantConfig | None:
    """The quant format ``general.file_type`` names, when it is one we know."""
    ftype = _value(reader, "general.file_type")
    fmt = FILE_TYPES.get(int(ftype)) if isinstance(ftype, int) else None
    return QuantConfig(method="gguf", format_id=fmt) if fmt else None


def arch_from_gguf(path: Path) -> LlmArch:
    """The shape a GGUF file states, with the quant format its file_type names."""
    where = str(path)
    reader = open_gguf(path)
    arch = _architecture(reader, where)
    layers = _size(reader, f"{arch}.block_count", where)
    hidden = _size(reader, f"{arch}.embedding_length", where)
    heads = _size(reader, f"{arch}.attention.head_count", where)
    kv = _optional(reader, f"{arch}.attention.head_count_kv", where) or heads
    ffn = _optional(reader, f"{arch}.feed_forward_length", where) or 4 * hidden
    head_dim = _optional(reader, f"{arch}.attention.key_length", where) or hidden // heads
    names = {t.name for t in reader.tensors}
    vocab = _vocab(reader, where)
    experts = _optional(reader, f"{arch}.expert_count", where) or 1
    used = _optional(reader, f"{arch}.expert_used_count", where) or 1
    window = _optional(reader, f"{arch}.attention.sliding_window", where)
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
        max_context=_optional(reader, f"{arch}.context_length", where),
        dtype="float16",
        quantization=_quantization(reader),
        source=where,
    )


def _sliding_layers(arch: str, layers: int) -> tuple[bool, ...]:
    if arch == "gemma2":
        return tuple(i % 2 == 0 for i in range(layers))
    if arch == "gemma3":
        return tuple((i + 1) % 6 != 0 for i in range(layers))
    return (True,) * layers
