"""The microbenchmark (SPEC §5): measured evidence on every detected device.

Kernels run through torch (the ``bench`` extra) and are timed only with
``torch.utils.benchmark.Timer``; sizes adapt to the device and to the time budget.
torch is imported inside :func:`run_bench`, so importing this package is cheap.
"""

from __future__ import annotations

from hwadvisor.bench.runner import run_bench

__all__ = ["run_bench"]
