"""The microbenchmark: measured evidence on every detected device.

The figures the estimator reads (:mod:`.kernels`: matmul per dtype and size, the 3×3
convolution and its backward, memory bandwidth, the per-operator cost, the host link)
run through torch (the ``bench`` extra), timed only with ``torch.utils.benchmark.Timer``,
within one time budget, torch's import included (:mod:`.runner`). torch is imported
inside :func:`run_bench`, so importing this package is cheap.
"""

from __future__ import annotations

from hwadvisor.bench.runner import run_bench

__all__ = ["run_bench"]
