"""The error hierarchy of hwadvisor and the exit codes every command shares.

Domain code raises these and never calls ``sys.exit``; the CLI's one boundary
(``hwadvisor.cli.main``, mapping in ``cli/_boundary.py``) turns each into one line on
stderr (and a JSON error document under ``--json``) and the matching exit code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """Process exit codes shared by every command (listed in docs/cli.md)."""

    OK = 0
    GATE_FAILED = 1
    BAD_INPUT = 2
    UNKNOWN = 3
    INTERRUPTED = 130


class HwadvisorError(Exception):
    """Base of every error hwadvisor reports to a user; carries its exit code."""

    exit_code: ExitCode = ExitCode.BAD_INPUT
    kind: str = "error"

    def __init__(self, message: str, *, where: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.where = where

    def line(self) -> str:
        """The one line shown on stderr: where the problem is, then what it is."""
        return f"{self.where}: {self.message}" if self.where else self.message


class UsageError(HwadvisorError):
    """A bad option or an impossible value on the command line."""

    kind = "usage"


class FactsError(HwadvisorError):
    """A facts, bench or advice document that cannot be read or is not valid."""

    kind = "facts"


class RulesError(HwadvisorError):
    """A rules file that is malformed or breaks the rule schema."""

    kind = "rules"


class CatalogError(HwadvisorError):
    """A catalog data file that is malformed or names an unknown entry."""

    kind = "catalog"


class OutputError(HwadvisorError):
    """An output file that could not be written (nothing half-written is left)."""

    kind = "output"


class UndeterminedError(HwadvisorError):
    """A fact the command needs is unknown (exit 3)."""

    exit_code = ExitCode.UNKNOWN
    kind = "undetermined"


class MissingDependencyError(UndeterminedError):
    """An optional dependency (torch for the microbenchmark) is not installed."""

    kind = "missing_dependency"
