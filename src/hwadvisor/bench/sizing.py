"""Adaptive problem sizes under a time budget: grow while fast, back off on out-of-memory.

This module knows nothing of torch: a kernel is a ladder of shapes, a ``work`` function
(FLOPs, ops or bytes per call) and a ``measure`` function that times one shape. Tests
drive it with a fake ``measure`` (one that raises :class:`OutOfMemory` at a given size)
and a fake clock, so the budget and back-off logic is checked without timing anything.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

Shape = tuple[int, ...]


class OutOfMemory(Exception):
    """The device ran out of memory at this size; a smaller one may fit."""


class Unsupported(Exception):
    """The kernel cannot run at this dtype on this device; ``reason`` says why."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class Timing:
    """What the timer found for one shape: median and IQR of the per-call time."""

    median_s: float
    iqr_s: float
    runs: int


#: ``measure(shape, min_run_s, max_run_s)``: time one shape. ``max_run_s`` None asks for a
#: short fixed measurement; a number asks to repeat until stable or that much time is spent.
Measure = Callable[[Shape, float, "float | None"], Timing]


def classify(exc: BaseException) -> Exception:
    """Turn an exception raised by a kernel into :class:`OutOfMemory` or :class:`Unsupported`.

    torch reports a CUDA out-of-memory as ``torch.cuda.OutOfMemoryError`` (a RuntimeError)
    and a failed host allocation as a RuntimeError naming the allocator; a dtype a device
    cannot do comes as RuntimeError / NotImplementedError / TypeError with the reason.
    Anything else (a bug, KeyboardInterrupt) is returned unchanged for the caller to raise.
    """
    text = str(exc).strip()
    lowered = text.lower()
    if isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError":
        return OutOfMemory(text.splitlines()[0] if text else "out of memory")
    if "out of memory" in lowered or "can't allocate memory" in lowered:
        return OutOfMemory(text.splitlines()[0])
    if isinstance(exc, (RuntimeError, NotImplementedError, TypeError, ValueError)):
        first = text.splitlines()[0] if text else type(exc).__name__
        return Unsupported(first[:200])
    return exc if isinstance(exc, Exception) else RuntimeError(text)


@dataclass
class TimeBudget:
    """The run's time budget, read from an injectable clock (a fake one in tests)."""

    total_s: float
    clock: Callable[[], float]
    started: float | None = None

    def __post_init__(self) -> None:
        if self.started is None:
            self.started = self.clock()

    def elapsed(self) -> float:
        """Seconds since the run started."""
        assert self.started is not None
        return self.clock() - self.started

    def remaining(self) -> float:
        """Seconds left, never negative."""
        return max(0.0, self.total_s - self.elapsed())

    def share(self, weight: float, weights_left: float) -> float:
        """This item's part of what is left, in proportion to its weight.

        Recomputed before every item, so time one kernel did not use flows to the next.
        """
        if weights_left <= 0:
            return self.remaining()
        return self.remaining() * weight / weights_left


@dataclass
class SizingOutcome:
    """The figure kept for one kernel: its shape and timing, and what was tried on the way."""

    shape: Shape
    timing: Timing
    tried: list[tuple[Shape, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


#: Sizes within this fraction of the best throughput count as equally fast.
NEAR_BEST = 0.95


def predicted_cost(per_call_s: float, min_run_s: float) -> float:
    """Seconds one short measurement of a call taking ``per_call_s`` is expected to need.

    The timer first runs the statement to find a block size (at least one call, and about
    10 ms of calls for fast statements), then repeats blocks for at least ``min_run_s``:
    so a slow call costs about two calls, a fast one about ``min_run_s`` plus 10 ms.
    """
    return 1.2 * (max(per_call_s, 0.01) + max(min_run_s, per_call_s))


def adapt(
    ladder: Sequence[Shape],
    *,
    work: Callable[[Shape], float],
    measure: Measure,
    clock: Callable[[], float],
    allot_s: float,
    start: int = 0,
    explore_fraction: float = 0.6,
    min_run_s: float = 0.02,
    keep_growing: float = 0.85,
) -> SizingOutcome:
    """Find a good size on ``ladder`` within ``allot_s`` seconds, then measure it longer.

    Starts at ``ladder[start]``; an out-of-memory there steps down the ladder (raising
    :class:`OutOfMemory` below the smallest). Then grows one step at a time while the
    next size is predicted to fit the exploring share of the allotment, the throughput
    is still at least ``keep_growing`` of the best seen, and memory lasts. Finally the
    best size is measured again with the rest of the allotment (repeating until stable).
    :class:`Unsupported` from ``measure`` propagates unchanged.
    """
    t0 = clock()
    explore_until = t0 + allot_s * explore_fraction
    until = t0 + allot_s
    notes: list[str] = []
    tried: list[tuple[Shape, float]] = []
    timings: dict[int, Timing] = {}

    # Nothing to grow into (a bandwidth buffer already far past the cache): measure once, long.
    single = start == len(ladder) - 1
    first_max = allot_s * 0.6 if single else None
    first_min = max(min_run_s, allot_s * 0.2) if single else min_run_s

    i = start
    while True:
        try:
            timings[i] = measure(ladder[i], first_min, first_max)
            break
        except OutOfMemory as exc:
            if i == 0:
                raise OutOfMemory(
                    f"out of memory even at the smallest size {list(ladder[0])}: {exc}"
                ) from exc
            notes.append(f"out of memory at {list(ladder[i])}; shrank")
            i -= 1
    tried.append((ladder[i], work(ladder[i]) / timings[i].median_s))

    def rate(k: int) -> float:
        return work(ladder[k]) / timings[k].median_s

    # After a shrink the next size up is known not to fit: no growing back into it.
    while not notes and i + 1 < len(ladder):
        best = max(rate(k) for k in timings)
        if rate(i) < keep_growing * best:
            break  # past the peak: bigger sizes only cost time
        flat = timings[i].median_s * work(ladder[i + 1]) / work(ladder[i])
        # Throughput usually rises with size (small calls are latency-bound): expect the
        # rise just seen to go on (from a single point, 2x) when filling the exploring
        # share, but never start a size that would overrun the whole allotment even at
        # today's throughput.
        growth = rate(i) / rate(i - 1) if i - 1 in timings else 2.0
        hopeful = flat / min(4.0, max(1.0, growth))
        now = clock()
        if now + predicted_cost(hopeful, min_run_s) > explore_until:
            break
        if now + predicted_cost(flat, min_run_s) > until:
            break
        try:
            timings[i + 1] = measure(ladder[i + 1], min_run_s, None)
        except OutOfMemory:
            notes.append(f"out of memory at {list(ladder[i + 1])}; kept {list(ladder[i])}")
            break
        i += 1
        tried.append((ladder[i], rate(i)))

    # Among sizes about as fast as the best, keep the largest: it is steadier from run to
    # run and closer to real layers; a noisy few percent should not flip the choice.
    top = max(rate(k) for k in timings)
    best_i = max(k for k in timings if rate(k) >= NEAR_BEST * top)
    timing = timings[best_i]
    left = until - clock()
    if not single and left >= predicted_cost(timing.median_s, min_run_s):
        # The confirming run: longer, repeated until the IQR is small or time is up.
        try:
            timing = measure(
                ladder[best_i], min(left * 0.5, max(min_run_s, left * 0.25)), left * 0.8
            )
        except OutOfMemory:
            notes.append("out of memory on the confirming run; kept the first measurement")
    return SizingOutcome(shape=ladder[best_i], timing=timing, tried=tried, notes=notes)
