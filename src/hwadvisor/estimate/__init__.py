"""The estimator: a workload's memory and time, here and on catalog devices (docs/estimates.md).

Pure functions of their inputs (a workload, saved facts, saved bench figures, the
catalogs), so every estimate can be replayed anywhere:

- :func:`build_workload` turns what the user said (a catalog name, a model file, or raw
  sizes) into a :class:`~hwadvisor.models.workload.Workload` with its per-operator profile;
- :func:`estimate_workload` prices it on each requested device.
"""

from __future__ import annotations

from hwadvisor.estimate.report import estimate_workload
from hwadvisor.estimate.workload.build import build_workload

__all__ = ["build_workload", "estimate_workload"]
