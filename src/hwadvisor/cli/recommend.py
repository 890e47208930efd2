"""`hwadvisor recommend`: probe (or load) a machine, measure, estimate, apply the rules.

The options go to :func:`hwadvisor.pipeline.recommend`, which gathers the inputs and
runs the stages; this module prints the advice and picks the exit code: for
``--require-fit`` 0 fits, 1 does not, 3 cannot tell. The workload, machine, guidance
and pricing options are the shared ones (``_options.py``).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.cli._options import GUIDANCE, MACHINE, PRICING, WORKLOAD, shared
from hwadvisor.errors import ExitCode
from hwadvisor.models.workload import Scenario

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice


@app.command()
@shared(WORKLOAD, MACHINE, GUIDANCE, PRICING)
def recommend(
    scenario: Scenario = typer.Option(
        ...,
        "--scenario",
        "-s",
        help="prototyping, training, distributed, inference, edge or preprocessing.",
    ),
    rules_dirs: list[str] | None = typer.Option(
        None, "--rules", help="Extra rules folder; overrides shipped rules by id (repeatable)."
    ),
    require_fit: bool = typer.Option(
        False, "--require-fit", help="Exit 1 when this machine does not fit, 3 when unknown."
    ),
    json_out: bool = typer.Option(
        False, "--json", help="Print the advice document as JSON on stdout."
    ),
    output: str | None = typer.Option(
        None, "--output", "-o", help="Also write the JSON advice to FILE (atomically)."
    ),
    html: str | None = wl.HTML,
    **options: Any,
) -> None:
    """Recommend CPU, GPU or multi-GPU for a workload, with the evidence and the reasons."""
    from functools import partial

    from hwadvisor.cli._common import emit, progress_bar, run_options, warn_stale
    from hwadvisor.pipeline import recommend as recommend_advice
    from hwadvisor.render.html import require_for
    from hwadvisor.render.html_guard import write_html

    require_for(html)
    result = recommend_advice(
        scenario=scenario, options=run_options(options, rules_dirs), progress=progress_bar()
    )
    for note in result.notes:
        sys.stderr.write(f"hwadvisor: note: {note}\n")
    advice = result.advice
    here = advice.estimates.here

    def render(doc: Advice) -> None:
        from hwadvisor.render.advice import render_advice

        render_advice(doc)

    # --output, then --html, then stdout (see emit)
    emit(
        advice,
        as_json=json_out,
        output=output,
        render=render,
        then=partial(write_html, html, advice),
    )
    # After the output is written: a failed write stays one line, a closed pipe quiet.
    warn_stale([here.cost if here else None, *(a.cost for a in advice.estimates.alternatives)])
    if result.interrupted:
        # Ctrl-C during the benchmark: the advice used the figures measured so far.
        raise typer.Exit(int(ExitCode.INTERRUPTED))
    if require_fit:
        fits = advice.verdict.fits_here
        code = ExitCode.OK if fits else ExitCode.UNKNOWN if fits is None else ExitCode.GATE_FAILED
        if code is not ExitCode.OK:
            sys.stderr.write(
                f"hwadvisor: --require-fit: {'cannot tell whether' if fits is None else 'does not'} fit here: "
                f"{'; '.join(advice.verdict.fits_reasons)}\n"
            )
        raise typer.Exit(int(code))
