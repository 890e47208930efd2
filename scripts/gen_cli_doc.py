"""Generate docs/cli.md, the command reference, from the CLI's own command tree.

Run after changing a command or an option; a test fails when the committed file is out
of date, so the reference can never drift from the code.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Any

import typer

from hwadvisor.cli import get_app

OUT = Path(__file__).resolve().parents[1] / "docs" / "cli.md"

HEADER = """# Command reference

Generated from the CLI by `scripts/gen_cli_doc.py`; do not edit by hand.

Every command writes human output to stdout (rich tables and charts), progress and
warnings to stderr, and with `--json` nothing but the JSON document on stdout. Exit codes:
0 success · 1 a gate failed (`--require-fit`) · 2 bad input or usage (also `hwadvisor`
or `hwadvisor rules` without a command, which prints the help on stderr) · 3 could not
determine (a required fact is unknown, torch missing for `bench`) · 130 interrupted.
"""


def _cell(text: str) -> str:
    """Text for one table cell: on one line, its pipes escaped so the row stays whole."""
    return " ".join(text.split()).replace("|", "\\|")


def _param_row(param: Any) -> str:
    names = (
        ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
        or f"`{param.name.upper()}`"
    )
    kind = "argument" if param.param_type_name == "argument" else "option"
    if kind == "option" and getattr(param, "is_flag", False):
        kind = "flag"
    help_text = _cell(getattr(param, "help", None) or "")
    default = getattr(param, "default", None)
    shown = ""
    if kind == "option" and default not in (None, False, (), []) and not callable(default):
        value = default.value if isinstance(default, Enum) else default
        shown = f" (default: `{value}`)"
    return f"| {names} | {kind} | {help_text}{shown} |"


def _command_section(path: str, command: Any) -> list[str]:
    lines = [f"## `{path}`", "", " ".join((command.help or "").split()), ""]
    params = [p for p in command.params if p.name not in ("help",)]
    if params:
        lines += ["| parameter | kind | meaning |", "|---|---|---|"]
        lines += [_param_row(p) for p in params]
        lines.append("")
    return lines


def render() -> str:
    """The markdown text of the reference."""
    root = typer.main.get_command(get_app())
    lines = [HEADER]
    commands: dict[str, Any] = getattr(root, "commands", {})
    for name in sorted(commands):
        command = commands[name]
        sub: dict[str, Any] = getattr(command, "commands", {})
        if sub:
            lines += [f"## `hwadvisor {name}`", "", " ".join((command.help or "").split()), ""]
            for sub_name in sorted(sub):
                lines += _command_section(f"hwadvisor {name} {sub_name}", sub[sub_name])
        else:
            lines += _command_section(f"hwadvisor {name}", command)
    return "\n".join(lines).rstrip() + "\n"


def main() -> None:
    """Write docs/cli.md, or with --check exit 1 when it is out of date."""
    text = render()
    if "--check" in sys.argv:
        sys.exit(0 if OUT.exists() and OUT.read_text(encoding="utf-8") == text else 1)
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
