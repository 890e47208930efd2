"""The row the verdict chose, in one line, for the terminal and the HTML page (pure).

``verdict.option`` names the row of the estimate table the verdict rests on: the
device, how many, its time and price, how it was chosen and how many rows do the job.
:func:`chosen_line` words it, e.g. "1 × NVIDIA A100 SXM 80GB, 1.7 h, $2.85 for the job
(the cheapest option that fits and finishes within the 24 h deadline, of 8 that do)".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.units import duration

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice, ChosenOption
    from hwadvisor.models.workload import Workload

#: ``why`` when the row is this machine's own (the engine's word for it).
ALREADY_HERE = "already here"


def requirement(wl: Workload) -> str:
    """What an option must do besides fitting: the deadline, or the QPS and latency (the
    verdict's own words, :func:`hwadvisor.engine.choice.requirement`)."""
    from hwadvisor.engine.choice import requirement as words

    return words(wl.task.value, wl.deadline_hours, wl.qps, wl.latency_ms)


def _what(o: ChosenOption, cpu: bool) -> str:
    name = o.name if cpu else f"{o.gpus} × {o.name}"
    return f"this machine's {name}" if o.here else name


def _price(o: ChosenOption) -> str:
    from hwadvisor.engine.choice import price_words

    words = price_words(
        o.usd,
        o.per,
        hourly_usd=o.hourly_usd,
        instance=o.instance,
        instances=o.instances,
        concurrency=o.concurrency,
    )
    return words or "unpriced"


def _why(o: ChosenOption, need: str) -> str:
    if o.why == ALREADY_HERE:
        many = f"{o.feasible} option{'s' if o.feasible != 1 else ''}"
        return f"already here, one of {many} that fit and {_plural(need)}"
    # The engine's reason ends in "that": "the cheapest option that", ...
    reason = o.why.removesuffix(" that").strip()
    return f"{reason} that fits and {need}, of {o.feasible} that do"


def _plural(need: str) -> str:
    """'finishes within ...' -> 'finish within ...' (for 'options ... finish')."""
    verb, _, rest = need.partition(" ")
    if verb.endswith(("shes", "ches", "sses")):
        verb = verb[:-2]
    elif verb.endswith("s"):
        verb = verb[:-1]
    return f"{verb} {rest}".strip()


def chosen_line(advice: Advice) -> str | None:
    """The chosen row in words, or None when the verdict chose none."""
    o = advice.verdict.option
    if o is None:
        return None
    cpu = advice.verdict.device.value == "cpu"
    parts = [_what(o, cpu)]
    if o.time_s is not None:
        parts.append(duration(o.time_s))
    parts.append(_price(o))
    return ", ".join(parts) + f" ({_why(o, requirement(advice.workload))})"
