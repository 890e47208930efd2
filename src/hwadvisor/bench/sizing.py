"""The budget's arithmetic, and what a measurement found: no torch here.

A figure's cost is foretold before it runs (:func:`cost`): making its inputs, two calls
outside the timer, and :data:`MIN_RUNS` timed blocks. The runner measures a figure only
when that cost fits the time left, so a short or busy run measures fewer figures and
never runs longer. Tests drive the runner with a fake clock and canned timings.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from hwadvisor.models.bench import RELIABLE_SPREAD

Shape = tuple[int, ...]

#: Timed blocks needed before a spread means anything: ``adaptive_autorange`` judges the
#: IQR only from more than 3 blocks, and ``Measurement`` prints no IQR below 4.
MIN_RUNS = 4
#: The shortest block the Timer times for a fast statement (its overhead near 0.01 %).
BLOCK_S = 0.01
#: Seconds a Timer costs beyond its calls (compiling its statement, its warm-up calls).
TIMER_OVERHEAD_S = 0.005


class OutOfMemory(Exception):
    """The device ran out of memory at this size; a smaller one may fit."""


class Unsupported(Exception):
    """The kernel cannot run at this dtype on this device; its message says why."""


class OutOfTime(Exception):
    """A figure's calls turned out slower than foreseen: not even one timed block fits."""


@dataclass(frozen=True)
class Timing:
    """What the timer found for one shape: median and IQR of the per-call time."""

    median_s: float
    iqr_s: float
    runs: int


def classify(exc: BaseException) -> Exception:
    """Turn an exception raised by a kernel into :class:`OutOfMemory` or :class:`Unsupported`.

    torch reports a CUDA out-of-memory as ``torch.cuda.OutOfMemoryError`` (a RuntimeError)
    and a failed host allocation as a RuntimeError naming the allocator; a dtype a device
    cannot do comes as RuntimeError / NotImplementedError / TypeError with the reason.
    Anything else (a bug, KeyboardInterrupt) is returned unchanged for the caller to raise.
    """
    text = str(exc).strip()
    lowered = text.lower()
    memory = isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError"
    if memory or "out of memory" in lowered or "can't allocate memory" in lowered:
        return OutOfMemory(text.splitlines()[0] if text else "out of memory")
    if isinstance(exc, (RuntimeError, NotImplementedError, TypeError, ValueError)):
        first = text.splitlines()[0] if text else type(exc).__name__
        return Unsupported(first[:200])
    return exc if isinstance(exc, Exception) else RuntimeError(text)


@dataclass
class TimeBudget:
    """The run's time budget, read from an injectable clock (a fake one in tests)."""

    total_s: float
    clock: Callable[[], float]
    started: float

    def elapsed(self) -> float:
        """Seconds since the run started."""
        return self.clock() - self.started

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.total_s - self.elapsed())

    def share(self, weight: float, weights_left: float) -> float:
        """This item's part of what is left, in proportion to its weight.

        Recomputed before every item, so time one figure did not use flows to the next.
        """
        if weights_left <= 0:
            return self.remaining()
        return self.remaining() * min(1.0, weight / weights_left)


def cost(per_call_s: float, setup_s: float = 0.0, runs: int = MIN_RUNS) -> float:
    """Seconds one figure is foreseen to take: ``setup_s`` to make its inputs, two calls
    outside the timer, and ``runs`` timed blocks (each :data:`BLOCK_S` or one call,
    whichever is longer; a block of one call costs one more untimed call in the Timer)."""
    block = max(per_call_s, BLOCK_S)
    extra = per_call_s if per_call_s >= BLOCK_S else 0.0
    return setup_s + 2 * per_call_s + runs * block + extra + TIMER_OVERHEAD_S


@dataclass(frozen=True)
class Reliability:
    """Whether a figure can carry a conclusion: its spread, and why not when it cannot."""

    reliable: bool
    spread: float | None
    reason: str | None = None


def assess(timing: Timing, threshold: float = RELIABLE_SPREAD) -> Reliability:
    """Whether ``timing`` is steady enough to draw conclusions from.

    The spread is IQR / median of the timed blocks; with fewer than :data:`MIN_RUNS`
    blocks it is unknown, and the figure is not trusted either.
    """
    if timing.median_s <= 0:
        return Reliability(False, None, "no positive time was measured")
    if timing.runs < MIN_RUNS:
        return Reliability(
            False,
            None,
            f"only {timing.runs} timed run{'s' if timing.runs != 1 else ''}: "
            f"too few to know the spread (at least {MIN_RUNS})",
        )
    spread = timing.iqr_s / timing.median_s
    if spread > threshold:
        return Reliability(
            False,
            spread,
            f"spread (IQR / median) {spread:.0%}, over {threshold:.0%}: the machine was not steady",
        )
    return Reliability(True, spread)


@dataclass
class SizingOutcome:
    """The figure kept for one case: its shape and timing, and notes on how it was got."""

    shape: Shape
    timing: Timing
    notes: list[str] = field(default_factory=list)

    @property
    def reliability(self) -> Reliability:
        """Whether the kept timing is steady enough for conclusions (:func:`assess`)."""
        return assess(self.timing)
