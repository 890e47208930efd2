"""hwadvisor: what hardware a deep-learning job needs, and whether this machine is enough."""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
