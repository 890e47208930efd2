"""One decision, read off the estimate rows: which option runs the job, and so which class.

The rows (``estimate.options``, :mod:`hwadvisor.engine.derived.candidates`) say for every
device compared whether the job as recommended fits there and meets its requirement.
:func:`choose` keeps the options that do, and then:

1. prefers what is already here (this machine's CPU or its own GPUs): of those, the
   deciding rule's class when it has one, else the fastest;
2. else lets the documents' rules choose the class among the feasible options (the
   highest-priority rule whose class has one; a rule about this machine's own GPU only
   when that GPU is the option);
3. and picks within it by the budget: ``normal`` the cheapest, ``high`` the fastest,
   ``low`` the cheapest with spot prices.

A rule never picks an option the table rules out: a rule whose class has no feasible
option is passed over. When no option is feasible the decision says so (``None``), and
the verdict names the nearest option and what would settle it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hwadvisor.models.advice import DeviceClass
from hwadvisor.models.rules import Rule
from hwadvisor.models.workload import Budget

_CLASS = {c.value: c for c in DeviceClass}
_INF = math.inf
#: When no option's total time is known, this machine is not preferred if an option
#: elsewhere runs a step this many times faster: the documents' 10x-100x speed-up of a
#: GPU over a CPU (GUIDANCE R1) is the gap past which "already here" stops saving.
UNTIMED_HERE_GAP = 10.0


@dataclass(frozen=True)
class Option:
    """One row of the table as an option (the fields of ``estimate.options``)."""

    device: str
    name: str
    device_class: DeviceClass
    gpus: int
    here: bool
    fits: bool | None
    meets: bool | None
    time_s: float | None
    step_s: float | None
    usd: float | None
    spot_usd: float | None
    per: str
    plan: str
    strategy: str
    fixes: tuple[str, ...]
    hourly_usd: float | None = None
    samples_s: float | None = None
    instance: str | None = None
    instances: int | None = None
    concurrency: int | None = None

    @classmethod
    def of(cls, raw: dict[str, Any]) -> Option:
        """An option from its context entry."""
        return cls(
            device=str(raw["device"]),
            name=str(raw["name"]),
            device_class=_CLASS[raw["class"]],
            gpus=int(raw["gpus"]),
            here=bool(raw["here"]),
            fits=raw["fits"],
            meets=raw["meets"],
            time_s=raw["time_s"],
            step_s=raw.get("step_s"),
            usd=raw["usd"],
            spot_usd=raw["spot_usd"],
            per=str(raw["per"]),
            plan=str(raw["plan"]),
            strategy=str(raw["strategy"]),
            fixes=tuple(raw["fixes"] or ()),
            hourly_usd=raw.get("hourly_usd"),
            samples_s=raw.get("samples_s"),
            instance=raw.get("instance"),
            instances=raw.get("instances"),
            concurrency=raw.get("concurrency"),
        )

    @property
    def feasible(self) -> bool:
        """It holds the job as recommended and does not miss its requirement."""
        return self.fits is True and self.meets is not False


@dataclass(frozen=True)
class Decision:
    """The option chosen, the rule that chose its class (None: the table alone), why."""

    option: Option | None
    rule: Rule | None
    why: str


def requirement(
    task: str | None, deadline_hours: float | None, qps: float | None, latency_ms: float | None
) -> str:
    """What an option must do besides fitting, in words: finish within the deadline (a
    job), or serve the QPS within the latency target (a served model)."""
    if task in ("train", "finetune"):
        return (
            f"finishes within the {deadline_hours:g} h deadline"
            if deadline_hours
            else "finishes the job"
        )
    parts = [f"serves {qps:g} requests/s" if qps else "serves the model"]
    if latency_ms:
        parts.append(f"within {latency_ms:g} ms")
    return " ".join(parts)


def price_words(
    usd: float | None,
    per: str,
    *,
    hourly_usd: float | None = None,
    instance: str | None = None,
    instances: int | None = None,
    concurrency: int | None = None,
) -> str | None:
    """What an option costs, in words ("$0.48 for the job", "$4,058.80 a month on 4
    instance(s) of X, 44 sequences at a time on each", "$1.39 an hour on X"); None when
    it is unpriced."""
    if usd is None and hourly_usd is not None:
        return f"${hourly_usd:,.2f} an hour" + (f" on {instance}" if instance else "")
    if usd is None:
        return None
    if per == "1000 requests":
        return f"${usd:,.4g} per 1,000 requests"
    if per != "month":
        return f"${usd:,.2f} for the job"
    where = f" on {instances} instance(s) of {instance}" if instances and instance else ""
    batch = f", {concurrency} sequences at a time on each" if concurrency else ""
    return f"${usd:,.2f} a month{where}{batch}"


def options_of(raw: Sequence[dict[str, Any]] | None) -> list[Option]:
    """The options in the context (``estimate.options``)."""
    return [Option.of(r) for r in raw or []]


def _key(budget: Budget, o: Option) -> tuple[float, ...]:
    time = o.time_s if o.time_s is not None else _INF
    # Without the job's time (no dataset size) the bill is unknown: the hourly price of
    # what it runs on ranks the options instead, after every option with a bill.
    usd = o.usd if o.usd is not None else _INF
    if o.usd is None and o.hourly_usd is not None and budget is not Budget.HIGH:
        per_sample = o.hourly_usd / (3600.0 * o.samples_s) if o.samples_s else _INF
        return (_INF, per_sample, o.hourly_usd, o.gpus, time)
    if budget is Budget.HIGH:
        return (time, usd, o.gpus)
    if budget is Budget.LOW:
        spot = o.spot_usd if o.spot_usd is not None else usd
        return (spot, o.gpus, time)
    return (usd, o.gpus, time)


_PICKED = {
    Budget.NORMAL: "the cheapest option that",
    Budget.HIGH: "the fastest option that",
    Budget.LOW: "the cheapest option on spot prices that",
}


def _is_here_rule(rule: Rule) -> bool:
    return rule.verdict is not None and rule.verdict.where == "here"


def _ruled_out(options: Sequence[Option], cls: DeviceClass) -> bool:
    """The table has rows of ``cls`` and each misses: it does not fit or misses the job."""
    rows = [o for o in options if o.device_class is cls]
    return bool(rows) and all(o.fits is False or o.meets is False for o in rows)


def _unpriced_here(options: Sequence[Option], rule: Rule) -> bool:
    """A rule about this machine's own GPUs, which the table has no row for (a GPU the
    catalog does not know): the table cannot speak for them, the rule may."""
    assert rule.verdict is not None
    cls = rule.verdict.device
    own = {o.device_class for o in options if o.here}
    return _is_here_rule(rule) and cls is not DeviceClass.CPU and cls not in own


def choose(options: Sequence[Option], deciders: Sequence[Rule], budget: Budget) -> Decision | None:
    """The option that runs the job, and the rule that chose its class (see the module).

    ``deciders`` are the fired rules with a verdict, highest priority first. The
    decision's option is None when a rule decides where the table cannot speak: for
    this machine's own GPUs the table has no row for, or, when no option is feasible,
    for a class the table has no deciding row of. None: nothing decides.
    """
    # Options shown to meet the requirement first; those that cannot be told (no time
    # estimate) only when none is shown to.
    ok = [o for o in options if o.feasible and o.meets is True] or [
        o for o in options if o.feasible
    ]
    own = [o for o in ok if o.here]
    if own and not any(o.meets is True for o in ok):
        fastest = min((o.step_s for o in ok if o.step_s is not None), default=None)
        own = [
            o
            for o in own
            if fastest is None or (o.step_s is not None and o.step_s < UNTIMED_HERE_GAP * fastest)
        ]
    pool = own or ok
    for rule in deciders:
        assert rule.verdict is not None
        if _unpriced_here(options, rule):
            return Decision(None, rule, "this machine's own device, which the table does not price")
        if not ok:
            if not _ruled_out(options, rule.verdict.device):
                return Decision(None, rule, "the table does not decide this class")
            continue
        in_class = [o for o in pool if o.device_class is rule.verdict.device]
        if _is_here_rule(rule) and not any(o.here for o in in_class):
            continue
        if in_class:
            best = _best(in_class, budget, own=bool(own))
            return Decision(best, rule, _why(budget, own, best))
    if not ok:
        return None
    best = _best(pool, budget, own=bool(own))
    return Decision(best, None, _why(budget, own, best))


def _best(pool: Sequence[Option], budget: Budget, *, own: bool) -> Option:
    if own:
        # Already paid for: the fastest of this machine's options.
        return min(pool, key=lambda o: _key(Budget.HIGH, o))
    return min(pool, key=lambda o: _key(budget, o))


def _why(budget: Budget, own: list[Option], chosen: Option) -> str:
    if own:
        return "already here"
    if chosen.usd is None and chosen.hourly_usd is not None and budget is not Budget.HIGH:
        return "the cheapest option per sample (its hourly price over its rate; give --dataset-size for the bill of the job) that"
    if chosen.usd is None and budget is not Budget.HIGH:
        return "with no prices to compare, the option with the fewest GPUs (then the fastest) that"
    return _PICKED[budget]


def nearest(options: Sequence[Option]) -> Option | None:
    """When nothing is feasible: the option closest to doing the job (it fits and misses
    the requirement least, else the one whose fit is unknown, else the largest)."""
    if not options:
        return None

    def rank(o: Option) -> tuple[int, float, int]:
        fit = 0 if o.fits is True else 1 if o.fits is None else 2
        time = o.time_s if o.time_s is not None else _INF
        return fit, time, -o.gpus

    return min(options, key=rank)
