"""Which figures can carry a conclusion alone: their spread, and the machine's load.

A figure is *unreliable* when its timed runs spread too much (IQR / median over
:data:`~hwadvisor.models.bench.RELIABLE_SPREAD`), when it has too few runs to know the
spread, or when the machine was busy while it was measured: with more runnable threads
than cores, every parallel region waits for a descheduled thread, so a CPU figure then
measures the neighbours as much as the hardware. Unreliable figures stay in the report,
marked ``reliable: false`` with their spread and the reason in ``note``: a reader may
still use them, as a band rather than a point.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from dataclasses import dataclass

from hwadvisor.bench.sizing import Reliability
from hwadvisor.models.bench import BenchResult, Derived, drifted

#: Load average per core above which the CPU figures are not trusted, and the verdicts
#: resting on them lose confidence (the same threshold as rule HW209).
BUSY_LOAD = 1.5
#: The closing re-timing of the run's first figure: at most this long, and only when
#: the budget still has it.
RECHECK_S = 0.1
#: The evidence ids that describe the run's conditions rather than compare its figures:
#: the load while it measured, and its first figure timed again at the end.
LOAD_OVER_THREADS, END_OVER_START = "cpu.load_over_threads", "cpu.end_over_start"
RUN_CONDITIONS = frozenset({LOAD_OVER_THREADS, END_OVER_START})


@dataclass(frozen=True)
class Load:
    """The 1-minute load average when the run started and when it ended."""

    start: float | None
    end: float | None = None

    def others(self, threads: int, elapsed_s: float) -> float | None:
        """The load other programs made: the higher reading, the run's own share removed.

        The end reading includes the benchmark's own threads, which the kernel's
        exponential 1-minute average has taken in as ``threads · (1 - e^(-t/60))``
        after ``t`` seconds; the start reading was taken before any of them ran.
        """
        end = self.end
        if end is not None:
            end = max(0.0, end - threads * (1.0 - math.exp(-elapsed_s / 60.0)))
        known = [v for v in (self.start, end) if v is not None]
        return round(max(known), 2) if known else None


def load_average() -> float | None:
    """The 1-minute load average (``uptime``), or None where the OS has none."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


#: Reads the load average; a seam so tests can say how busy the machine was.
LoadReader = Callable[[], "float | None"]


def busy_reason(load: float | None, cores: int | None) -> str | None:
    """Why the CPU figures are not trusted because of load, or None when the machine was calm.

    The 1-minute average counts every runnable thread of the machine (in a container,
    of the host), so ``load / cores`` over :data:`BUSY_LOAD` means the cores this
    process used were shared with other work while it measured.
    """
    if load is None or not cores or load / cores < BUSY_LOAD:
        return None
    return f"measured while the machine was busy (load average {load:.1f} on {cores} cores)"


def mark(result: BenchResult, reliability: Reliability) -> BenchResult:
    """``result`` with ``reliable`` and ``spread`` set, and why it is not trusted in ``note``."""
    reason, spread = reliability.reason, reliability.spread
    note = "; ".join([*([result.note] if result.note else []), *([reason] if reason else [])])
    return result.model_copy(
        update={
            "reliable": reason is None and result.reliable is not False,
            "spread": round(spread, 4) if spread is not None else None,
            "note": note or None,
        }
    )


def mark_busy(results: list[BenchResult], reason: str | None) -> list[BenchResult]:
    """The CPU figures marked unreliable for ``reason`` (a busy machine); others unchanged."""
    if reason is None:
        return results
    return [
        mark(r, Reliability(False, r.spread, reason)) if r.device == "cpu" else r for r in results
    ]


def drift(first: BenchResult, again: float) -> Derived:
    """The evidence that the machine's speed held (or did not) from the start to the end.

    ``first`` is the run's first CPU figure, ``again`` its value timed once more at the
    same size when every other figure was done.
    """
    ratio = again / first.value
    what = f"{first.kernel} {first.dtype} timed again at the end of the run"
    if drifted(ratio):
        text = (
            f"the machine's speed moved while measuring: {what} ran at "
            f"{again:,.0f} {first.unit} against {first.value:,.0f} at the start "
            f"({ratio:.2f}x), so figures taken at different moments disagree by as much; "
            "repeat the bench on a quiet machine"
        )
    else:
        text = f"{what}: {ratio:.2f}x its figure at the start (the machine's speed held)"
    return Derived(id=END_OVER_START, ratio=round(ratio, 3), text=text)
