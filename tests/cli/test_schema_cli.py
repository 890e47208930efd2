"""`hwadvisor schema`: the published schemas are the models' own, and docs/ matches them."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.models.schemas import SCHEMAS, schema_for

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


DOCS = Path(__file__).resolve().parents[2] / "docs" / "schemas"


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schema_command_prints_model_schema(cli: Cli, name: str) -> None:
    result = cli("schema", name)
    assert result.code == 0, result.err
    assert json.loads(result.out) == schema_for(name)


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_published_schema_file_matches_models(name: str) -> None:
    published = DOCS / f"{name}.schema.json"
    assert published.exists(), f"run scripts/gen_schemas.py to publish {published.name}"
    assert json.loads(published.read_text()) == schema_for(name), (
        f"{published} is out of date: run scripts/gen_schemas.py"
    )


def test_unknown_schema_name_is_usage_error(cli: Cli) -> None:
    result = cli("schema", "nope")
    assert result.code == 2
