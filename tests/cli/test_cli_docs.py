"""Every command has help, and docs/cli.md is the CLI's own, current reference."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

from hwadvisor.cli import get_app

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


ROOT = Path(__file__).resolve().parents[2]


def _commands() -> list[list[str]]:
    root = typer.main.get_command(get_app())
    paths: list[list[str]] = []
    for name, command in getattr(root, "commands", {}).items():
        sub = getattr(command, "commands", {})
        paths += [[name, s] for s in sub] if sub else [[name]]
    return sorted(paths)


def _gen_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location(
        "gen_cli_doc", ROOT / "scripts" / "gen_cli_doc.py"
    )
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_spec_commands_exist() -> None:
    names = {p[0] for p in _commands()}
    assert {
        "check",
        "bench",
        "recommend",
        "estimate",
        "catalog",
        "rules",
        "schema",
        "export",
        "fleet",
    } <= names


@pytest.mark.parametrize("path", _commands(), ids=lambda p: " ".join(p))
def test_every_command_has_help(cli: Cli, path: list[str]) -> None:
    result = cli(*path, "--help")
    assert result.code == 0, result.err
    root = typer.main.get_command(get_app())
    command = root.commands[path[0]]  # type: ignore[attr-defined]
    if len(path) > 1:
        command = command.commands[path[1]]
    assert (command.help or "").strip(), f"hwadvisor {' '.join(path)} has no help text"


def test_docs_cli_md_is_current() -> None:
    text = _gen_module().render()
    current = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8")
    assert current == text, "docs/cli.md is out of date: run python scripts/gen_cli_doc.py"
    for path in _commands():
        assert f"## `hwadvisor {' '.join(path)}`" in current
