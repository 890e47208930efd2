"""A saved report as the exporters see it: the facts, their bench, and any verdicts.

A report is a facts document (``hwadvisor check --json``), which may carry a ``bench``
report and one or more recommendations (``recommend --json`` documents, under
``advice``, ``recommendation`` or ``recommendations``). Only the verdict of a
recommendation is used here, read leniently, because the advice model belongs to the
rule engine and may gain fields.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwadvisor.models.bench import BenchReport
from hwadvisor.models.facts import Facts, validate_facts

#: Keys under which a facts document may carry recommendations.
ADVICE_KEYS = ("advice", "recommendation", "recommendations")

#: Device classes a verdict may name (the advice document's ``verdict.device``).
VERDICT_DEVICES = ("cpu", "gpu", "multi_gpu")


@dataclass(frozen=True)
class SavedVerdict:
    """The part of a recommendation the exporters use."""

    scenario: str | None
    device: str
    fits_here: bool | None


@dataclass(frozen=True)
class Report:
    """One machine's facts (with its bench, if measured) and the verdicts saved with it."""

    facts: Facts
    verdicts: tuple[SavedVerdict, ...] = ()
    source: str = "probe"

    @property
    def bench(self) -> BenchReport | None:
        """The microbenchmark report carried by the facts, if any."""
        return self.facts.bench


def _verdicts(data: dict[str, Any]) -> tuple[SavedVerdict, ...]:
    found: list[SavedVerdict] = []
    for key in ADVICE_KEYS:
        raw = data.get(key)
        items = raw if isinstance(raw, list) else [raw]
        for item in items:
            if not isinstance(item, dict):
                continue
            verdict = item.get("verdict")
            if not isinstance(verdict, dict) or verdict.get("device") not in VERDICT_DEVICES:
                continue
            fits = verdict.get("fits_here")
            scenario = item.get("scenario")
            found.append(
                SavedVerdict(
                    scenario=scenario if isinstance(scenario, str) else None,
                    device=str(verdict["device"]),
                    fits_here=fits if isinstance(fits, bool) else None,
                )
            )
    return tuple(found)


def report_from_data(data: dict[str, Any], *, where: str) -> Report:
    """Validate a facts document and pick up the verdicts saved beside it."""
    facts = validate_facts(data, where=where, what="facts report")
    return Report(facts=facts, verdicts=_verdicts(data), source=where)


def load_report(path: str | Path) -> Report:
    """Read a saved report; any problem is one :class:`FactsError` line naming the file."""
    from hwadvisor.io import read_json_document

    data = read_json_document(path, what="facts report")
    return report_from_data(data, where=str(path))


def probe_report(*, timeout: float | None = None) -> Report:
    """Probe this machine now (no benchmark: that is ``check --bench``'s job)."""
    from hwadvisor.probe import DEFAULT_TIMEOUT_S, probe_machine

    facts = probe_machine(timeout=DEFAULT_TIMEOUT_S if timeout is None else timeout)
    return Report(facts=facts, source="probe")
