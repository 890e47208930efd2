"""Loading, validating and merging the catalog YAML files."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from hwadvisor.catalog.names import Found, resolve, unknown
from hwadvisor.catalog.schema import DeviceEntry, FamilyEntry, ModelEntry
from hwadvisor.errors import CatalogError
from hwadvisor.io import NestingError, load_yaml, read_limited_text

E = TypeVar("E", bound=BaseModel)
_Entry = TypeVar("_Entry", DeviceEntry, ModelEntry)

#: A user catalog larger than this is refused: the shipped files are a few tens of KiB.
MAX_CATALOG_BYTES = 4 * 1024 * 1024


def _shipped_text(name: str) -> str:
    return (
        resources.files("hwadvisor.catalog")
        .joinpath("data")
        .joinpath(name)
        .read_text(encoding="utf-8")
    )


def _parse(text: str, where: str, section: str) -> list[dict[str, Any]]:
    """The list under ``section`` (or a bare list) of one YAML document."""
    try:
        data = load_yaml(text)
    except NestingError as exc:
        raise CatalogError("catalog file is nested too deeply", where=where) from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise CatalogError(f"not valid YAML{line}", where=where) from exc
    if isinstance(data, dict):
        data = data.get(section, [])
    if data is None:
        return []
    if not isinstance(data, list) or not all(isinstance(e, dict) for e in data):
        raise CatalogError(f"expected a list of entries under '{section}:'", where=where)
    return data


def _validate(
    raw: list[dict[str, Any]], model: type[E], where: str, key: str = "id"
) -> dict[str, E]:
    out: dict[str, E] = {}
    for i, item in enumerate(raw):
        ident = item.get(key, f"#{i + 1}")
        try:
            entry = model.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(entry)"
            raise CatalogError(f"entry {ident}: field {loc}: {first['msg']}", where=where) from exc
        out[str(getattr(entry, key))] = entry
    return out


def _read_user(path: Path) -> str:
    """A user's ``--catalog`` file: a regular file only (a device or a FIFO is refused
    unread), at most :data:`MAX_CATALOG_BYTES`."""
    return read_limited_text(
        path,
        MAX_CATALOG_BYTES,
        CatalogError,
        what="catalog file",
        missing="catalog file not found",
        folder="catalog file path is a folder, not a file",
    )


def _load(name: str, section: str, model: type[E], extra: Iterable[Path]) -> dict[str, E]:
    merged = dict(_shipped(name, section, model))
    for path in extra:
        p = Path(path)
        text = _read_user(p)
        # A user file may hold both sections; only this section's entries are read here.
        merged.update(_validate(_parse(text, str(p), section), model, str(p)))
    return merged


@lru_cache(maxsize=4)
def _shipped(name: str, section: str, model: type[E]) -> dict[str, E]:
    where = f"hwadvisor/catalog/data/{name}"
    return _validate(_parse(_shipped_text(name), where, section), model, where)


@lru_cache(maxsize=2)
def load_families(kind: str) -> tuple[FamilyEntry, ...]:
    """The family names of ``kind`` ("devices" or "models") and their default parts."""
    where = "hwadvisor/catalog/data/families.yaml"
    raw = _parse(_shipped_text("families.yaml"), where, kind)
    return tuple(_validate(raw, FamilyEntry, where, key="family").values())


def load_devices(extra: Iterable[Path] | None = None) -> dict[str, DeviceEntry]:
    """All device entries by id: the shipped catalog, then each file of ``extra`` over it."""
    return _load("devices.yaml", "devices", DeviceEntry, extra or [])


def load_models(extra: Iterable[Path] | None = None) -> dict[str, ModelEntry]:
    """All model entries by id: the shipped catalog, then each file of ``extra`` over it."""
    return _load("models.yaml", "models", ModelEntry, extra or [])


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """A ' (did you mean X?)' suffix naming the closest of ``choices``, or ''.

    For plain word lists (instance types, option values); catalog ids go through
    :mod:`hwadvisor.catalog.names`, whose suggestions stay inside a family.
    """
    names = list(choices)
    key = name.lower()
    squashed = key.replace("-", "").replace("_", "")
    hits = [c for c in names if c.startswith(key) or c.replace("-", "").startswith(squashed)][:3]
    if not hits:
        hits = difflib.get_close_matches(key, names, n=1, cutoff=0.5)
    return f" (did you mean {' or '.join(hits)}?)" if hits else ""


def lookup_device(ident: str, extra: Iterable[Path] | None = None) -> Found[DeviceEntry]:
    """The device ``ident`` names, as people type it, with the note to state when it was a
    family name or a prefix (:func:`hwadvisor.catalog.names.resolve`); unknown ->
    CatalogError with suggestions from the same family."""
    return _found("device", ident, load_devices(extra))


def lookup_model(ident: str, extra: Iterable[Path] | None = None) -> Found[ModelEntry]:
    """The model ``ident`` names, as :func:`lookup_device` does for devices."""
    return _found("model", ident, load_models(extra))


def _found(what: str, ident: str, entries: Mapping[str, _Entry]) -> Found[_Entry]:
    """The entry of ``entries`` that ``ident`` names, with the families of ``what``
    ("device", "model"); nothing matched -> CatalogError with suggestions."""
    fams = load_families(f"{what}s")
    found = resolve(ident, entries, fams)
    if found is None:
        raise unknown(what, ident, entries, fams)
    return found


def spelled_model(ident: str, extra: Iterable[Path] | None = None) -> Found[ModelEntry] | None:
    """The model ``ident`` spells (id, alias, family), else None: no prefixes, no error.

    For names that may also be a path or a Hub id (``./mistral``, ``org/name``).
    """
    return resolve(ident, load_models(extra), load_families("models"), prefix=False)


def model_notes(ident: str, entry_id: str, extra: Iterable[Path] | None = None) -> list[str]:
    """The note to state when ``ident`` named the model ``entry_id`` by a prefix or a
    family; [] for its own spelling or when ``ident`` is not a catalog name at all."""
    found = resolve(ident, load_models(extra), load_families("models"))
    return found.notes if found is not None and found.entry.id == entry_id else []


def find_device(ident: str, extra: Iterable[Path] | None = None) -> DeviceEntry:
    """The device entry ``ident`` names (see :func:`lookup_device`)."""
    return lookup_device(ident, extra).entry


def find_model(ident: str, extra: Iterable[Path] | None = None) -> ModelEntry:
    """The model entry ``ident`` names (see :func:`lookup_model`)."""
    return lookup_model(ident, extra).entry
