"""Message templates: ``{fact.path}``, ``{fact.path:.1f}``, ``{fact.path|gib}`` and clauses.

A closed mini-format, not Python's ``str.format`` (which can reach attributes and
items): a placeholder names one fact path, an optional filter from :data:`FILTERS`, and
an optional numeric format spec. ``{{`` and ``}}`` are literal braces.

A clause, ``[[...]]``, is text said only when it can be said truly:

- ``[[ within {workload.latency_ms:g} ms]]`` is dropped when any of its values is unknown,
  so a message never reads "within unknown ms";
- ``[[workload.task=train|finetune: ...]]`` (or ``!=``) is said only when the fact has
  one of the values (``true``/``false`` for booleans); an unknown fact drops it too.
  Training advice in a rule that also serves inference goes in such a clause.

Clauses do not nest. Outside a clause an unknown value prints as ``unknown``. Templates
are parsed when rules load, so a bad placeholder or clause is a load error, not a
surprise at run time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from hwadvisor.engine.context import Context
from hwadvisor.units import duration, human_bytes

_PATH = r"[a-z][a-z0-9_]*(?:\.[a-z0-9][a-z0-9_]*){0,7}"
_PLACEHOLDER = re.compile(
    r"\{(?P<path>"
    + _PATH
    + r")(?:\|(?P<filter>[a-z_]+))?(?::(?P<spec>[<>^]?[+]?[0-9]{0,3}(?:\.[0-9]{1,2})?[fegd%]?))?\}"
)
_SPEC_RE = re.compile(r"^[<>^]?[+]?[0-9]{0,3}(?:\.[0-9]{1,2})?[fegd%]?$")
_WORD = r"[A-Za-z0-9_.+-]+"
_GUARD = re.compile(
    r"(?P<path>" + _PATH + r")(?P<op>!?=)(?P<values>" + _WORD + r"(?:\|" + _WORD + r")*):"
)
_OPEN, _CLOSE = "[[", "]]"


def _listing(value: Any) -> str:
    return ", ".join(str(v) for v in value) if isinstance(value, list) else str(value)


def _count(value: Any) -> str:
    return f"{float(value):,.0f}"


def _billions(value: Any) -> str:
    v = float(value)
    return f"{v / 1e9:.1f} B" if v >= 1e9 else f"{v / 1e6:.1f} M"


#: Filters a placeholder may name: each turns a known value into text.
FILTERS: dict[str, Callable[[Any], str]] = {
    "gib": human_bytes,
    "gb": lambda value: human_bytes(value, decimal=True),
    "duration": duration,
    "list": _listing,
    "count": _count,
    "params": _billions,
    "lower": lambda v: str(v).lower(),
}


@dataclass(frozen=True)
class Placeholder:
    """One ``{...}`` of a template (or the fact a clause's guard reads: no filter, no spec)."""

    path: str
    filter: str | None
    spec: str | None


@dataclass(frozen=True)
class Guard:
    """``path=value`` (or ``path!=value``; ``path=a|b`` for either) opening a clause."""

    path: str
    values: tuple[str, ...]
    negated: bool

    def holds(self, ctx: Context) -> bool:
        """Whether the fact is known and has (or, negated, has not) one of the values."""
        actual = ctx.get(self.path)
        if actual is None:
            return False
        text = str(actual).lower() if isinstance(actual, bool) else str(actual)
        return (text in self.values) != self.negated


@dataclass(frozen=True)
class Piece:
    """A run of template text: always said, or a clause said only when it can be."""

    text: str
    clause: bool = False
    guard: Guard | None = None


def pieces(template: str) -> list[Piece]:
    """``template`` cut into plain text and ``[[...]]`` clauses; ValueError when a clause
    is unclosed, nested or closed without being opened."""
    return list(_pieces(template))


# Every run evaluates each rule's message several times over (which pass it belongs to,
# its evidence, its text): the parses are cached per template text. Pieces and
# placeholders are frozen, so the cached tuples are shared safely; errors are not cached.
@lru_cache(maxsize=4096)
def _pieces(template: str) -> tuple[Piece, ...]:
    out: list[Piece] = []
    i = 0
    while i < len(template):
        start = template.find(_OPEN, i)
        stray = template.find(_CLOSE, i)
        if stray >= 0 and (start < 0 or stray < start):
            raise ValueError(f"stray ']]' at character {stray}: a clause is written [[...]]")
        if start < 0:
            out.append(Piece(template[i:]))
            break
        end = template.find(_CLOSE, start + 2)
        if end < 0:
            raise ValueError(f"unclosed '[[' at character {start}")
        body = template[start + 2 : end]
        if _OPEN in body:
            raise ValueError(f"a clause inside a clause at character {start}: clauses do not nest")
        if start > i:
            out.append(Piece(template[i:start]))
        out.append(_clause(body))
        i = end + 2
    return tuple(out)


def _clause(body: str) -> Piece:
    m = _GUARD.match(body)
    if m is None:
        return Piece(body, clause=True)
    guard = Guard(m.group("path"), tuple(m.group("values").split("|")), m.group("op") == "!=")
    return Piece(body[m.end() :], clause=True, guard=guard)


@lru_cache(maxsize=4096)
def _text_placeholders(text: str) -> tuple[Placeholder, ...]:
    found: list[Placeholder] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if text.startswith(("{{", "}}"), i):
            i += 2
            continue
        if ch == "}":
            raise ValueError(f"stray '}}' at character {i}; write '}}}}' for a literal brace")
        if ch == "{":
            m = _PLACEHOLDER.match(text, i)
            if m is None:
                end = text.find("}", i)
                shown = text[i : end + 1 if end >= 0 else i + 30]
                raise ValueError(
                    f"bad placeholder {shown!r}: expected {{fact.path}}, {{fact.path|filter}} or {{fact.path:.1f}}"
                )
            flt = m.group("filter")
            if flt is not None and flt not in FILTERS:
                raise ValueError(f"unknown filter {flt!r} (filters: {', '.join(sorted(FILTERS))})")
            found.append(Placeholder(m.group("path"), flt, m.group("spec")))
            i = m.end()
            continue
        i += 1
    return tuple(found)


def placeholders(template: str) -> list[Placeholder]:
    """The placeholders of ``template``, and the facts its clauses' guards read;
    ValueError on a malformed placeholder, a stray brace or a malformed clause."""
    return list(_placeholders(template))


@lru_cache(maxsize=4096)
def _placeholders(template: str) -> tuple[Placeholder, ...]:
    found: list[Placeholder] = []
    for piece in _pieces(template):
        if piece.guard is not None:
            found.append(Placeholder(piece.guard.path, None, None))
        found += _text_placeholders(piece.text)
    return tuple(found)


def _show(value: Any, ph: Placeholder) -> str:
    if value is None:
        return "unknown"
    try:
        if ph.filter is not None:
            return FILTERS[ph.filter](value)
        if (
            ph.spec
            and _SPEC_RE.match(ph.spec)
            and isinstance(value, (int, float))
            and not isinstance(value, bool)
        ):
            return format(value, ph.spec)
    except (TypeError, ValueError):
        return str(value)
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list):
        return _listing(value)
    return str(value)


def _fill(text: str, ctx: Context) -> str:
    def fill(m: re.Match[str]) -> str:
        ph = Placeholder(m.group("path"), m.group("filter"), m.group("spec"))
        return _show(ctx.get(ph.path), ph)

    out: list[str] = []
    for part in re.split(r"(\{\{|\}\})", text):
        if part in ("{{", "}}"):
            out.append(part[0])
        else:
            out.append(_PLACEHOLDER.sub(fill, part))
    return "".join(out)


def _said(piece: Piece, ctx: Context) -> bool:
    if not piece.clause:
        return True
    if piece.guard is not None and not piece.guard.holds(ctx):
        return False
    return all(ctx.get(ph.path) is not None for ph in _text_placeholders(piece.text))


def _tidy(text: str) -> str:
    """What a dropped clause leaves behind: doubled spaces, a space before punctuation, a
    comma after an opening parenthesis or a colon, empty parentheses after a word."""
    text = re.sub(r" {2,}", " ", text)
    text = re.sub(r"\(\s*[,;]\s*", "(", text)
    text = re.sub(r":\s*[,;]\s*", ": ", text)
    text = re.sub(r" \(\s*\)", "", text)
    return re.sub(r" +([.,;:)])", r"\1", text).strip()


def render(template: str, ctx: Context) -> str:
    """Fill ``template`` from ``ctx``: clauses that cannot be said truly are left out,
    and an unknown value outside a clause prints as 'unknown'."""
    placeholders(template)  # refuse a malformed template even if it slipped past loading
    said = [_fill(p.text, ctx) for p in _pieces(template) if _said(p, ctx)]
    return _tidy("".join(said))
