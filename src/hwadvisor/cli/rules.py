"""`hwadvisor rules list | show ID | validate PATH | explain ID`: the rule set, inspected."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from hwadvisor.cli._app import app
from hwadvisor.cli._common import print_json
from hwadvisor.cli._options import GUIDANCE, MACHINE, PRICING, WORKLOAD, shared
from hwadvisor.models.workload import Scenario

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
@shared(WORKLOAD, MACHINE, GUIDANCE, PRICING)
def explain_rule(
    rule_id: str = typer.Argument(..., metavar="ID"),
    scenario: Scenario | None = typer.Option(
        None, "--scenario", "-s", help="Scenario (default: the rule's first, or training)."
    ),
    rules_dirs: list[str] | None = _RULES_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
    **options: Any,
) -> None:
    """Why a rule fires or not: each condition true, false or unknown, with the values.

    Takes recommend's options: the same options explain the same run.
    """
    from hwadvisor.cli._common import progress_bar, run_options
    from hwadvisor.pipeline import explain_rule as explain_for

    exp = explain_for(
        rule_id,
        scenario=scenario,
        options=run_options(options, rules_dirs),
        progress=progress_bar(not json_out),
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
        prices = getattr(exp, "prices", None)  # a cost rule: the prices its facts rest on
        if prices is not None:
            doc["prices"] = prices.as_json()
        print_json(doc)
        return
    from hwadvisor.render.rules import render_explanation

    render_explanation(exp)
    if getattr(exp, "prices", None) is not None:
        from hwadvisor.render.explain_prices import render_prices_used

        render_prices_used(exp.prices)  # type: ignore[attr-defined]
