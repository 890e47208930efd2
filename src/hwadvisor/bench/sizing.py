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


@dataclass(frozen=True)
class Reliability:
    """Whether a figure can carry a conclusion: its spread, and why not when it cannot."""

    reliable: bool
    spread: float | None
    reason: str | None = None


#: IQR / median above which a figure is not trusted: torch.utils.benchmark's own warning
#: threshold (``_IQR_WARN_THRESHOLD`` = 0.1 in torch/utils/benchmark/utils/common.py,
#: "This could indicate system fluctuation").
RELIABLE_SPREAD = 0.10
#: Timed blocks needed before a spread means anything: ``adaptive_autorange`` judges the
#: IQR only from more than 3 blocks, and ``Measurement`` prints no IQR below 4.
MIN_RUNS = 4
#: The most a kernel may run past its allotment to repeat its chosen size up to
#: :data:`MIN_RUNS` blocks (and never more than its allotment again): the budget is spent
#: on repeats, never on shrinking the size.
REPEAT_CAP_S = 1.0
#: ... but a kernel with a smaller allotment may still spend this much on its repeats.
REPEAT_FLOOR_S = 0.2
#: The shortest block the Timer makes for a fast statement (its overhead under 0.01 %).
BLOCK_S = 0.01

#: The least work (FLOPs) one call must do to stand for real layers, per kernel and
#: class of device: a figure measured below it describes call overheads, not the
#: hardware (a 128³ matmul on a busy 2-core VM read 0.47 GOP/s where 1024³ reads
#: 1,400). CPU matmul: 512³; conv2d: a ResNet stage-1 3×3 layer (64 channels, 56×56) at
#: batch 1 on a CPU, batch 8 × 128 channels on a GPU; GPU matmul: 2048³.
FLOOR_WORK: dict[tuple[str, str], float] = {
    ("matmul", "cpu"): 2.0 * 512**3,
    ("matmul", "gpu"): 2.0 * 2048**3,
    ("conv2d", "cpu"): 2.0 * 1 * 64 * 64 * 9 * 56 * 56,
    ("conv2d", "gpu"): 2.0 * 8 * 128 * 128 * 9 * 56 * 56,
    ("conv2d_backward", "cpu"): 4.0 * 1 * 64 * 64 * 9 * 56 * 56,
    ("conv2d_backward", "gpu"): 4.0 * 8 * 128 * 128 * 9 * 56 * 56,
}


def floor_index(
    ladder: Sequence[Shape], work: Callable[[Shape], float], kernel: str, device_kind: str
) -> int:
    """The first rung of ``ladder`` that does at least the floor's work (0 without a floor)."""
    least = FLOOR_WORK.get((kernel, "cpu" if device_kind == "cpu" else "gpu"))
    if least is None:
        return 0
    for i, shape in enumerate(ladder):
        if work(shape) >= least * 0.999:
            return i
    return len(ladder) - 1


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
    """The figure kept for one kernel: its shape and timing, and what was tried on the way."""

    shape: Shape
    timing: Timing
    tried: list[tuple[Shape, float]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def reliability(self) -> Reliability:
        """Whether the kept timing is steady enough for conclusions (:func:`assess`)."""
        return assess(self.timing)


#: Sizes within this fraction of the best throughput count as equally fast.
NEAR_BEST = 0.95


def predicted_cost(per_call_s: float, min_run_s: float) -> float:
    """Seconds one short measurement of a call taking ``per_call_s`` is expected to need.

    The timer first runs the statement to find a block size (at least one call, and about
    10 ms of calls for fast statements), then repeats blocks for at least ``min_run_s``:
    so a slow call costs about two calls, a fast one about ``min_run_s`` plus 10 ms.
    """
    return 1.2 * (max(per_call_s, 0.01) + max(min_run_s, per_call_s))


def repeats_cost(timing: Timing, runs: int = MIN_RUNS) -> float:
    """Seconds a repeat-until-stable measurement needs for ``runs`` blocks, and its set-up
    (one untimed call, then about one more block). The confirming run's blocks are about
    ``BLOCK_S`` long, or one call where a call takes longer
    (``bench.timing.time_statement``), whatever block the first measurement used."""
    block = max(timing.median_s, BLOCK_S)
    return 1.2 * (runs + 1) * block + timing.median_s


def _first_measurement(
    ladder: Sequence[Shape], measure: Measure, i: int, first: tuple[float, float | None]
) -> tuple[int, Timing, list[str]]:
    """Measure ``ladder[i]``, stepping down the ladder on out-of-memory."""
    notes: list[str] = []
    while True:
        try:
            return i, measure(ladder[i], first[0], first[1]), notes
        except OutOfMemory as exc:
            if i == 0:
                raise OutOfMemory(
                    f"out of memory even at the smallest size {list(ladder[0])}: {exc}"
                ) from exc
            notes.append(f"out of memory at {list(ladder[i])}; shrank")
            i -= 1


def _confirm(
    ladder: Sequence[Shape],
    measure: Measure,
    best_i: int,
    timing: Timing,
    budget: tuple[float, float],
    min_run_s: float,
    notes: list[str],
    past_share: bool = True,
) -> Timing:
    """Measure the chosen size again, longer, until the spread is small or time is up.

    ``budget`` is (seconds left of the allotment, the allotment). With time left it uses
    most of it; with none, it still repeats the size up to :data:`MIN_RUNS` blocks when
    that costs at most the allotment again (:data:`REPEAT_FLOOR_S` at least) and
    :data:`REPEAT_CAP_S`, since a figure whose spread is unknown cannot carry a
    conclusion; ``past_share`` False (a machine already busy) skips that.
    """
    left, allot_s = budget
    per_call = timing.median_s
    steady = assess(timing).reliable
    need = repeats_cost(timing)
    cap = min(REPEAT_CAP_S, max(allot_s, REPEAT_FLOOR_S)) if past_share else 0.0
    if left >= predicted_cost(per_call, min_run_s):
        max_run = max(left * 0.8, min(need, cap))
        min_run = min(left * 0.5, max(min_run_s, left * 0.25))
    elif not steady and need <= cap:
        max_run, min_run = need, min_run_s
        notes.append("repeated past its share of the budget to know the spread")
    else:
        if not steady and timing.runs < MIN_RUNS:
            notes.append(
                "its share of the budget spent, and not repeated past it (the run's "
                "budget spent, or the machine already busy)"
                if cap == 0.0
                else f"one call takes {per_call:.3g} s: too slow to repeat {MIN_RUNS} times "
                f"within {cap:.2g} s"
            )
        return timing
    try:
        return measure(ladder[best_i], min_run, max_run)
    except OutOfMemory:
        notes.append("out of memory on the confirming run; kept the first measurement")
        return timing


def adapt(
    ladder: Sequence[Shape],
    *,
    work: Callable[[Shape], float],
    measure: Measure,
    clock: Callable[[], float],
    allot_s: float,
    start: int = 0,
    floor: int = 0,
    explore_fraction: float = 0.6,
    min_run_s: float = 0.02,
    keep_growing: float = 0.85,
    repeat_past_share: bool = True,
) -> SizingOutcome:
    """Find a good size on ``ladder`` within ``allot_s`` seconds, then measure it longer.

    Starts at ``ladder[max(start, floor)]``: sizes below ``floor`` are too small to stand
    for real work and are only tried when the floor does not fit in memory (an
    out-of-memory steps down the ladder, raising :class:`OutOfMemory` below the
    smallest). Then grows one step at a time while the next size is predicted to fit
    the exploring share of the allotment, the throughput is still at least
    ``keep_growing`` of the best seen, and memory lasts. Finally the best size is
    measured again with the rest of the allotment, repeating until the spread is small
    (:func:`_confirm`; ``repeat_past_share`` lets it run past the allotment to know the
    spread): a slow or busy machine gets fewer sizes, never smaller ones.
    :class:`Unsupported` from ``measure`` propagates unchanged.
    """
    t0 = clock()
    explore_until = t0 + allot_s * explore_fraction
    until = t0 + allot_s
    tried: list[tuple[Shape, float]] = []
    timings: dict[int, Timing] = {}

    first_i = min(max(start, floor), len(ladder) - 1)
    # Nothing to grow into (a bandwidth buffer already far past the cache): measure once, long.
    single = first_i == len(ladder) - 1
    first_max = allot_s * 0.6 if single else None
    first_min = max(min_run_s, allot_s * 0.2) if single else min_run_s

    i, timings[first_i], notes = _first_measurement(
        ladder, measure, first_i, (first_min, first_max)
    )
    if i != first_i:
        timings[i] = timings.pop(first_i)
        if i < floor:
            notes.append(f"below the size floor {list(ladder[floor])}: it does not fit in memory")
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
        if now + predicted_cost(hopeful, min_run_s) + repeats_cost(Timing(flat, 0.0, 1)) > until:
            break  # no time left to repeat it until its spread is known: keep this size
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
    if not (single and assess(timing).reliable):
        timing = _confirm(
            ladder,
            measure,
            best_i,
            timing,
            (until - clock(), allot_s),
            min_run_s,
            notes,
            repeat_past_share,
        )
    return SizingOutcome(shape=ladder[best_i], timing=timing, tried=tried, notes=notes)
