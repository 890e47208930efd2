"""The pydantic-free half of the models: constants, the probe status, and JSON for dataclasses.

``hwadvisor check --json`` is run on every node by provisioning scripts and has a start-up
budget of a quarter of a second; importing pydantic and building its validators takes
most of that on a small machine. So the probe fills the plain dataclasses of
:mod:`hwadvisor.models.facts_plain` (generated from the pydantic models, and kept equal
to them by a test), and :func:`to_json_value` turns them into the JSON values the
pydantic :class:`~hwadvisor.models.facts.Facts` would print, in the same order. Only the
spelling of a very small or large float can differ (``1e-05`` against pydantic's
``0.00001``), the same number to any JSON reader. Every other command validates that JSON
into the pydantic models as usual.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from datetime import datetime, timezone
from enum import Enum

#: Version of every JSON document hwadvisor writes. A minor bump only adds fields.
SCHEMA_VERSION = "1.0"
SCHEMA_MAJOR = int(SCHEMA_VERSION.split(".")[0])


class ProbeStatus(str, Enum):
    """Outcome of one probe (SPEC §3 ``probes``)."""

    OK = "ok"
    ABSENT = "absent"
    UNSUPPORTED = "unsupported"
    DENIED = "denied"
    ERROR = "error"
    TIMEOUT = "timeout"


def utc_now() -> str:
    """The current time as an ISO 8601 string in UTC, to the second (``generated_at``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def to_json_value(value: object) -> object:
    """``value`` (plain dataclasses, lists, enums, scalars) as JSON-ready Python values.

    Fields keep their declared order, and a number is coerced to the declared type of
    its field (``_coerce`` on each generated class), as pydantic does: an ``int`` read
    into a ``float`` field prints as ``45.0``, not ``45``.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        coerce: dict[str, type] = getattr(value, "_coerce", {})
        out: dict[str, object] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            kind = coerce.get(f.name)
            if kind is not None and item is not None and type(item) is not kind:
                item = kind(item)
            out[f.name] = to_json_value(item)
        return out
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str) and not value.isascii():
        return printable(value)
    return value


def clean_text(value: object) -> None:
    """Make every string in ``value`` (plain dataclasses and lists) :func:`printable`, in place."""
    if isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, str):
                value[i] = printable(item)
            else:
                clean_text(item)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if isinstance(item, str):
                if not item.isascii():
                    setattr(value, f.name, printable(item))
            else:
                clean_text(item)


def printable(text: str) -> str:
    """``text`` as valid Unicode: bytes that were not UTF-8 (a hostname or an environment
    value read with ``surrogateescape``) become U+FFFD, which JSON and pydantic accept."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text


_COMPARE = {"ge": operator.ge, "gt": operator.gt, "le": operator.le, "lt": operator.lt}


def within(value: float, bounds: tuple[tuple[str, float], ...]) -> bool:
    """Whether ``value`` meets every ``(op, limit)`` of a field (``finite``: no NaN or inf)."""
    for op, limit in bounds:
        if op == "finite":
            if isinstance(value, float) and not math.isfinite(value):
                return False  # an int is always finite (too big for a float: _fits_type)
        elif not _COMPARE[op](value, limit):
            return False
    return True


def _fits_type(item: object, kind: type | None) -> bool:
    """Whether a number can take its field's type as pydantic would: an int field takes
    a float only when it is whole and below 2^63 (3.0, not 3.7 or infinity), a float
    field any int a float can hold."""
    if kind is int and isinstance(item, float):
        # pydantic takes a whole float into an int field only below 2^63.
        return math.isfinite(item) and item.is_integer() and abs(item) < 2.0**63
    if kind is float and isinstance(item, int) and not isinstance(item, bool):
        return abs(item) <= 1.7976931348623157e308
    return True


def null_impossible(value: object, path: str = "") -> list[str]:
    """Set every number outside its field's bounds (or that cannot take its field's type)
    to None, in place; say which, and what.

    The bounds are the pydantic models' constraints (``_bounds`` on each generated class),
    so what this leaves is what the models accept: a probe's impossible reading (a
    negative size, a NaN clock) becomes an unknown fact instead of a document that every
    other command would refuse.
    """
    dropped: list[str] = []
    if isinstance(value, list):
        for i, item in enumerate(value):
            dropped += null_impossible(item, f"{path}[{i}]")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        bounds: dict[str, tuple[tuple[str, float], ...]] = getattr(value, "_bounds", {})
        coerce: dict[str, type] = getattr(value, "_coerce", {})
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            where = f"{path}.{f.name}" if path else f.name
            limits = bounds.get(f.name)
            if (limits and isinstance(item, (int, float)) and not within(item, limits)) or (
                not _fits_type(item, coerce.get(f.name))
            ):
                setattr(value, f.name, None)
                dropped.append(f"{where}={item!r}"[:120])
            elif isinstance(item, list) or dataclasses.is_dataclass(item):
                dropped += null_impossible(item, where)
    return dropped
