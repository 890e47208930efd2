"""One ``--model`` value -> an :class:`LlmArch` (and the weight files, when present).

A catalog id (``llama-3-8b``) uses the catalog's shape; a local folder or ``config.json``
its config; a ``.gguf`` file its metadata; an ``org/name`` Hub id its config.json and
weight headers, cached or read on the Hub, and ``org/name/file.gguf`` that GGUF file's
header (see :mod:`hwadvisor.llm.hub`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from hwadvisor.catalog.loader import spelled_model
from hwadvisor.catalog.schema import ModelEntry
from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.config import arch_from_dict, arch_from_folder
from hwadvisor.llm.gguf_meta import arch_from_gguf
from hwadvisor.llm.hub import locate
from hwadvisor.llm.weights import WeightFiles, gguf_file, weight_files


@dataclass(frozen=True)
class ResolvedModel:
    """A model's architecture, where it came from, and its weight files if any."""

    arch: LlmArch
    origin: str  # catalog, config, gguf, hub
    weights: WeightFiles | None = None


def shipped_config(hf_repo: str | None) -> dict[str, object] | None:
    """The published config.json shipped for ``hf_repo`` (catalog/data/llm_configs), if any."""
    if not hf_repo or "/" not in hf_repo:
        return None
    name = hf_repo.replace("/", "--") + ".json"
    folder = resources.files("hwadvisor.catalog").joinpath("data").joinpath("llm_configs")
    item = folder.joinpath(name)
    if not item.is_file():
        return None
    data = json.loads(item.read_text("utf-8"))
    return data if isinstance(data, dict) else None


def arch_from_catalog(entry: ModelEntry) -> LlmArch:
    """The LLM shape of a catalog decoder; an entry without one is a UsageError.

    An entry whose ``hf_repo`` has its config.json shipped is read from that config
    (MLA, shared experts, windows, the checkpoint's quantization); others from the
    entry's own shape fields.
    """
    config = shipped_config(entry.hf_repo) if entry.kind.value == "decoder" else None
    if config is not None:
        where = f"catalog:{entry.id} (config.json of {entry.hf_repo})"
        arch = arch_from_dict(config, name=entry.id, where=where)
        return arch.with_changes(source=f"catalog:{entry.id} ({entry.source})")
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


def resolve_model(spec: str, *, extra_catalogs: Iterable[Path] | None = None) -> ResolvedModel:
    """The model ``spec`` names: a catalog id (any spelling of it) first, then a path, then a Hub id."""
    found = spelled_model(spec, extra_catalogs)
    if found is not None:
        return ResolvedModel(arch_from_catalog(found.entry), "catalog")
    files = locate(spec)
    origin = "hub" if files.hub_id else None
    if files.gguf_header is not None:
        arch = arch_from_gguf(Path(files.hub_id or files.name), files.gguf_header)
        return ResolvedModel(arch.with_changes(source=f"hub:{files.hub_id}"), "hub", files.weights)
    if files.gguf is not None:
        return ResolvedModel(arch_from_gguf(files.gguf), origin or "gguf", gguf_file(files.gguf))
    assert files.config is not None
    arch = arch_from_folder(files.config, name=files.name)
    weights = files.weights
    if weights is None and files.folder is not None:
        weights = weight_files(files.folder)
    return ResolvedModel(arch, origin or "config", weights)
