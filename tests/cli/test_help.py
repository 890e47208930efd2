"""What a person sees before any command runs: help, a bare ``hwadvisor``, a missing workload.

- Flags take no value, so help shows no type after them (typer prints ``<bool>``).
- ``hwadvisor`` or ``hwadvisor rules`` alone print the help on stderr and exit 2 (a usage
  error), without an empty "error:" line; stdout stays empty for scripts.
- No help text names the project's internal documents ("SPEC §", "GUIDANCE ids",
  "REFERENCE.md"): the sources a person can look up are the publications themselves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

from hwadvisor.cli import get_app

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

ROOT = Path(__file__).resolve().parents[2]
INTERNAL = re.compile(r"SPEC\b|§|GUIDANCE|REFERENCE\.md|shared/")


def _paths() -> list[list[str]]:
    root = typer.main.get_command(get_app())
    out: list[list[str]] = [[]]
    for name, command in getattr(root, "commands", {}).items():
        out.append([name])
        out += [[name, sub] for sub in getattr(command, "commands", {})]
    return sorted(out)


@pytest.mark.parametrize("path", _paths(), ids=lambda p: " ".join(p) or "hwadvisor")
def test_help_shows_no_type_after_a_flag_and_no_internal_document(
    cli: Cli, path: list[str]
) -> None:
    result = cli(*path, "--help")
    assert result.code == 0, result.err
    assert "<bool>" not in result.out
    assert "--help" in result.out
    found = INTERNAL.search(result.out)
    assert found is None, f"hwadvisor {' '.join(path)} --help names {found.group(0)!r}"


@pytest.mark.parametrize("group", [[], ["rules"]], ids=["hwadvisor", "hwadvisor rules"])
def test_a_group_without_a_command_prints_its_help_on_stderr_and_exits_2(
    cli: Cli, group: list[str]
) -> None:
    result = cli(*group)
    assert result.code == 2
    assert result.out == ""
    assert "Usage: hwadvisor" in result.err
    assert "error:" not in result.err


def test_a_usage_error_is_still_one_line(cli: Cli) -> None:
    result = cli("--no-such-option")
    assert result.code == 2
    assert result.error_lines() == ["hwadvisor: error: No such option: --no-such-option"]


def test_estimate_without_a_workload_is_one_line_before_any_benchmark(cli: Cli) -> None:
    import sys

    had_torch = "torch" in sys.modules
    result = cli("estimate")
    assert result.code == 2, result.err
    assert result.out == ""
    [line] = result.error_lines()
    assert line.startswith("hwadvisor: error: ") and "--model" in line
    # Refused before the quick benchmark: that would have imported torch.
    assert had_torch or "torch" not in sys.modules


def test_cli_reference_tables_keep_their_columns() -> None:
    text = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("|"):
            cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
            assert len(cells) == 3, f"docs/cli.md:{n} has {len(cells)} cells: {line}"
    assert not INTERNAL.search(text), "docs/cli.md names an internal document"
