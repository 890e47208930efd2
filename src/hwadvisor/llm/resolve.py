"""One ``--model`` value -> an :class:`LlmArch` (and the weight files, when present).

A catalog id (``llama-3-8b``) uses the catalog's shape; a local folder or ``config.json``
its config; a ``.gguf`` file its metadata; an ``org/name`` Hub id the config in the
local Hugging Face cache (see :mod:`hwadvisor.llm.hub`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hwadvisor.catalog.loader import spelled_model
from hwadvisor.catalog.schema import ModelEntry
from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.config import arch_from_folder
from hwadvisor.llm.gguf_meta import arch_from_gguf
from hwadvisor.llm.hub import Downloader, locate
from hwadvisor.llm.weights import WeightFiles, gguf_file, weight_files


@dataclass(frozen=True)
class ResolvedModel:
    """A model's architecture, where it came from, and its weight files if any."""

    arch: LlmArch
    origin: str  # catalog, config, gguf, hub
    weights: WeightFiles | None = None


def arch_from_catalog(entry: ModelEntry) -> LlmArch:
    """The LLM shape of a catalog decoder; an entry without one is a UsageError."""
    needed = (entry.layers, entry.hidden, entry.heads, entry.vocab, entry.intermediate)
    if entry.kind.value != "decoder" or any(v is None for v in needed):
        raise UsageError(f"catalog model '{entry.id}' is not an LLM with a known shape")
    assert entry.layers and entry.hidden and entry.heads and entry.vocab and entry.intermediate
    sliding: tuple[bool, ...] = ()
    if entry.sliding_window and entry.sliding_layers == "all":
        sliding = (True,) * entry.layers
    elif entry.sliding_window and entry.sliding_layers == "alternate":
        sliding = tuple(i % 2 == 0 for i in range(entry.layers))
    return LlmArch(
        name=entry.id,
        layers=entry.layers,
        hidden=entry.hidden,
        heads=entry.heads,
        kv_heads=entry.kv_heads or entry.heads,
        head_dim=entry.head_dim or entry.hidden // entry.heads,
        intermediate=entry.intermediate,
        vocab=entry.vocab,
        tied_embeddings=bool(entry.tied_embeddings),
        attention_bias=bool(entry.attention_bias),
        norms_per_layer=entry.norms_per_layer or 2,
        experts=entry.experts or 1,
        experts_per_token=entry.experts_per_token or 1,
        sliding_window=entry.sliding_window if sliding else None,
        sliding_layers=sliding,
        max_context=entry.max_context,
        dtype=entry.dtype or "bfloat16",
        source=f"catalog:{entry.id} ({entry.source})",
    )


def resolve_model(
    spec: str, *, extra_catalogs: Iterable[Path] | None = None, download: Downloader | None = None
) -> ResolvedModel:
    """The model ``spec`` names: a catalog id (any spelling of it) first, then a path, then a Hub id."""
    found = spelled_model(spec, extra_catalogs)
    if found is not None:
        return ResolvedModel(arch_from_catalog(found.entry), "catalog")
    files = locate(spec, download)
    if files.gguf is not None:
        return ResolvedModel(arch_from_gguf(files.gguf), "gguf", gguf_file(files.gguf))
    assert files.config is not None
    arch = arch_from_folder(files.config, name=files.name)
    weights = weight_files(files.folder) if files.folder is not None else None
    return ResolvedModel(arch, "hub" if files.hub_id else "config", weights)
