"""Human view of the prices a cost rule's explanation rests on (``rules explain``).

After the condition's lines, a cost rule (HW801-HW804) shows the price list the
estimates were priced from (the shipped catalog, a ``--prices`` file laid over it, own
hardware's price) and each pick with its instance, dollars, price date and source: the
same picks ``recommend`` and ``estimate`` name with the same options.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from hwadvisor.render import stdout_console
from hwadvisor.render.cost import PICK_LABELS, choice_summary
from hwadvisor.render.layout import Hanging

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.prices import PricesUsed


def render_prices_used(prices: PricesUsed, console: Console | None = None) -> None:
    """The price list, then one line per pick (with its price source)."""
    con = console or stdout_console()
    con.print(Hanging("  ", f"[bold]prices[/]: {escape(prices.source)}", indent=4))
    if prices.own:
        con.print(Hanging("  ", f"own hardware: {escape(prices.own)}", indent=4))
    labels = dict(PICK_LABELS)
    if not prices.picks:
        con.print(Hanging("  ", "no priced option: the cost facts are unknown", indent=4))
    for name, choice in prices.picks:
        line = choice_summary(labels.get(name, name), choice)
        source = f" ({choice.price_source})" if choice.price_source else ""
        con.print(Hanging("    ", escape(line + source), indent=4))
