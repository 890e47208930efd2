"""Timing and status bookkeeping for probes: one :class:`ProbeRecord` per source."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from hwadvisor.models.facts import ProbeRecord
from hwadvisor.models.plain import ProbeStatus


class ProbeSkip(Exception):
    """Raised inside a probe step to end it with a status other than ``ok``.

    ``absent`` (no such device or library), ``unsupported`` (not on this system),
    ``denied``, ``timeout``: the step's record gets the status and the reason.
    """

    def __init__(self, status: ProbeStatus, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


@dataclass
class Step:
    """A probe step in progress; the body may set ``source`` or downgrade ``status``."""

    name: str
    source: str | None = None
    status: ProbeStatus = ProbeStatus.OK
    error: str | None = None


@dataclass
class ProbeLog:
    """Collects the records of every probe step of one ``check`` run."""

    records: list[ProbeRecord] = field(default_factory=list)

    @contextmanager
    def step(self, name: str, source: str | None = None) -> Iterator[Step]:
        """Time a probe step; turn :class:`ProbeSkip` and any exception into a status.

        A bug or a surprise in one probe must never take the whole check down: the
        exception becomes ``error`` with its message, and the other probes go on.
        """
        st = Step(name=name, source=source)
        started = time.perf_counter()
        try:
            yield st
        except ProbeSkip as skip:
            st.status, st.error = skip.status, skip.reason
        except PermissionError as exc:
            st.status, st.error = ProbeStatus.DENIED, f"permission denied: {exc.filename or exc}"
        except Exception as exc:
            st.status, st.error = ProbeStatus.ERROR, f"{type(exc).__name__}: {exc}"
        elapsed = (time.perf_counter() - started) * 1000.0
        self.records.append(
            ProbeRecord(
                name=st.name,
                status=st.status,
                source=st.source,
                elapsed_ms=round(elapsed, 3),
                error=st.error,
            )
        )

    def add(self, record: ProbeRecord) -> None:
        """Append a record made elsewhere (the GPU child process reports its own)."""
        self.records.append(record)
