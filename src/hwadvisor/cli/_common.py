"""Helpers shared by the command modules: the workload, pricing and run options as the
typed objects the pipeline takes, a progress bar, emitting documents (JSON or rich), the stale-price warning, and
printing an error.

Printing only: which code a run exits with is decided in one place, ``_boundary.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hwadvisor.errors import HwadvisorError
from hwadvisor.models.plain import printable

if TYPE_CHECKING:
    from pydantic import BaseModel

    from hwadvisor.models.cost import Cost
    from hwadvisor.models.facts import Facts
    from hwadvisor.models.options import PricingOptions, RunOptions, WorkloadOptions
    from hwadvisor.pipeline import ProgressScope


#: A workload option whose parameter name (``_options.WORKLOAD``) is not its
#: :class:`~hwadvisor.models.options.WorkloadOptions` field: ``--deadline`` is in hours.
_FIELD_OF = {"deadline": "deadline_hours"}


def workload_options(params: Mapping[str, Any]) -> WorkloadOptions:
    """The workload options among a command's parameters (pass its ``options``); those
    the command does not declare keep their defaults."""
    from hwadvisor.models.options import WorkloadOptions

    return WorkloadOptions(**_fields_of(WorkloadOptions, params))


def pricing_options(params: Mapping[str, Any]) -> PricingOptions:
    """The pricing options among a command's parameters (pass its ``options``)."""
    from hwadvisor.models.options import PricingOptions

    return PricingOptions(**_fields_of(PricingOptions, params))


def _fields_of(cls: type, params: Mapping[str, Any]) -> Mapping[str, Any]:
    """The parameters among ``params`` that are fields of the dataclass ``cls``, by field."""
    from dataclasses import fields

    names = {f.name for f in fields(cls)}
    given = ((_FIELD_OF.get(name, name), value) for name, value in params.items())
    return {name: value for name, value in given if name in names}


def run_options(params: Mapping[str, Any], rules_dirs: list[str] | None) -> RunOptions:
    """``recommend``'s and ``rules explain``'s shared options (pass their ``options``) as
    :func:`hwadvisor.pipeline.recommend` takes them, so the same options give the same run."""
    from hwadvisor.models.options import RunOptions

    return RunOptions(
        workload=workload_options(params),
        budget=params["budget"],
        team=params["team"],
        facts_file=params["facts_file"],
        bench_file=params["bench_file"],
        no_bench=params["no_bench"],
        rules_dirs=rules_dirs,
        pricing=pricing_options(params),
    )


def progress_bar(enabled: bool = True) -> ProgressScope:
    """A rich progress bar on stderr for a long step, when stderr is a terminal and
    ``enabled``."""
    from functools import partial

    from hwadvisor.render.progress import progress_callback

    return partial(progress_callback, enabled=sys.stderr.isatty() and enabled)


def warn_stale(costs: Iterable[Cost | None]) -> None:
    """One warning on stderr when prices used are more than a year old, naming the date."""
    from hwadvisor.pipeline.pricing import stale_prices

    line = stale_prices(costs)
    if line:
        sys.stderr.write(f"hwadvisor: warning: {line}\n")


def document_json(doc: BaseModel | Facts | dict[str, object]) -> str:
    """A document as indented JSON with a final newline (nulls kept: null is a fact).

    ``doc`` is a pydantic model, the facts (dataclasses with the same ``model_dump_json``),
    or the JSON-ready dict of one (the fast ``check`` path).
    """
    if isinstance(doc, dict):
        return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
    return doc.model_dump_json(indent=2) + "\n"


def emit(
    doc: BaseModel | Facts | dict[str, object],
    *,
    as_json: bool,
    output: str | None,
    render: object = None,
    then: Callable[[], None] | None = None,
) -> None:
    """Write ``doc`` to ``--output`` (atomically) and to stdout as JSON or through ``render``.

    ``render`` is a callable taking the document that prints the human view; with
    ``--json`` stdout carries nothing but the JSON document. ``then`` (the ``--html``
    report) runs after the ``--output`` file is written and before stdout: a report
    that fails leaves the JSON file written, and stdout with one error document only.
    """
    from hwadvisor.io import atomic_write_text

    text = document_json(doc)
    if output:
        atomic_write_text(output, text)
    if then is not None:
        then()
    if as_json:
        from hwadvisor.render.encoding import can_carry

        if not can_carry(sys.stdout, text):
            # An ASCII stdout: the same JSON, its non-ASCII characters escaped.
            text = json.dumps(json.loads(text), indent=2, ensure_ascii=True) + "\n"
        sys.stdout.write(text)
        sys.stdout.flush()
    elif callable(render):
        render(doc)


def stamped(body: dict[str, object]) -> dict[str, object]:
    """``body`` as a document: ``schema_version`` and ``tool`` first (docs/json.md), for the
    JSON outputs that have no pydantic model of their own."""
    from hwadvisor import __version__
    from hwadvisor.models.plain import SCHEMA_VERSION

    return {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "hwadvisor", "version": __version__},
        **body,
    }


def print_json(body: dict[str, object]) -> None:
    """Print ``body``, stamped, as indented JSON on stdout."""
    sys.stdout.write(json.dumps(stamped(body), indent=2, default=str) + "\n")
    sys.stdout.flush()


def error_document(exc: HwadvisorError, code: int) -> dict[str, object]:
    """The JSON error document printed on stdout under ``--json``."""
    return stamped(
        {
            "error": {
                "kind": exc.kind,
                "message": printable(exc.message),
                "where": printable(exc.where) if exc.where is not None else None,
                "exit_code": code,
            }
        }
    )


#: A one-line error longer than this is shortened: values are echoed into messages, and a
#: hostile input (a 100 KB option value) must not flood the terminal.
MAX_ERROR_CHARS = 400
_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|[\x00-\x1f\x7f]")


def one_line(text: str) -> str:
    """``text`` as one printable line: escape sequences and control characters removed,
    whitespace collapsed, and shortened with an ellipsis past :data:`MAX_ERROR_CHARS`."""
    clean = " ".join(_CONTROL.sub(" ", text).split())
    if len(clean) > MAX_ERROR_CHARS:
        clean = clean[: MAX_ERROR_CHARS - 1] + "…"
    return clean


def silence_stdout() -> None:
    """Point stdout at /dev/null once its reader has gone, so later flushes succeed."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def report_error(exc: HwadvisorError, wants_json: bool, *, code: int | None = None) -> int:
    """Print one line on stderr (and the JSON error document on stdout); return the code."""
    exit_code = int(code if code is not None else exc.exit_code)
    line = one_line(exc.line())
    sys.stderr.write(f"hwadvisor: error: {line}\n")
    sys.stderr.flush()
    if wants_json:
        sys.stdout.write(json.dumps(error_document(exc, exit_code), indent=2) + "\n")
        sys.stdout.flush()
    return exit_code
