"""`hwadvisor schema`: the published schemas are the models' own, and docs/ matches them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hwadvisor.cli import app
from hwadvisor.models.schemas import SCHEMAS, schema_for

runner = CliRunner()
DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_command_prints_model_schema(name: str) -> None:
    result = runner.invoke(app, ["schema", name])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == schema_for(name)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_published_schema_file_matches_models(name: str) -> None:
    published = DOCS / f"{name}.schema.json"
    assert published.exists(), f"run scripts/gen_schemas.py to publish {published.name}"
    assert json.loads(published.read_text()) == schema_for(name), (
        f"{published} is out of date: run scripts/gen_schemas.py"
    )


def test_unknown_schema_name_is_usage_error() -> None:
    result = runner.invoke(app, ["schema", "nope"])
    assert result.exit_code == 2
