"""Reading the LLM data files shipped in ``hwadvisor/catalog/data`` (quant, engines)."""

from __future__ import annotations

import importlib
from functools import lru_cache
from importlib import resources
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar

from hwadvisor.errors import CatalogError, MissingDependencyError
from hwadvisor.io import load_yaml

if TYPE_CHECKING:
    from pydantic import BaseModel

_M = TypeVar("_M", bound="BaseModel")


@lru_cache(maxsize=4)
def shipped_list(name: str, section: str) -> tuple[dict[str, Any], ...]:
    """The entries under ``section`` of the shipped data file ``name``."""
    where = f"hwadvisor/catalog/data/{name}"
    text = resources.files("hwadvisor.catalog").joinpath("data").joinpath(name).read_text("utf-8")
    data = load_yaml(text)
    entries = data.get(section) if isinstance(data, dict) else None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise CatalogError(f"expected a list of entries under '{section}:'", where=where)
    return tuple(entries)


def shipped_models(name: str, section: str, model: type[_M], noun: str) -> tuple[_M, ...]:
    """The entries under ``section`` of the shipped data file ``name``, each validated as
    ``model``; the first bad one is a CatalogError naming the ``noun``, its id and field."""
    from pydantic import ValidationError

    out = []
    for raw in shipped_list(name, section):
        try:
            out.append(model.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors()[0]
            raise CatalogError(
                f"{noun} {raw.get('id')}: {'.'.join(map(str, first['loc']))}: {first['msg']}",
                where=f"hwadvisor/catalog/data/{name}",
            ) from exc
    return tuple(out)


def optional_module(name: str, extra: str = "hf") -> ModuleType:
    """Import an optional dependency, or say in one line what to install (exit 3).

    Returned as a plain module (typed loosely), so the packages stay optional for mypy too.
    """
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{name} is not installed: pip install 'hwadvisor[{extra}]' (or pip install {name})"
        ) from exc


def has_module(name: str) -> bool:
    """True when the optional dependency ``name`` can be imported."""
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True
