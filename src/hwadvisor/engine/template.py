"""Message templates: ``{fact.path}``, ``{fact.path:.1f}``, ``{fact.path|gib}``.

A closed mini-format, not Python's ``str.format`` (which can reach attributes and
items): a placeholder names one fact path, an optional filter from :data:`FILTERS`, and
an optional numeric format spec. ``{{`` and ``}}`` are literal braces. A value that is
unknown prints as ``unknown``. Templates are parsed when rules load, so a bad
placeholder is a load error, not a surprise at run time.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hwadvisor.engine.context import Context
from hwadvisor.units import duration, human_bytes

_PLACEHOLDER = re.compile(
    r"\{(?P<path>[a-z][a-z0-9_]*(?:\.[a-z0-9][a-z0-9_]*){0,7})(?:\|(?P<filter>[a-z_]+))?(?::(?P<spec>[<>^]?[+]?[0-9]{0,3}(?:\.[0-9]{1,2})?[fegd%]?))?\}"
)
_SPEC_RE = re.compile(r"^[<>^]?[+]?[0-9]{0,3}(?:\.[0-9]{1,2})?[fegd%]?$")


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
    """One ``{...}`` of a template."""

    path: str
    filter: str | None
    spec: str | None


def placeholders(template: str) -> list[Placeholder]:
    """The placeholders of ``template``; ValueError on a malformed one or a stray brace."""
    found: list[Placeholder] = []
    i = 0
    while i < len(template):
        ch = template[i]
        if template.startswith(("{{", "}}"), i):
            i += 2
            continue
        if ch == "}":
            raise ValueError(f"stray '}}' at character {i}; write '}}}}' for a literal brace")
        if ch == "{":
            m = _PLACEHOLDER.match(template, i)
            if m is None:
                end = template.find("}", i)
                shown = template[i : end + 1 if end >= 0 else i + 30]
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
    return found


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


def render(template: str, ctx: Context) -> str:
    """Fill ``template``'s placeholders from ``ctx`` (unknown values print as 'unknown')."""
    placeholders(template)  # refuse a malformed template even if it slipped past loading

    def fill(m: re.Match[str]) -> str:
        ph = Placeholder(m.group("path"), m.group("filter"), m.group("spec"))
        return _show(ctx.get(ph.path), ph)

    out: list[str] = []
    for piece in re.split(r"(\{\{|\}\})", template):
        if piece in ("{{", "}}"):
            out.append(piece[0])
        else:
            out.append(_PLACEHOLDER.sub(fill, piece))
    return "".join(out)
