"""The microbenchmark: measured evidence on every detected device.

The kernels (:mod:`.kernels`) and the memory sweep of memory-bound operator families at
cache and DRAM working sets (:mod:`.sweep`) run through torch (the ``bench`` extra) and
are timed only with ``torch.utils.benchmark.Timer``; sizes adapt to the device and to
the time budget.
torch is imported inside :func:`run_bench`, so importing this package is cheap.
"""

from __future__ import annotations

from hwadvisor.bench.runner import run_bench

__all__ = ["run_bench"]
