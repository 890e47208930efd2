"""`hwadvisor schema NAME`: print the published JSON Schema of a document."""

from __future__ import annotations

import json
from enum import Enum

import typer

from hwadvisor.cli._app import app


class SchemaName(str, Enum):
    """Documents whose schema is published."""

    FACTS = "facts"
    BENCH = "bench"
    ADVICE = "advice"
    ESTIMATE = "estimate"
    RULES = "rules"


@app.command()
def schema(
    name: SchemaName = typer.Argument(
        ..., metavar="NAME", help="The document: facts, bench, advice, estimate or rules."
    ),
    json_out: bool = typer.Option(
        False,
        "--json",
        help="Taken by every command; the schema is JSON either way, and errors become a JSON document.",
    ),
) -> None:
    """Print the JSON Schema generated from hwadvisor's models."""
    del json_out  # the output is JSON with or without it
    from hwadvisor.models.schemas import schema_for

    typer.echo(json.dumps(schema_for(name.value), indent=2, sort_keys=True))
