"""A finding: one rule that fired, with its advice filled in (in advice and estimate documents)."""

from __future__ import annotations

from enum import Enum
from typing import Any

from pydantic import Field

from hwadvisor.models.common import Document


class Severity(str, Enum):
    """How much a finding matters; ``critical`` means the job will fail as set up."""

    INFO = "info"
    WARNING = "warning"
    CRITICAL = "critical"


class Finding(Document):
    """One rule that fired: its advice filled in with this machine's values."""

    rule: str
    severity: Severity
    title: str
    message: str
    source: list[str] = Field(description="ids of the source documents' claims the advice rests on")
    evidence: dict[str, Any] = Field(
        default_factory=dict, description="fact or measurement path: value"
    )
