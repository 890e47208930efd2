"""Timing through ``torch.utils.benchmark.Timer``, the only clock kernels are read with.

The Timer warms up, picks a block size so its own overhead is negligible, and reports
median and IQR. It runs with ONE thread unless ``num_threads`` is given (the
``torch.utils.benchmark.Timer`` documentation: the default is one thread; on the
project's 2-core machine an fp32 2048³ matmul measured 165 GFLOP/s at 1 thread, 308 at
2), so every call passes the usable cores. Accelerators are synchronised inside the timed
statement, because the Timer's own synchronisation only covers the current device, not
``cuda:1``.
"""

from __future__ import annotations

import gc
import math
import statistics
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from hwadvisor.bench.sizing import (
    BLOCK_S,
    MIN_RUNS,
    Measure,
    OutOfMemory,
    Shape,
    Timing,
    classify,
)

#: IQR / median under which the confirming run stops early (``adaptive_autorange``).
STABLE_IQR = 0.05


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

    ``max_run_s`` None: ``blocked_autorange(min_run_time=min_run_s)``; otherwise it repeats
    until the IQR is small or ``max_run_s`` is spent: in blocks of about ``BLOCK_S`` when
    ``per_call_s`` (an earlier measurement's per-call time) says a call is shorter than
    that (:func:`_short_blocks`), else with ``adaptive_autorange``.
    """
    from torch.utils.benchmark import Timer

    stmt = "fn()" if sync is None else "fn(); sync()"
    timer = Timer(stmt=stmt, globals={"fn": fn, "sync": sync}, num_threads=max(1, threads))
    if max_run_s is not None and per_call_s is not None and 0 < per_call_s < BLOCK_S:
        return _short_blocks(timer, per_call_s, min_run_s, max_run_s)
    if max_run_s is None:
        m = timer.blocked_autorange(min_run_time=min_run_s)
    else:
        m = timer.adaptive_autorange(
            threshold=STABLE_IQR, min_run_time=min_run_s, max_run_time=max_run_s
        )
    median = float(m.median)
    return Timing(
        median_s=median,
        iqr_s=float(m.iqr),
        runs=len(m.times),
    )


def _short_blocks(timer: Any, per_call_s: float, min_run_s: float, max_run_s: float) -> Timing:
    """Repeat blocks of about ``BLOCK_S`` (``Timer.timeit``) until at least ``MIN_RUNS``
    of them agree within ``STABLE_IQR`` after ``min_run_s``, or ``max_run_s`` is spent.

    ``adaptive_autorange`` sizes its blocks by powers of ten until one takes 10 ms with
    the Timer's overhead under 0.01 %, or more than 50 ms: a 60 us call gets blocks of
    1,000 calls (60 ms), and the four blocks a spread needs cost a quarter of a second. A
    block of ``BLOCK_S`` keeps the Timer's overhead (about 1 us) near 0.01 % and costs a
    sixth of that. ``timeit`` runs 1 % of the block (2 calls at least) untimed first.
    """
    number = max(1, math.ceil(BLOCK_S / per_call_s))
    per_call: list[float] = []
    spent = 0.0
    while True:
        block = float(timer.timeit(number).raw_times[0])
        spent += block
        per_call.append(block / number)
        if len(per_call) < MIN_RUNS:
            continue
        median = statistics.median(per_call)
        q1, _, q3 = statistics.quantiles(per_call, n=4, method="inclusive")
        if spent >= max_run_s or (spent >= min_run_s and (q3 - q1) <= STABLE_IQR * median):
            return Timing(median_s=median, iqr_s=q3 - q1, runs=len(per_call))


def release_memory(torch: Any, device_kind: str, *, collect: bool = False) -> None:
    """Free what a failed or finished size left behind, so the next size can fit.

    Tensors go with their last reference; ``collect`` also runs the garbage collector,
    which takes ~0.4 s with torch loaded, so only after an out-of-memory.
    """
    if collect:
        gc.collect()
    if device_kind == "cuda" and torch.cuda.is_available():
        torch.cuda.empty_cache()
    elif device_kind == "mps" and hasattr(torch, "mps"):
        torch.mps.empty_cache()
    elif device_kind == "xpu" and hasattr(torch, "xpu"):
        torch.xpu.empty_cache()


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


def make_measure(
    torch: Any,
    build: Callable[[Shape], Callable[[], object]],
    *,
    device_kind: str,
    threads: int,
    sync: Callable[[], object] | None,
    flags: Callable[[], AbstractContextManager[object]] | None = None,
) -> Measure:
    """A ``measure(shape, min_run_s, max_run_s)`` for :func:`~hwadvisor.bench.sizing.adapt`.

    Each call builds the inputs for ``shape``, runs the statement once outside the timer
    (so an unsupported dtype fails fast with its reason), times it, and frees the inputs.
    """

    # Each shape's last per-call time: the confirming run's blocks are sized from it.
    seen: dict[Shape, float] = {}

    def measure(shape: Shape, min_run_s: float, max_run_s: float | None) -> Timing:
        ctx = flags() if flags is not None else nullcontext()
        fn: Callable[[], object] | None = None
        try:
            with ctx, _quiet_errors():
                fn = build(shape)
                fn()  # once outside the timer: a dtype the device lacks fails here, fast
                if sync is not None:
                    sync()
                timing = time_statement(
                    fn,
                    threads=threads,
                    sync=sync,
                    min_run_s=min_run_s,
                    max_run_s=max_run_s,
                    per_call_s=seen.get(shape),
                )
                seen[shape] = timing.median_s
                return timing
        except OutOfMemory:
            fn = None
            release_memory(torch, device_kind, collect=True)
            raise
        finally:
            fn = None  # drop the inputs before the next size is allocated
            if device_kind != "cpu":
                release_memory(torch, device_kind)

    return measure
