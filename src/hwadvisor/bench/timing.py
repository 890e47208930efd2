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
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

from hwadvisor.bench.sizing import Measure, OutOfMemory, Shape, Timing, classify

#: IQR / median under which the confirming run stops early (``adaptive_autorange``).
STABLE_IQR = 0.05


def time_statement(
    fn: Callable[[], object],
    *,
    threads: int,
    sync: Callable[[], object] | None,
    min_run_s: float,
    max_run_s: float | None = None,
) -> Timing:
    """Time ``fn()`` (then ``sync()``) with the torch Timer on ``threads`` threads.

    ``max_run_s`` None: ``blocked_autorange(min_run_time=min_run_s)``; otherwise
    ``adaptive_autorange``, which repeats until the IQR is small or ``max_run_s`` is spent.
    """
    from torch.utils.benchmark import Timer

    stmt = "fn()" if sync is None else "fn(); sync()"
    timer = Timer(stmt=stmt, globals={"fn": fn, "sync": sync}, num_threads=max(1, threads))
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
        block_s=median * int(getattr(m, "number_per_run", 1) or 1),
    )


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

    def measure(shape: Shape, min_run_s: float, max_run_s: float | None) -> Timing:
        ctx = flags() if flags is not None else nullcontext()
        fn: Callable[[], object] | None = None
        try:
            with ctx, _quiet_errors():
                fn = build(shape)
                fn()  # once outside the timer: a dtype the device lacks fails here, fast
                if sync is not None:
                    sync()
                return time_statement(
                    fn, threads=threads, sync=sync, min_run_s=min_run_s, max_run_s=max_run_s
                )
        except OutOfMemory:
            fn = None
            release_memory(torch, device_kind, collect=True)
            raise
        finally:
            fn = None  # drop the inputs before the next size is allocated
            if device_kind != "cpu":
                release_memory(torch, device_kind)

    return measure
