"""`hwadvisor rules list | show ID | validate PATH | explain ID`: the rule set, inspected."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import typer

from hwadvisor.cli import _workload as wl
from hwadvisor.cli._app import app
from hwadvisor.cli._common import print_json
from hwadvisor.models.workload import Budget, Scenario, Team

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
    json_out: bool = typer.Option(False, "--json", help="Print the rules as JSON."),
) -> None:
    """Every rule in effect: id, severity, scenarios, title, sources."""
    from hwadvisor.cli.recommend import gather_rules
    from hwadvisor.engine.run import applies

    rs = gather_rules(rules_dirs)
    chosen = [r for r in rs.sorted() if scenario is None or applies(r, scenario)]
    if json_out:
        print_json({"rules": [_rule_data(r, rs.origin[r.id]) for r in chosen]})
        return
    from rich.table import Table

    from hwadvisor.render import stdout_console

    table = Table(show_edge=False)
    for col in ("id", "severity", "verdict", "scenarios", "title", "source"):
        table.add_column(col)
    for r in chosen:
        table.add_row(
            r.id,
            r.kind.value if r.kind.value == "migration" else r.severity.value,
            r.verdict.device.value if r.verdict else "",
            ", ".join(s.value for s in r.scenarios) or "all",
            r.title,
            ", ".join(r.source),
        )
    stdout_console().print(table)


@rules_app.command("show")
def show_rule(
    rule_id: str = typer.Argument(..., metavar="ID"),
    rules_dirs: list[str] | None = _RULES_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the rule as JSON."),
) -> None:
    """One rule in full: condition, message, verdict, sources, rationale."""
    import yaml

    from hwadvisor.cli.recommend import gather_rules
    from hwadvisor.engine.guidance import GUIDANCE

    rs = gather_rules(rules_dirs)
    rule = rs.get(rule_id.upper())
    data = _rule_data(rule, rs.origin[rule.id])
    if json_out:
        print_json({"rule": data})
        return
    typer.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=88).rstrip())
    typer.echo("sources:")
    for src in rule.source:
        typer.echo(f"  {src}: {GUIDANCE[src]}")


@rules_app.command("validate")
def validate_rules(
    paths: list[str] = typer.Argument(..., metavar="PATH...", help="Rules files or folders."),
    json_out: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Check rules files: schema, fact paths, operators, GUIDANCE ids, templates (exit 2 if bad)."""
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
    model: str | None = typer.Option(None, "--model", help="Workload model, to have estimates."),
    params: int | None = wl.PARAMS,
    dataset_size: int | None = wl.DATASET_SIZE,
    epochs: float | None = typer.Option(None, "--epochs"),
    qps: float | None = typer.Option(None, "--qps"),
    latency_ms: float | None = typer.Option(None, "--latency-ms"),
    budget: Budget = typer.Option(Budget.NORMAL, "--budget"),
    team: Team | None = typer.Option(None, "--team"),
    bench_file: str | None = typer.Option(
        None, "--bench-file", help="Saved `bench --json` figures (no benchmark is run)."
    ),
    rules_dirs: list[str] | None = _RULES_OPT,
    json_out: bool = typer.Option(False, "--json", help="Print the explanation as JSON."),
) -> None:
    """Why a rule fires or not here: each condition true / false / unknown, with the values."""
    from hwadvisor.cli.recommend import build_workload_from, gather_rules, load_bench, load_facts
    from hwadvisor.engine import apply_rules, build_context, explain, with_verdict
    from hwadvisor.engine.run import second_pass
    from hwadvisor.pipeline import _gpu_ids, estimate_for_advice

    rs = gather_rules(rules_dirs)
    rule = rs.get(rule_id.upper())
    scen = scenario or (rule.scenarios[0] if rule.scenarios else Scenario.TRAINING)
    if facts_file:
        facts = load_facts(facts_file)
    else:
        from hwadvisor.probe import probe_machine

        facts = probe_machine()
    bench = load_bench(bench_file) if bench_file else facts.bench
    workload = build_workload_from(
        scen,
        model=model,
        params=params,
        dataset_size=dataset_size,
        epochs=epochs,
        qps=qps,
        latency_ms=latency_ms,
    )
    estimates = estimate_for_advice(workload, facts=facts, bench=bench)
    ctx = build_context(
        facts=facts,
        workload=workload,
        scenario=scen,
        bench=bench,
        estimates=estimates,
        budget=budget,
        team=team,
        gpu_ids=_gpu_ids(),
    )
    if second_pass(rule):
        ctx = with_verdict(ctx, apply_rules(rs, ctx, scen).verdict)
    exp = explain(rule, ctx, scen)
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
    from hwadvisor.render import stdout_console

    con = stdout_console()
    verdict = "[bold green]fires[/]" if exp.fires else "[dim]does not fire[/]"
    con.print(f"[bold]{rule.id}[/] {rule.title}: {verdict} for {scen.value}")
    if not exp.applies:
        con.print(
            f"  not for {scen.value}: the rule applies to {', '.join(s.value for s in rule.scenarios)}"
        )
    colours = {"true": "green", "false": "red", "unknown": "yellow"}
    for ln in exp.lines:
        values = ", ".join(
            f"{k} = {json.dumps(v, default=str)}" if v is not None else f"{k} = unknown"
            for k, v in ln.actual.items()
        )
        con.print(
            f"  {'  ' * ln.depth}[{colours[ln.truth.value]}]{ln.truth.value.upper():7}[/] {ln.label}"
            + (f"  [dim]({values})[/]" if values else ""),
            highlight=False,
        )
