"""Human views of the rule set: the overview that fits a screen, every rule (``--all``),
one rule, and why a rule fires or not.

Rules are grouped by the file they come from, each file under its own description, so a
reader sees the rule set as its authors organised it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from hwadvisor.render import stdout_console
from hwadvisor.render.layout import Col, FitTable, Hanging

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.engine import Explanation
    from hwadvisor.models.rules import Rule

_SEVERITY_STYLE = {
    "critical": "bold red",
    "warning": "yellow",
    "info": "cyan",
    "migration": "green",
}
_TRUTH_STYLE = {"true": "green", "false": "red", "unknown": "yellow"}


@lru_cache(maxsize=64)
def _description(path: str) -> str:
    """A rules file's ``description`` (empty when the file cannot be read again)."""
    import yaml

    from hwadvisor.io import load_yaml

    try:
        data = load_yaml(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError, yaml.YAMLError):
        return ""
    text = data.get("description") if isinstance(data, dict) else None
    return " ".join(str(text).split()) if text else ""


def _kind(rule: Rule) -> str:
    return "migration" if rule.kind.value == "migration" else rule.severity.value


def by_file(rules: Iterable[Rule], origin: dict[str, str]) -> dict[str, list[Rule]]:
    """The rules grouped by the file each came from, files in name order."""
    groups: dict[str, list[Rule]] = {}
    for rule in rules:
        groups.setdefault(origin.get(rule.id, "?"), []).append(rule)
    return dict(sorted(groups.items(), key=lambda kv: (Path(kv[0]).name, kv[0])))


def _heading(path: str, group: list[Rule]) -> Text:
    kinds: dict[str, int] = {}
    for rule in group:
        kinds[_kind(rule)] = kinds.get(_kind(rule), 0) + 1
    counts = ", ".join(f"{n} {k}" for k, n in kinds.items())
    head = Text(Path(path).name, style="bold")
    about = _description(path)
    head.append(f"  {about} " if about else "  ")
    head.append(f"({counts})", style="dim")
    return head


def render_overview(
    rules: list[Rule], origin: dict[str, str], console: Console | None = None
) -> None:
    """Every rule id, grouped by file and coloured by severity: one screen for the whole
    rule set; ``rules show ID`` and ``rules list --all`` give the rest."""
    con = console or stdout_console()
    for path, group in by_file(rules, origin).items():
        con.print(Hanging("", _heading(path, group), indent=2))
        ids = Text()
        for n, rule in enumerate(group):
            ids.append(" " if n else "")
            ids.append(rule.id, style=_SEVERITY_STYLE[_kind(rule)])
        con.print(Hanging("  ", ids))
    legend = Text("colour: ", style="dim")
    for n, (kind, style) in enumerate(_SEVERITY_STYLE.items()):
        legend.append(", " if n else "", style="dim")
        legend.append(kind, style=style)
    legend.append(
        f". {len(rules)} rules; titles and sources: hwadvisor rules list --all; "
        "one rule: hwadvisor rules show ID",
        style="dim",
    )
    con.print(Hanging("", legend))


def render_all(rules: list[Rule], origin: dict[str, str], console: Console | None = None) -> None:
    """Every rule in full view, one table per file: id, severity and title on the row;
    verdict, scenarios and sources beside it on a wide terminal, below it on a narrow one."""
    con = console or stdout_console()
    columns = [
        Col("id"),
        Col("severity"),
        Col("title", wrap=True, min_width=20),
        Col("verdict", fold=3),
        Col("scenarios", fold=2),
        Col("source", fold=1),
    ]
    for n, (path, group) in enumerate(by_file(rules, origin).items()):
        if n:
            con.print()
        con.print(Hanging("", _heading(path, group), indent=2))
        rows = [
            [
                rule.id,
                f"[{_SEVERITY_STYLE[_kind(rule)]}]{_kind(rule)}[/]",
                rule.title,
                rule.verdict.device.value if rule.verdict else "",
                ", ".join(s.value for s in rule.scenarios) or "all",
                ", ".join(rule.source),
            ]
            for rule in group
        ]
        con.print(FitTable(columns, rows))


def render_rule(
    data: dict[str, Any], sources: dict[str, str], console: Console | None = None
) -> None:
    """One rule as YAML folded to the terminal's width, then its sources with their titles."""
    import yaml

    con = console or stdout_console()
    text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=max(40, con.width - 16))
    for line in text.rstrip().splitlines():
        # YAML folds near the width; a line it leaves longer wraps under its own indent.
        body = line.lstrip()
        lead = len(line) - len(body)
        con.print(Hanging(" " * lead, Text(body), indent=lead + 2))
    con.print("sources:")
    for src, title in sources.items():
        con.print(Hanging(f"  {src}: ", Text(title)))


def render_explanation(exp: Explanation, console: Console | None = None) -> None:
    """Why a rule fires or not: the verdict line, then each condition with its values."""
    con = console or stdout_console()
    rule, scen = exp.rule, exp.scenario
    verdict = "[bold green]fires[/]" if exp.fires else "[dim]does not fire[/]"
    con.print(Hanging("", f"[bold]{rule.id}[/] {rule.title}: {verdict} for {scen.value}", indent=2))
    if not exp.applies:
        scenarios = ", ".join(s.value for s in rule.scenarios)
        con.print(Hanging("  ", f"not for {scen.value}: the rule applies to {scenarios}"))
    for ln in exp.lines:
        values = ", ".join(
            f"{k} = {json.dumps(v, default=str)}" if v is not None else f"{k} = unknown"
            for k, v in ln.actual.items()
        )
        truth = ln.truth.value
        prefix = Text(f"  {'  ' * ln.depth}")
        prefix.append(f"{truth.upper():7} ", style=_TRUTH_STYLE[truth])
        body = Text(ln.label)
        if values:
            body.append(f"  ({values})", style="dim")
        con.print(Hanging(prefix, body))
