"""Bounds on every number read from a model's metadata (config.json, safetensors, GGUF).

Metadata comes from files anyone can publish, so each number is checked here, in one
place, before any arithmetic or any sequence is built from it: it must be a finite whole
number (or, for a few fields, a finite real) within the range below. A number outside its
range is a :class:`~hwadvisor.errors.UsageError` naming the file and the field (one line,
exit 2). The limits sit far above any published model (DeepSeek-V3 has 61 layers, Llama-4
a 202,048-token vocabulary and a 10,485,760-token context, Kimi-K2 384 experts) and far
below what would make a product of them overflow or a per-layer tuple exhaust memory.
Layers, vocabulary, context, widths and bytes are the limits ``hwadvisor.models.bounds`` holds
catalog entries and reports to (``LAYERS``, ``VOCAB``, ``CONTEXT``, ``WIDTH``, ``BYTES``).

| what | limit | fields |
|---|---|---|
| layers | 10,000 | num_hidden_layers, block_count, first_k_dense_replace, num_nextn_predict_layers |
| vocabulary | 10^7 | vocab_size, tokenizer.ggml.tokens |
| context | 10^8 | max_position_embeddings, sliding_window, attention_chunk_size, context_length |
| widths | 10^7 | hidden_size, intermediate_size, moe_intermediate_size, head_dim, lora ranks |
| heads | 10^5 | num_attention_heads, num_key_value_heads |
| experts | 10^5 | num_local_experts, n_routed_experts, n_shared_experts, num_experts_per_tok |
| bits | 64 | bits, w_bit |
| bytes | 10^16 | safetensors offsets and header sizes, index total_size, GGUF tensor sizes |
| tensor dims | 8 dims, each <= 10^12 | safetensors shapes, GGUF tensor dimensions |
| list items | 10^6 | GGUF arrays, safetensors header entries |
"""

from __future__ import annotations

import math
from typing import Any

from hwadvisor.errors import UsageError

MAX_LAYERS = 10_000
MAX_VOCAB = 10_000_000
MAX_CONTEXT = 100_000_000
MAX_WIDTH = 10_000_000
MAX_HEADS = 100_000
MAX_EXPERTS = 100_000
MAX_BITS = 64
MAX_BYTES = 10**16
MAX_DIMS = 8
MAX_DIM = 10**12
MAX_ITEMS = 1_000_000

#: Field name -> its limit (the kinds of the table above).
LIMITS: dict[str, int] = {
    "layers": MAX_LAYERS,
    "vocab": MAX_VOCAB,
    "context": MAX_CONTEXT,
    "width": MAX_WIDTH,
    "heads": MAX_HEADS,
    "experts": MAX_EXPERTS,
    "bits": MAX_BITS,
    "bytes": MAX_BYTES,
    "dim": MAX_DIM,
    "items": MAX_ITEMS,
}


def whole(value: Any, field: str, where: str, kind: str, *, minimum: int = 1) -> int:
    """``value`` as an int in [minimum, LIMITS[kind]]; anything else is one UsageError line.

    Booleans, strings, NaN, infinities and fractions are refused; so is a number whose
    decimal form is too long to be a count (a 5,000-digit integer).
    """
    limit = LIMITS[kind]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise UsageError(f"{field} must be a whole number, got {_shown(value)}", where=where)
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        raise UsageError(f"{field} must be a finite whole number, got {_shown(value)}", where=where)
    if isinstance(value, int) and value.bit_length() > 64:
        raise UsageError(f"{field} is out of range (more than 64 bits)", where=where)
    number = int(value)
    if not minimum <= number <= limit:
        raise UsageError(
            f"{field} is out of range: {number:,} (allowed {minimum:,} to {limit:,})", where=where
        )
    return number


def optional_whole(
    value: Any, field: str, where: str, kind: str, *, minimum: int = 1
) -> int | None:
    """As :func:`whole`, with None (and JSON null) left as None."""
    return None if value is None else whole(value, field, where, kind, minimum=minimum)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
