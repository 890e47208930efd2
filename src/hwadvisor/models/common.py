"""Pieces every document shares: the schema version, the tool stamp, probe records."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from hwadvisor import __version__
from hwadvisor.errors import FactsError
from hwadvisor.models.plain import SCHEMA_MAJOR, SCHEMA_VERSION, ProbeStatus

__all__ = [
    "SCHEMA_MAJOR",
    "SCHEMA_VERSION",
    "Document",
    "ProbeRecord",
    "ProbeStatus",
    "ToolInfo",
    "Versioned",
    "check_schema_version",
    "validate_document",
]


class Document(BaseModel):
    """Base of the documents hwadvisor writes and reads back.

    Unknown fields are ignored rather than refused (SPEC §3: a document from a newer
    minor release must still load); models are frozen once built.
    """

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


class ToolInfo(Document):
    """Which program wrote a document."""

    name: str = "hwadvisor"
    version: str = __version__


class ProbeRecord(Document):
    """What one probe did: its status, where it read from, how long it took, why it failed."""

    name: str
    status: ProbeStatus
    source: str | None = None
    elapsed_ms: float | None = Field(None, ge=0, allow_inf_nan=False)
    error: str | None = None


class Versioned(Document):
    """A top-level document: schema version and tool stamp."""

    schema_version: str = SCHEMA_VERSION
    tool: ToolInfo = Field(default_factory=ToolInfo)


D = TypeVar("D", bound=Versioned)


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


def validate_document(model: type[D], data: dict[str, Any], *, where: str, what: str) -> D:
    """Check the version, then validate ``data`` as ``model``; errors name the field."""
    check_schema_version(data, where=where, what=what)
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first["loc"]) or "(document)"
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise FactsError(f"invalid {what}: field {loc}: {first['msg']}{more}", where=where) from exc
    except RecursionError as exc:
        raise FactsError(f"{what} is nested too deeply", where=where) from exc
