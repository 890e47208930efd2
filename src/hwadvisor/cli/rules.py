"""`hwadvisor rules list | show ID | validate PATH | explain ID`: the rule set, inspected."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.cli._common import print_json
from hwadvisor.models.workload import (
    Budget,
    FinetuneMethod,
    LoraTargets,
    Optimizer,
    Precision,
    Quant,
    Scenario,
    ServingEngine,
    Task,
    Team,
)

if TYPE_CHECKING:
    from hwadvisor.models.rules import Rule

rules_app = typer.Typer(
    name="rules",
    help="List, show, validate and explain the advice rules.",
    no_args_is_help=True,
    add_completion=False,
)
app.add_typer(rules_app, name="rules")

_RULES_OPT = typer.Option(
    None, "--rules", help="Extra rules folder; overrides shipped rules by id (repeatable)."
)


def _rule_data(rule: Rule, origin: str | None = None) -> dict[str, Any]:
    data = rule.model_dump(mode="json", by_alias=True, exclude_none=True)
    if origin:
        data["file"] = origin
    return data


@rules_app.command("list")
def list_rules(
    rules_dirs: list[str] | None = _RULES_OPT,
    scenario: Scenario | None = typer.Option(
        None, "--scenario", help="Only rules for this scenario."
    ),
    show_all: bool = typer.Option(
        False, "--all", help="Every rule with its severity, verdict, scenarios, title and sources."
    ),
    json_out: bool = typer.Option(False, "--json", help="Print the rules as JSON."),
) -> None:
    """The rules in effect, by file: their ids on one screen, or everything with --all."""
    from hwadvisor.engine.run import applies
    from hwadvisor.pipeline import load_rules
    from hwadvisor.render.rules import render_all, render_overview

    rs = load_rules(rules_dirs)
    chosen = [r for r in rs.sorted() if scenario is None or applies(r, scenario)]
    if json_out:
        print_json({"rules": [_rule_data(r, rs.origin[r.id]) for r in chosen]})
        return
    (render_all if show_all else render_overview)(chosen, rs.origin)


@rules_app.command("show")
def show_rule(
    rule_id: str = typer.Argument(..., metavar="ID"),
    rules_dirs: list[str] | None = _RULES_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the rule as JSON."),
) -> None:
    """One rule in full: condition, message, verdict, sources, rationale."""
    from hwadvisor.engine.guidance import GUIDANCE
    from hwadvisor.pipeline import load_rules
    from hwadvisor.render.rules import render_rule

    rs = load_rules(rules_dirs)
    rule = rs.get(rule_id.upper())
    data = _rule_data(rule, rs.origin[rule.id])
    if json_out:
        print_json({"rule": data})
        return
    render_rule(data, {src: GUIDANCE[src] for src in rule.source})


@rules_app.command("validate")
def validate_rules(
    paths: list[str] = typer.Argument(..., metavar="PATH...", help="Rules files or folders."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Check rules files: schema, fact paths, operators, source ids, templates (exit 2 if bad)."""
    from hwadvisor.engine.loader import load_folder

    counts = {p: len(load_folder(p)[0]) for p in paths}
    if json_out:
        print_json({"valid": True, "rules": counts})
        return
    for p, n in counts.items():
        typer.echo(f"{p}: {n} rule{'s' if n != 1 else ''}, valid")


@rules_app.command("explain")
def explain_rule(
    rule_id: str = typer.Argument(..., metavar="ID"),
    facts_file: str | None = typer.Option(
        None, "--facts", help="Explain for the machine in this saved `check --json` file."
    ),
    scenario: Scenario | None = typer.Option(
        None, "--scenario", help="Scenario (default: the rule's first, or training)."
    ),
    model: str | None = wl.MODEL,
    params: int | None = wl.PARAMS,
    flops_per_sample: float | None = wl.FLOPS_PER_SAMPLE,
    batch_size: int | None = wl.BATCH_SIZE,
    dataset_size: int | None = wl.DATASET_SIZE,
    epochs: float | None = wl.EPOCHS,
    seq_len: int | None = wl.SEQ_LEN,
    input_shape: wl.Shape | None = wl.INPUT_SHAPE,
    precision: Precision | None = wl.PRECISION,
    optimizer: Optimizer | None = wl.OPTIMIZER,
    qps: float | None = wl.QPS,
    latency_ms: float | None = wl.LATENCY_MS,
    deadline: float | None = wl.DEADLINE,
    method: FinetuneMethod | None = wl.METHOD,
    lora_rank: int | None = wl.LORA_RANK,
    lora_targets: LoraTargets | None = wl.LORA_TARGETS,
    quant: Quant | None = wl.QUANT,
    context: int | None = wl.CONTEXT,
    prompt_tokens: int | None = wl.PROMPT_TOKENS,
    output_tokens: int | None = wl.OUTPUT_TOKENS,
    concurrency: int | None = wl.CONCURRENCY,
    engine: ServingEngine | None = wl.ENGINE,
    task: Task | None = wl.TASK,
    budget: Budget = typer.Option(Budget.NORMAL, "--budget"),
    team: Team | None = typer.Option(None, "--team"),
    bench_file: str | None = typer.Option(
        None, "--bench-file", help="Saved `bench --json` figures (no benchmark is run)."
    ),
    rules_dirs: list[str] | None = _RULES_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
) -> None:
    """Why a rule fires or not here: each condition true / false / unknown, with the values."""
    options = dict(locals())
    from hwadvisor.cli._common import workload_options
    from hwadvisor.pipeline import explain_rule as explain_for

    exp = explain_for(
        rule_id,
        scenario=scenario,
        workload=workload_options(options),
        budget=budget,
        team=team,
        facts_file=facts_file,
        bench_file=bench_file,
        rules_dirs=rules_dirs,
    )
    rule, scen = exp.rule, exp.scenario
    if json_out:
        doc: dict[str, object] = {
            "rule": rule.id,
            "scenario": scen.value,
            "applies_to_scenario": exp.applies,
            "condition": exp.truth.value,
            "fires": exp.fires,
            "nodes": [
                {"depth": ln.depth, "test": ln.label, "result": ln.truth.value, "values": ln.actual}
                for ln in exp.lines
            ],
        }
        print_json(doc)
        return
    from hwadvisor.render.rules import render_explanation

    render_explanation(exp)
