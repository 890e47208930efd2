"""What priced the estimates a cost rule read: :class:`PricesUsed`.

``rules explain`` of a cost rule shows it after the condition's lines (the price list,
own hardware's price, and each pick); built by
:func:`hwadvisor.pipeline.pricing.prices_used`, shown by
:mod:`hwadvisor.render.explain_prices`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hwadvisor.models.cost import Choice

__all__ = ["PricesUsed"]


@dataclass(frozen=True)
class PricesUsed:
    """What priced the estimates a cost rule read: the price list and the picks."""

    source: str
    own: str | None = None
    picks: list[tuple[str, Choice]] = field(default_factory=list)

    def as_json(self) -> dict[str, Any]:
        """The ``prices`` object of ``rules explain --json``."""
        return {
            "source": self.source,
            "own_hardware": self.own,
            "picks": {name: c.model_dump(mode="json") for name, c in self.picks},
        }
