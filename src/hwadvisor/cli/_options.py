"""One set of options for the commands that advise on a workload.

``recommend``, ``estimate``, ``fleet`` and ``rules explain`` describe the same job with the
same options, so ``rules explain ID`` given the options of a ``recommend`` run explains
exactly that run. Rather than four copies of the same thirty parameters, each command
names the groups it takes and :func:`shared` adds them to its signature, where typer
reads them; the command receives them as keyword arguments and passes them on through
:func:`~hwadvisor.cli._common.workload_options` and
:func:`~hwadvisor.cli._common.pricing_options`, which build the typed objects of
:mod:`hwadvisor.models.options`. An option added to a group reaches every
command that takes the group, and a test holds the four commands to the same workload
options.

The typer options themselves (names, help, parsers) are the constants of ``_workload.py``.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.models.workload import (
    Budget,
    Checkpointing,
    FinetuneMethod,
    Framework,
    LoraTargets,
    Offload,
    Optimizer,
    Precision,
    Quant,
    ServingEngine,
    Strategy,
    Task,
    Team,
)

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Shared:
    """One shared parameter: its name in the command, its type, and its typer option."""

    name: str
    annotation: Any
    option: Any


@dataclass(frozen=True)
class Group:
    """Shared parameters that go together, under one heading of the help."""

    title: str
    items: tuple[Shared, ...]

    def __iter__(self) -> Iterator[Shared]:
        return iter(self.items)


#: What the job is: every command that advises on a workload takes all of these.
WORKLOAD = Group(
    "Workload",
    (
        Shared("model", str | None, wl.MODEL),
        Shared("task", Task | None, wl.TASK),
        Shared("params", int | None, wl.PARAMS),
        Shared("flops_per_sample", float | None, wl.FLOPS_PER_SAMPLE),
        Shared("batch_size", int | None, wl.BATCH_SIZE),
        Shared("dataset_size", int | None, wl.DATASET_SIZE),
        Shared("epochs", float | None, wl.EPOCHS),
        Shared("seq_len", int | None, wl.SEQ_LEN),
        Shared("input_shape", wl.Shape | None, wl.INPUT_SHAPE),
        Shared("precision", Precision | None, wl.PRECISION),
        Shared("optimizer", Optimizer | None, wl.OPTIMIZER),
        Shared("channels_last", bool, wl.CHANNELS_LAST),
        Shared("qps", float | None, wl.QPS),
        Shared("latency_ms", float | None, wl.LATENCY_MS),
        Shared("deadline", float | None, wl.DEADLINE),
        Shared("method", FinetuneMethod | None, wl.METHOD),
        Shared("lora_rank", int | None, wl.LORA_RANK),
        Shared("lora_targets", LoraTargets | None, wl.LORA_TARGETS),
        Shared("quant", Quant | None, wl.QUANT),
        Shared("context", int | None, wl.CONTEXT),
        Shared("prompt_tokens", int | None, wl.PROMPT_TOKENS),
        Shared("output_tokens", int | None, wl.OUTPUT_TOKENS),
        Shared("concurrency", int | None, wl.CONCURRENCY),
        Shared("max_throughput", bool, wl.MAX_THROUGHPUT),
        Shared("engine", ServingEngine | None, wl.ENGINE),
        Shared("checkpointing", Checkpointing | None, wl.CHECKPOINTING),
        Shared("framework", Framework | None, wl.FRAMEWORK),
        Shared("strategy", Strategy | None, wl.STRATEGY),
        Shared("offload", Offload | None, wl.OFFLOAD),
    ),
)

#: Which machine and which figures: a saved facts document, saved bench figures, or
#: neither (this machine, quickly measured unless --no-bench).
MACHINE = Group(
    "Machine and measurements",
    (
        Shared(
            "facts_file",
            str | None,
            typer.Option(
                None,
                "--facts",
                help="The machine in this saved `check --json` file instead of this one.",
            ),
        ),
        Shared(
            "bench_file",
            str | None,
            typer.Option(None, "--bench-file", help="Use these saved `bench --json` figures."),
        ),
        Shared(
            "no_bench",
            bool,
            typer.Option(
                False,
                "--no-bench",
                help="Do not run the quick microbenchmark (figures in a --facts file are still used).",
            ),
        ),
    ),
)

#: The guidance's options.
GUIDANCE = Group(
    "Guidance",
    (
        Shared(
            "budget", Budget, typer.Option(Budget.NORMAL, "--budget", help="low, normal or high.")
        ),
        Shared(
            "team", Team | None, typer.Option(None, "--team", help="new, experienced or cluster.")
        ),
    ),
)

#: What prices the estimates.
PRICING = Group(
    "Prices",
    (
        Shared("prices", Path | None, wl.PRICES),
        Shared("price_per_hour", float | None, wl.PRICE_PER_HOUR),
        Shared("purchase_usd", float | None, wl.PURCHASE_USD),
        Shared("years", float | None, wl.YEARS),
        Shared("electricity_usd_kwh", float | None, wl.ELECTRICITY),
    ),
)

#: A command's own options that come after the shared ones in its help: how to run and
#: where the output goes.
_LAST = frozenset({"rules_dirs", "require_fit", "json_out", "output", "html", "verbose"})

#: A command's own count options that no model bounds, and their limits
#: (:mod:`hwadvisor.models.bounds`): typer refuses a value outside with one line naming the option.
_BOUNDED = {"--gpus": "GPUS"}


def _bounded(param: inspect.Parameter) -> inspect.Parameter:
    """``param`` with its option's limit from :data:`_BOUNDED`, if it has one."""
    from hwadvisor.models import bounds

    decls = getattr(param.default, "param_decls", None) or ()
    name = next((_BOUNDED[d] for d in decls if d in _BOUNDED), None)
    if name is None:
        return param
    limit = bounds.LIMITS[name]
    option = copy.copy(param.default)
    option.min, option.max = int(limit.ge if limit.ge is not None else 0), int(limit.le or 0)
    return param.replace(default=option)


def _in_panel(option: Any, title: str) -> Any:
    """A copy of a typer option shown under ``title`` in the help."""
    placed = copy.copy(option)
    placed.rich_help_panel = title
    return placed


def shared(*groups: Group) -> Callable[[F], F]:
    """Add the parameters of ``groups`` to a command's signature, before its output options.

    The command declares its own parameters and ``**options``; typer sees the whole
    signature and passes the shared values in ``options``. The help shows each group
    under its own heading.
    """

    def add(func: F) -> F:
        sig = inspect.signature(func)
        own = [_bounded(p) for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
        names = {p.name for p in own}
        extra = [
            inspect.Parameter(
                s.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=_in_panel(s.option, group.title),
                annotation=s.annotation,
            )
            for group in groups
            for s in group
            if s.name not in names
        ]
        first = [p for p in own if p.name not in _LAST]
        last = [p for p in own if p.name in _LAST]
        params = [
            *first,
            *extra,
            *(p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in last),
        ]
        func.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return func

    return add


def names(*groups: Group) -> list[str]:
    """The parameter names of ``groups`` (for tests and for reading ``options``)."""
    return [s.name for group in groups for s in group]
