"""Optional dependencies, imported only where needed, each failing with one clear line.

torch is optional (``pip install 'hwadvisor[bench]'``): ``check``, ``recommend --no-bench``
and the estimates of catalog models run without it. The microbenchmark, a user model's
count and ``--measure`` import it through :func:`import_torch`, so a missing or broken
torch is a :class:`~hwadvisor.errors.MissingDependencyError`, not a traceback.
"""

from __future__ import annotations

import warnings
from typing import Any

from hwadvisor.errors import MissingDependencyError

MISSING_TORCH = "torch is not installed: pip install 'hwadvisor[bench]'"


def import_torch() -> Any:
    """Import torch, or raise MissingDependencyError with the reason it failed."""
    try:
        with warnings.catch_warnings():
            # A torch wheel without numpy warns on import; that is not the user's problem here.
            warnings.simplefilter("ignore")
            import torch
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(MISSING_TORCH) from exc
    except Exception as exc:
        # Installed but broken (a CUDA runtime that will not load, a half-upgraded wheel):
        # "not installed" would send the user to pip for the wrong reason.
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise MissingDependencyError(
            f"torch is installed but failed to import ({type(exc).__name__}: {first})"
        ) from exc
    return torch
