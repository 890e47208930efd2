"""The pydantic base of the documents other than facts, and reading any document back.

``Document`` and ``Versioned`` (schema version and tool stamp) are the base of the bench,
advice, estimate and rules documents; the facts are dataclasses of their own
(:mod:`hwadvisor.models.facts`, with their ``ProbeRecord``).
:func:`validate_document` checks the version and turns a validation error into one line
naming the field, for every document alike.
"""

from __future__ import annotations

from typing import Any, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hwadvisor.errors import FactsError
from hwadvisor.models.bounds import show, text_problem
from hwadvisor.models.plain import SCHEMA_MAJOR, SCHEMA_VERSION, ProbeStatus, ToolInfo

__all__ = [
    "SCHEMA_MAJOR",
    "SCHEMA_VERSION",
    "Document",
    "ProbeStatus",
    "ToolInfo",
    "Versioned",
    "check_schema_version",
    "validate_document",
]


class Document(BaseModel):
    """Base of the documents hwadvisor writes and reads back.

    Unknown fields are ignored rather than refused (docs/json.md: a document from a newer
    minor release must still load); models are frozen once built.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class Versioned(Document):
    """A top-level document: schema version and tool stamp."""

    schema_version: str = SCHEMA_VERSION
    tool: ToolInfo = Field(default_factory=ToolInfo)


D = TypeVar("D", covariant=True)


class Validates(Protocol[D]):
    """A document class: a pydantic model, or a facts dataclass (``models.facts.Part``)."""

    def model_validate(self, obj: Any) -> D:
        """``obj`` validated into the document; raises pydantic's ``ValidationError``."""
        ...


def check_schema_version(data: dict[str, Any], *, where: str, what: str) -> None:
    """Refuse a document of another major schema version with one clear line."""
    raw = data.get("schema_version")
    if not isinstance(raw, str):
        raise FactsError(
            f"{what} has no schema_version string; is it hwadvisor output?", where=where
        )
    major, _, _ = raw.partition(".")
    if not (major.isascii() and major.isdigit()):
        raise FactsError(f"{what} schema_version {raw!r} is not MAJOR.MINOR", where=where)
    if int(major) != SCHEMA_MAJOR:
        raise FactsError(
            f"{what} has schema_version {raw}; this hwadvisor reads major version {SCHEMA_MAJOR}",
            where=where,
        )


def validate_document(model: Validates[D], data: dict[str, Any], *, where: str, what: str) -> D:
    """Check the version, then validate ``data`` as ``model``; errors name the field.

    Every string must be valid Unicode (a lone surrogate, which a JSON ``\\ud800`` escape
    decodes to, cannot be printed or written) and every number within its field's limit
    (:mod:`hwadvisor.models.bounds`, in the models' types).
    """
    check_schema_version(data, where=where, what=what)
    bad = text_problem(data)
    if bad is not None:
        raise FactsError(
            f"invalid {what}: field {bad}: not valid Unicode (a lone surrogate)", where=where
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(document)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise FactsError(
            f"invalid {what}: field {loc}: {error_text(first)}{more}", where=where
        ) from exc
    except RecursionError as exc:
        raise FactsError(f"{what} is nested too deeply", where=where) from exc


#: Pydantic's errors that break a limit (of :mod:`hwadvisor.models.bounds`): the line adds the value.
_RANGE = frozenset({"less_than_equal", "less_than", "greater_than_equal", "greater_than"})


def error_text(error: Any) -> str:
    """One pydantic error as a short phrase: its own message, and for a number out of
    range the value too (a 5,000-digit number as its digit count)."""
    if error["type"] not in _RANGE:
        return str(error["msg"])
    return f"{error['msg']}, got {show(error.get('input'))}"
