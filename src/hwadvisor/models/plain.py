"""The pydantic-free pieces of the documents: constants, field markers, and dataclass JSON.

``hwadvisor check --json`` has a start-up budget of a quarter of a second, and importing
pydantic and building its validators takes most of that on a small machine. So the facts
document (:mod:`hwadvisor.models.facts`) is one tree of frozen dataclasses whose
constraints live in ``Annotated`` types as :class:`Bound` and :class:`Doc` markers.
Pydantic reads the markers through the hooks it defines for annotated metadata, when a
document read from a file is validated or the JSON Schema is published; :func:`settled`
reads the same markers to leave a probe's impossible reading null, and
:func:`to_json_value` prints the dataclasses, both without importing pydantic.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Annotated, Any, TypeVar

from hwadvisor import __version__

#: Version of every JSON document hwadvisor writes. A minor bump only adds fields.
SCHEMA_VERSION = "1.11"
SCHEMA_MAJOR = int(SCHEMA_VERSION.split(".")[0])

#: Names the dataclass documents' annotations use that are imported only for type
#: checking: pydantic models the probe never fills. Read as ``object`` here; pydantic
#: resolves the real ones when it builds a validator (``models.facts._adapter``).
TYPE_CHECKING_ONLY: dict[str, object] = {"BenchReport": object}

T = TypeVar("T")


class ProbeStatus(str, Enum):
    """Outcome of one probe (one entry of the facts' ``probes``)."""

    OK = "ok"
    ABSENT = "absent"
    UNSUPPORTED = "unsupported"
    DENIED = "denied"
    ERROR = "error"
    TIMEOUT = "timeout"


def utc_now() -> str:
    """The current time as an ISO 8601 string in UTC, to the second (``generated_at``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class ToolInfo:
    """Which program wrote a document."""

    name: str = "hwadvisor"
    version: str = __version__


@dataclass(frozen=True)
class Bound:
    """Limits on a number field: ``ge``, ``gt``, ``le``. A float must also be finite."""

    ge: float | None = None
    gt: float | None = None
    le: float | None = None

    def admits(self, value: float) -> bool:
        """Whether ``value`` is within every limit."""
        return (
            (self.ge is None or value >= self.ge)
            and (self.gt is None or value > self.gt)
            and (self.le is None or value <= self.le)
        )

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        """Pydantic's hook for annotated metadata: the same limits as its own constraints."""
        from annotated_types import Interval

        return handler(Annotated[source, Interval(ge=self.ge, gt=self.gt, le=self.le)])


@dataclass(frozen=True)
class Doc:
    """A field's description in the published JSON Schema."""

    text: str

    def __get_pydantic_json_schema__(self, core_schema: Any, handler: Any) -> Any:
        """Pydantic's hook for annotated metadata: the field's schema gains the text."""
        schema = handler(core_schema)
        schema["description"] = self.text
        return schema


@dataclass(frozen=True)
class FieldSpec:
    """What one dataclass field declares: its type (``Annotated`` and ``None`` removed
    where the field is nullable), the number kind, bound and description, if any."""

    annotation: Any
    kind: type | None
    bound: Bound | None
    description: str | None


_SPECS: dict[type, dict[str, FieldSpec]] = {}


def field_specs(cls: type) -> dict[str, FieldSpec]:
    """Each field of dataclass ``cls`` as declared, in order (cached per class)."""
    found = _SPECS.get(cls)
    if found is None:
        found = _SPECS[cls] = _read_specs(cls)
    return found


def _read_specs(cls: type) -> dict[str, FieldSpec]:
    hints = typing.get_type_hints(cls, localns=TYPE_CHECKING_ONLY, include_extras=True)
    out: dict[str, FieldSpec] = {}
    for f in dataclasses.fields(cls):
        hint, meta = hints[f.name], typing.cast(tuple[Any, ...], ())
        if typing.get_origin(hint) is Annotated:
            hint, meta = hint.__origin__, hint.__metadata__
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        core = args[0] if len(args) == 1 and type(None) in typing.get_args(hint) else hint
        out[f.name] = FieldSpec(
            annotation=core,
            kind=core if core in (int, float) else None,
            bound=next((m for m in meta if isinstance(m, Bound)), None),
            description=next((m.text for m in meta if isinstance(m, Doc)), None),
        )
    return out


def _as_kind(value: int | float, kind: type) -> int | float | None:
    """``value`` as its field's kind, as pydantic takes it, or None where it cannot be:
    an int field takes a whole float below 2^63 (3.0, not 3.7), a float field any int
    a float can hold; a float must be finite."""
    if kind is int and isinstance(value, float):
        ok = math.isfinite(value) and value.is_integer() and abs(value) < 2.0**63
        return int(value) if ok else None
    if kind is float:
        if isinstance(value, int):
            return float(value) if abs(value) <= 1.7976931348623157e308 else None
        return value if math.isfinite(value) else None
    return value


def _is_number(value: object) -> typing.TypeGuard[int | float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def settled(value: T, path: str = "") -> tuple[T, list[str]]:
    """``value`` (dataclasses, lists) with every string :func:`printable` and every number
    of its field's kind; a number outside its field's :class:`Bound` (or that cannot take
    the kind) becomes None. Returns the new value and what was left null, by path.

    What this leaves is what the validator accepts: a probe's impossible reading (a
    negative size, a NaN clock) becomes an unknown fact, not a document every other
    command would refuse.
    """
    if isinstance(value, str):
        return typing.cast(T, printable(value)), []
    if isinstance(value, list):
        return typing.cast(tuple[T, list[str]], _settled_list(value, path))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return typing.cast(tuple[T, list[str]], _settled_fields(value, path))
    return value, []


def _settled_list(value: list[object], path: str) -> tuple[list[object], list[str]]:
    """Each item settled; the same list when no item changed."""
    items, dropped = [], []
    for i, item in enumerate(value):
        kept, lost = settled(item, f"{path}[{i}]")
        items.append(kept)
        dropped += lost
    same = all(a is b for a, b in zip(items, value, strict=True))
    return (value if same else items), dropped


def _settled_fields(value: Any, path: str) -> tuple[Any, list[str]]:
    """Each field of dataclass ``value`` settled; the same object when none changed."""
    changes: dict[str, object] = {}
    dropped: list[str] = []
    for name, spec in field_specs(type(value)).items():
        item = getattr(value, name)
        where = f"{path}.{name}" if path else name
        if spec.kind is not None and _is_number(item):
            new = _settled_number(item, spec)
            if new is None:
                dropped.append(f"{where}={item!r}"[:120])
        else:
            new, lost = settled(item, where)
            dropped += lost
        if new is not item:
            changes[name] = new
    if not changes:
        return value, dropped
    return dataclasses.replace(value, **changes), dropped


def _settled_number(value: int | float, spec: FieldSpec) -> object:
    """``value`` as its field's kind, or None where it cannot be or breaks the bound."""
    assert spec.kind is not None
    number = _as_kind(value, spec.kind)
    if number is None or (spec.bound is not None and not spec.bound.admits(number)):
        return None
    return number


def to_json_value(value: object) -> object:
    """``value`` (dataclasses, lists, enums, scalars) as JSON-ready Python values.

    Fields keep their declared order, and a number takes its field's kind, as pydantic
    prints it: an ``int`` in a ``float`` field prints as ``45.0``, not ``45``. A pydantic
    model inside (the facts' ``bench``) prints as its own ``model_dump``.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        specs = field_specs(type(value))
        out: dict[str, object] = {}
        for name, spec in specs.items():
            item = getattr(value, name)
            if spec.kind is not None and _is_number(item) and type(item) is not spec.kind:
                item = spec.kind(item)
            out[name] = to_json_value(item)
        return out
    if isinstance(value, (list, tuple)):
        return [to_json_value(v) for v in value]
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, str) and not value.isascii():
        return printable(value)
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


def printable(text: str) -> str:
    """``text`` as valid Unicode: bytes that were not UTF-8 (a hostname or an environment
    value read with ``surrogateescape``) become U+FFFD, which JSON and pydantic accept."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return text
