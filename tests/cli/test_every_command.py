"""SPEC §2: every command takes ``--json``; SPEC §3: every JSON document is stamped."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
import typer

from hwadvisor.cli import get_app

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


def _leaves(command: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    children = getattr(command, "commands", None)
    if not children:
        return [(path, command)]
    out: list[tuple[tuple[str, ...], Any]] = []
    for name, child in sorted(children.items()):
        out += _leaves(child, (*path, name))
    return out


LEAVES = _leaves(typer.main.get_command(get_app()))


def test_the_command_tree_is_seen_whole() -> None:
    names = {" ".join(path) for path, _ in LEAVES}
    assert {"check", "bench", "recommend", "schema", "rules list", "export", "fleet"} <= names


@pytest.mark.parametrize(
    "path,command", LEAVES, ids=lambda v: " ".join(v) if isinstance(v, tuple) else ""
)
def test_every_command_takes_json(path: tuple[str, ...], command: Any) -> None:
    options = {opt for param in command.params for opt in getattr(param, "opts", [])}
    assert "--json" in options, " ".join(path)


@pytest.mark.parametrize(
    "args,body",
    [
        (["rules", "list", "--json"], "rules"),
        (["rules", "show", "HW101", "--json"], "rule"),
        (["rules", "validate", "rules", "--json"], "valid"),
        (
            ["rules", "explain", "HW101", "--json", "--facts", "tests/data/facts/laptop.json"],
            "fires",
        ),
        (["catalog", "devices", "--json"], "devices"),
        (
            ["export", "--format", "nfd", "--json", "--from", "tests/data/facts/laptop.json"],
            "content",
        ),
    ],
)
def test_json_documents_carry_version_and_tool(cli: Cli, args: list[str], body: str) -> None:
    code, out, _ = cli(*args)
    doc = json.loads(out)
    assert code == 0
    assert list(doc)[:2] == ["schema_version", "tool"]
    assert doc["tool"]["name"] == "hwadvisor" and body in doc


def test_schema_takes_json_and_its_errors_are_documents(
    cli: Cli,
) -> None:
    code, out, _ = cli("schema", "facts", "--json")
    assert code == 0 and json.loads(out)["title"] == "Facts"
    code, out, _ = cli("schema", "nope", "--json")
    assert code == 2 and json.loads(out)["error"]["exit_code"] == 2
