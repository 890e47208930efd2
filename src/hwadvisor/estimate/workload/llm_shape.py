"""A language model's shape in the workload document, and back to :class:`LlmArch`.

The workload carries a serialisable copy of the shape (:class:`~hwadvisor.models.workload.
LlmShape`), so a saved workload is priced again without reading the model's files.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hwadvisor.catalog import find_model, load_models
from hwadvisor.catalog.schema import ModelEntry
from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.loading import looks_like_user_model
from hwadvisor.llm import LlmArch, QuantConfig, arch_from_catalog, resolve_model
from hwadvisor.llm.hub import is_hub_id
from hwadvisor.llm.resolve import ResolvedModel
from hwadvisor.models.workload import LlmQuantization, LlmShape

#: The fields a workload's :class:`LlmShape` and an :class:`LlmArch` share as they are
#: (the sliding layers and the quantization are converted; the rest are one side's own).
_SAME_FIELDS = tuple(
    f.name
    for f in dataclasses.fields(LlmArch)
    if f.name in LlmShape.model_fields and f.name not in ("sliding_layers", "quantization")
)


def _copied(src: LlmArch | LlmShape) -> dict[str, Any]:
    """The :data:`_SAME_FIELDS` of ``src``, by name."""
    return {name: getattr(src, name) for name in _SAME_FIELDS}


def shape_of(resolved: ResolvedModel) -> LlmShape:
    """The workload's copy of a resolved model's shape (and its weight-file bytes)."""
    arch = resolved.arch
    q = arch.quantization
    return LlmShape(
        **_copied(arch),
        sliding_layers=list(arch.sliding_layers),
        quantization=_quant_shape(q) if q is not None else None,
        params_total=arch.params_total,
        params_mtp=arch.params_mtp,
        params_active=arch.params_active,
        weight_file_bytes=resolved.weights.total_bytes if resolved.weights else None,
        origin=resolved.origin,
    )


def arch_of(shape: LlmShape) -> LlmArch:
    """The :class:`LlmArch` a workload's shape describes."""
    q = shape.quantization
    return LlmArch(
        **_copied(shape),
        sliding_layers=tuple(shape.sliding_layers),
        quantization=QuantConfig(**{**q.model_dump(), "skip": tuple(q.skip)})
        if q is not None
        else None,
    )


def _quant_shape(q: QuantConfig) -> LlmQuantization:
    """The workload's copy of a checkpoint's quantization_config."""
    return LlmQuantization(**{**dataclasses.asdict(q), "skip": list(q.skip)})


def catalog_shape(entry: ModelEntry) -> LlmShape | None:
    """The shape of a catalog decoder with a full LLM shape; None for any other entry."""
    try:
        return shape_of(ResolvedModel(arch_from_catalog(entry), "catalog"))
    except UsageError:
        return None


def language_model(
    model: str | None, extra_catalogs: list[Path] | None
) -> tuple[LlmShape | None, ModelEntry | None]:
    """The shape of ``model`` when it is a language model, and its catalog entry if any.

    Catalog ids first (fuzzy, with a did-you-mean), unless ``model`` is an existing path
    or a Hub id (``org/name``): those are read from the files or the local Hugging Face
    cache; a Hub id a catalog entry names as its ``hf_repo`` uses that entry when the
    cache lacks it. ``module:callable`` (a torch module) is no language model here.
    """
    if model is None or looks_like_user_model(model):
        return None, None
    models = load_models(extra_catalogs)
    path = Path(model).expanduser()  # an existing path, a .json or .gguf name, or org/name
    files = path.exists() or path.suffix.lower() in (".json", ".gguf") or is_hub_id(model)
    if files and model.lower() not in models:
        try:
            return shape_of(resolve_model(model, extra_catalogs=extra_catalogs)), None
        except UsageError:
            # The cache lacks the config: the entry naming the Hub id (case-insensitive) as
            # its hf_repo has the same config.json's numbers, so no network is needed.
            key = model.strip().lower()
            hub = (m for m in models.values() if m.hf_repo and m.hf_repo.lower() == key)
            entry = next(hub, None)
            if entry is None:
                raise
            return catalog_shape(entry), entry
    entry = find_model(model, extra_catalogs)
    return catalog_shape(entry), entry
