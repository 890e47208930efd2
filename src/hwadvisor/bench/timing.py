"""Timing through ``torch.utils.benchmark.Timer``, the only clock kernels are read with.

The Timer runs with ONE thread unless ``num_threads`` is given (the
``torch.utils.benchmark.Timer`` documentation: the default is one thread), so every call
passes the threads the figure is for. Accelerators are synchronised inside the timed
statement, because the Timer's own synchronisation only covers the current device, not
``cuda:1``.
"""

from __future__ import annotations

import gc
import math
import statistics
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from typing import Any

from hwadvisor.bench.devices import synchronizer
from hwadvisor.bench.kernels import KernelCase
from hwadvisor.bench.sizing import (
    BLOCK_S,
    MIN_RUNS,
    TIMER_OVERHEAD_S,
    OutOfMemory,
    OutOfTime,
    Shape,
    SizingOutcome,
    Timing,
    classify,
)
from hwadvisor.models.bench import shape_text

#: IQR / median under which a figure's timing stops early, once it has MIN_RUNS blocks.
STABLE_IQR = 0.05
#: The most timed blocks a figure takes when they do not agree: more would spend the
#: budget of the figures after it on a machine that is not steady.
MAX_RUNS = 10
#: A first call shorter than this is followed by a second untimed one, whose time sizes
#: the blocks: a first call pays for lazy set-up (threads, kernels chosen, pages mapped).
SECOND_WARM_S = 0.05


def time_statement(
    fn: Callable[[], object],
    *,
    threads: int,
    sync: Callable[[], object] | None,
    min_run_s: float,
    max_run_s: float | None = None,
    per_call_s: float | None = None,
) -> Timing:
    """Time ``fn()`` (then ``sync()``) with the torch Timer on ``threads`` threads.

    Without ``per_call_s`` (an earlier call's time): ``blocked_autorange(min_run_s)``.
    With it, blocks repeat until they agree or the time is up (:func:`_short_blocks` for
    a short call; one call a block, ``adaptive_autorange``, for a longer one).
    """
    from torch.utils.benchmark import Timer

    stmt = "fn()" if sync is None else "fn(); sync()"
    timer = Timer(stmt=stmt, globals={"fn": fn, "sync": sync}, num_threads=max(1, threads))
    limit = math.inf if max_run_s is None else max_run_s
    if per_call_s is not None and 0 < per_call_s < BLOCK_S:
        return _short_blocks(timer, per_call_s, min_run_s, limit)
    if per_call_s is None:
        m = timer.blocked_autorange(min_run_time=min_run_s)
    else:
        # adaptive_autorange stops once its blocks have passed max_run_time: one block
        # over, and its untimed call first.
        most = max(0.5 * per_call_s, min(limit - 2 * per_call_s, (MAX_RUNS - 1) * per_call_s))
        m = timer.adaptive_autorange(STABLE_IQR, min_run_time=min_run_s, max_run_time=most)
    return Timing(median_s=float(m.median), iqr_s=float(m.iqr), runs=len(m.times))


def _short_blocks(timer: Any, per_call_s: float, min_run_s: float, max_run_s: float) -> Timing:
    """Blocks of about :data:`BLOCK_S` (``Timer.timeit``) until :data:`MIN_RUNS` of them
    agree within :data:`STABLE_IQR` after ``min_run_s``, or there are :data:`MAX_RUNS`,
    or the next would pass ``max_run_s`` (one block at least). Each block's calls follow
    the last block's per-call time, so a first call slowed by lazy set-up costs nothing.

    ``adaptive_autorange`` sizes its blocks by powers of ten until one takes 10 ms with
    the Timer's overhead under 0.01 %: a 60 us call gets blocks of 1,000 calls (60 ms).
    ``timeit`` runs 1 % of the block (2 calls at least) untimed first.
    """
    per_call: list[float] = []
    spent, each = 0.0, per_call_s
    while True:
        number = max(1, math.ceil(BLOCK_S / each))
        block = float(timer.timeit(number).raw_times[0])
        each = block / number
        spent += block + 2 * each
        per_call.append(each)
        if len(per_call) >= MAX_RUNS or spent + block > max_run_s:
            break
        if len(per_call) < MIN_RUNS or spent < min_run_s:
            continue
        if _iqr(per_call) <= STABLE_IQR * statistics.median(per_call):
            break
    iqr = _iqr(per_call) if len(per_call) > 1 else 0.0
    return Timing(median_s=statistics.median(per_call), iqr_s=iqr, runs=len(per_call))


def _iqr(values: list[float]) -> float:
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q3 - q1


def release_memory(torch: Any, device_kind: str, *, collect: bool = False) -> None:
    """Free what a failed or finished size left behind, so the next size can fit.

    Tensors go with their last reference; ``collect`` also runs the garbage collector,
    which takes ~0.4 s with torch loaded, so only after an out-of-memory.
    """
    if collect:
        gc.collect()
    backend = getattr(torch, device_kind, None) if device_kind != "cpu" else None
    if backend is not None and (device_kind != "cuda" or torch.cuda.is_available()):
        backend.empty_cache()


@contextmanager
def _quiet_errors() -> Iterator[None]:
    """Re-raise a kernel's failure as OutOfMemory / Unsupported (KeyboardInterrupt passes)."""
    try:
        yield
    except Exception as exc:
        mapped = classify(exc)
        if mapped is exc:
            raise
        raise mapped from exc


def _untimed(fn: Callable[[], object], sync: Callable[[], object] | None, clock: Callable[[], float]) -> float:  # fmt: skip
    """Seconds one call of ``fn`` took, outside the timer (it only sizes the blocks)."""
    before = clock()
    fn()
    if sync is not None:
        sync()
    return max(clock() - before, 1e-9)


def _time_shape(
    torch: Any, case: KernelCase, shape: Shape, deadline: float, clock: Callable[[], float]
) -> Timing:
    """Make the inputs of ``shape``, run it once or twice outside the timer (a dtype the
    device lacks fails here, fast, and the call's time sizes the blocks), then time it in
    what is left until ``deadline``; :class:`OutOfTime` when not even one block fits."""
    sync = synchronizer(torch, case.target)
    with case.flags() if case.flags is not None else nullcontext(), _quiet_errors():
        fn = case.build(shape)
        per_call = _untimed(fn, sync, clock)
        if per_call < SECOND_WARM_S:
            per_call = _untimed(fn, sync, clock)
        if clock() + per_call > deadline:
            raise OutOfTime(f"{shape_text(case.kernel, shape)}: no time left in the budget")
        left = deadline - clock() - TIMER_OVERHEAD_S
        min_run = min(0.1, max(0.0, left) * 0.3)
        return time_statement(
            fn,
            threads=case.target.threads,
            sync=sync,
            min_run_s=min_run,
            max_run_s=max(left, 0.0),
            per_call_s=per_call,
        )


def measure_case(
    torch: Any, case: KernelCase, allot_s: float, clock: Callable[[], float]
) -> SizingOutcome:
    """Time ``case`` at ``case.ladder[case.start]`` within about ``allot_s`` seconds,
    stepping down its ladder on out-of-memory (:class:`OutOfMemory` below the smallest)."""
    deadline = clock() + allot_s
    notes: list[str] = []
    i = case.start
    while True:
        shape = case.ladder[i]
        try:
            return SizingOutcome(shape, _time_shape(torch, case, shape, deadline, clock), notes=notes)  # fmt: skip
        except OutOfMemory as exc:
            release_memory(torch, case.target.kind, collect=True)
            if i == 0:
                raise OutOfMemory(f"out of memory even at {list(shape)}: {exc}") from exc
            notes.append(f"out of memory at {list(shape)}; shrank")
            i -= 1
        finally:
            if case.target.kind != "cpu":
                release_memory(torch, case.target.kind)
