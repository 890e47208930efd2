"""One kernel case the bench measures: what it runs, at which sizes, and the work per call.

Its own module so that both the kernel tables (``bench.kernels``) and the memory-bound
sweep (``bench.sweep``) build cases without importing each other.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from hwadvisor.bench.devices import Target
from hwadvisor.bench.sizing import Shape


@dataclass(frozen=True)
class KernelCase:
    """One kernel at one dtype on one device, ready for :func:`~hwadvisor.bench.sizing.adapt`."""

    target: Target
    kernel: str
    dtype: str
    unit: str
    ladder: tuple[Shape, ...]
    work: Callable[[Shape], float]
    build: Callable[[Shape], Callable[[], object]]
    start: int = 0
    weight: float = 1.0
    flags: Callable[[], AbstractContextManager[object]] | None = None
    after: Callable[[], None] | None = None
    #: The memory level a sweep figure's working set is sized for (``bench.sweep``).
    level: str | None = None
    #: Least budget this case starts with (None: the runner's default minimum).
    min_allot_s: float | None = None
