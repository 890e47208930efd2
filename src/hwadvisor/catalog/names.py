"""Catalog ids as people type them: the one place a typed device or model name is resolved.

A name resolves, in this order, to:

1. the entry whose id or alias it spells (case, spaces, dashes, underscores and the vendor
   words "NVIDIA", "GeForce", "Tesla", "AMD", "Instinct", "Apple", "Intel", "GPU" do not
   count: ``GeForce RTX 4090``, ``rtx4090`` and ``RTX_4090`` are all ``rtx-4090``);
2. the default part of a family named in ``data/families.yaml`` (``h100`` is ``h100-sxm``),
   with a note saying so and naming the other parts;
3. the one entry whose name begins with it (``mi250`` is ``mi250x``), with a note.

Anything else is a :class:`CatalogError` whose suggestions come from the same family: the
family of ``families.yaml`` the name begins with, else the entries whose name begins with
the same letters (``b300`` -> b200, ``resnet18`` -> resnet50), ranked by ``difflib``.

Pure functions over entries already loaded; :func:`hwadvisor.catalog.loader.lookup_device`
and :func:`~hwadvisor.catalog.loader.lookup_model` load the catalog and call them.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, Protocol, TypeVar

from hwadvisor.catalog.schema import DeviceEntry, FamilyEntry, ModelEntry
from hwadvisor.errors import CatalogError

#: Words people put before a part's name that no catalog id carries.
VENDOR_WORDS = frozenset({"nvidia", "geforce", "tesla", "amd", "instinct", "apple", "intel", "gpu"})
#: The shortest name that may stand for the one id it begins ("mi2" may, "h1" may not).
MIN_PREFIX = 3
#: How many suggestions an unknown name gets.
MAX_SUGGESTIONS = 3


class _Named(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def aliases(self) -> tuple[str, ...]: ...


E = TypeVar("E", DeviceEntry, ModelEntry)


@dataclass(frozen=True)
class Found(Generic[E]):
    """The entry a typed name resolved to, and the assumption to state when it was not exact."""

    entry: E
    note: str | None = None

    @property
    def notes(self) -> list[str]:
        """``[note]``, or ``[]`` when the name was the entry's own id or alias."""
        return [self.note] if self.note else []


# Every lookup keys the whole catalog again (spellings), so the keys are cached per text.
@lru_cache(maxsize=8192)
def name_key(text: str) -> str:
    """``text`` as names are compared: lower case, vendor words dropped, letters/digits/dots only."""
    words = re.split(r"[^a-z0-9.]+", text.lower())
    return "".join(w for w in words if w and w not in VENDOR_WORDS)


def spellings(entries: Mapping[str, _Named]) -> dict[str, str]:
    """Every spelling key of ``entries`` (ids first, then aliases) -> the entry's id."""
    index: dict[str, str] = {}
    for entry in entries.values():
        index.setdefault(name_key(entry.id), entry.id)
    for entry in entries.values():
        for alias in entry.aliases:
            index.setdefault(name_key(alias), entry.id)
    return index


def _family_note(typed: str, fam: FamilyEntry, entries: Mapping[str, _Named]) -> str:
    chosen = entries[fam.default]
    others = [m for m in fam.members if m != fam.default and m in entries]
    note = f"'{typed}' taken as {chosen.id} ({chosen.name}), {fam.reason}"
    if others:
        plural = "s" if len(others) > 1 else ""
        note += f"; say {' or '.join(others)} for the other{plural}"
    return note


def resolve(
    typed: str,
    entries: Mapping[str, E],
    fams: Sequence[FamilyEntry] = (),
    *,
    prefix: bool = True,
) -> Found[E] | None:
    """The entry ``typed`` names (spelling, family default, unique prefix), or None."""
    key = name_key(typed)
    if not key:
        return None
    index = spellings(entries)
    if key in index:
        return Found(entries[index[key]])
    for fam in fams:
        if name_key(fam.family) == key and fam.default in entries:
            return Found(entries[fam.default], _family_note(typed, fam, entries))
    if not prefix or len(key) < MIN_PREFIX:
        return None
    hits = _prefixed(key, index, entries)
    if len(hits) != 1:
        return None
    entry = entries[hits[0]]
    return Found(
        entry, f"'{typed}' taken as {entry.id} ({entry.name}), the only catalog id beginning so"
    )


def _prefixed(key: str, index: Mapping[str, str], entries: Mapping[str, _Named]) -> list[str]:
    """Ids whose id or alias begins with ``key``, in catalog order."""
    ids = {ident for spelled, ident in index.items() if spelled.startswith(key)}
    return [ident for ident in entries if ident in ids]


def _family_pool(key: str, index: Mapping[str, str], fams: Sequence[FamilyEntry]) -> list[str]:
    """The spelling keys of ``key``'s family: a named family it begins with, else its stem."""
    named = [f for f in fams if key.startswith(name_key(f.family))]
    if named:
        fam = max(named, key=lambda f: len(name_key(f.family)))
        members = set(fam.members)
        return [k for k, ident in index.items() if ident in members]
    letters = re.match(r"[a-z]+", key)
    stem = letters.group(0) if letters else key[:2]
    return [k for k in index if k.startswith(stem)]


def suggestions(
    typed: str, entries: Mapping[str, _Named], fams: Sequence[FamilyEntry] = ()
) -> list[str]:
    """Up to three ids close to ``typed``, from its own family where one is recognised."""
    key = name_key(typed)
    if not key:
        return []
    index = spellings(entries)
    hits = _prefixed(key, index, entries)
    if hits:
        return hits[:MAX_SUGGESTIONS]
    pool = _family_pool(key, index, fams)
    # Inside the family a loose match is still a good hint; across families only a typo is.
    close = difflib.get_close_matches(key, pool, n=10, cutoff=0.4) if pool else []
    if not close:
        close = difflib.get_close_matches(key, list(index), n=10, cutoff=0.8)
    out: list[str] = []
    for spelled in close:
        if index[spelled] not in out:
            out.append(index[spelled])
    return out[:MAX_SUGGESTIONS]


def hint(typed: str, entries: Mapping[str, _Named], fams: Sequence[FamilyEntry] = ()) -> str:
    """A ' (did you mean X or Y?)' suffix from :func:`suggestions`, or ''."""
    ids = suggestions(typed, entries, fams)
    return f" (did you mean {' or '.join(ids)}?)" if ids else ""


def unknown(
    what: str, typed: str, entries: Mapping[str, _Named], fams: Sequence[FamilyEntry] = ()
) -> CatalogError:
    """The one-line error for a ``what`` ("device", "model") that nothing matched."""
    return CatalogError(
        f"unknown {what} '{typed}'{hint(typed, entries, fams)}; see `hwadvisor catalog {what}s`"
    )
