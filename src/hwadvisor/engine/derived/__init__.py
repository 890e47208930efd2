"""Every derived fact, registered beside its computation, one module per input.

- :mod:`.machine`: CPU class, memory a process may use, software counts (the facts);
- :mod:`.gpus`: aggregates over the GPU list;
- :mod:`.bench`: best figures and ratios of a microbenchmark report;
- :mod:`.estimates`: the estimate slots and what follows from them;
- :mod:`.cost`: the picks of the priced estimates and the cost comparisons (on the
  estimates' registry);
- :mod:`.llm`: per slot, what follows from a language model's serving or fine-tuning figures;
- :mod:`.options`: the command-line options, and the verdict for the second pass.

:data:`REGISTRIES` lists them for the namespace; the relative one (:data:`SLOT`) is
expanded under each of :data:`ESTIMATE_SLOTS`.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.engine.derive import Registry
from hwadvisor.engine.derived import candidates as _candidates  # noqa: F401  (estimate.options)
from hwadvisor.engine.derived import cost as _cost  # noqa: F401  (registers cost.* on ESTIMATES)
from hwadvisor.engine.derived import llm as _llm  # noqa: F401  (registers its slot facts)
from hwadvisor.engine.derived.bench import BENCH, BENCH_DEVICES, BENCH_DTYPES, BENCH_KERNELS
from hwadvisor.engine.derived.estimates import ESTIMATE_SLOTS, ESTIMATES, LOCAL_PREFIX, SLOT
from hwadvisor.engine.derived.gpus import GPUS
from hwadvisor.engine.derived.machine import MACHINE
from hwadvisor.engine.derived.options import OPTIONS, VERDICT

#: The registries of absolute paths, in the order the reference lists them.
REGISTRIES: tuple[Registry[Any], ...] = (BENCH, MACHINE, GPUS, ESTIMATES, VERDICT, OPTIONS)

__all__ = [
    "BENCH",
    "BENCH_DEVICES",
    "BENCH_DTYPES",
    "BENCH_KERNELS",
    "ESTIMATES",
    "ESTIMATE_SLOTS",
    "GPUS",
    "LOCAL_PREFIX",
    "MACHINE",
    "OPTIONS",
    "REGISTRIES",
    "SLOT",
    "VERDICT",
]
