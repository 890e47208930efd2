"""Counted memory in a document ignores unknown fields (docs/json.md); in a catalog file an
unknown field is still an error, so a typo there is caught."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from hwadvisor.catalog import load_models
from hwadvisor.errors import CatalogError
from hwadvisor.models.memory import CatalogMemoryCounts, MemoryCounts

SCHEMAS = Path(__file__).parents[2] / "docs" / "schemas"


def _counted() -> tuple[str, dict[str, Any]]:
    """A shipped catalog model that carries counts, and its entry as plain data."""
    entry = next(m for m in load_models().values() if m.memory_counts is not None)
    return entry.id, entry.model_dump(mode="json", exclude_none=True)


def test_a_document_with_newer_fields_in_its_counts_loads() -> None:
    _, entry = _counted()
    counts = {**entry["memory_counts"], "a_later_field": 1}
    counts["fp32"] = {**counts["fp32"], "another": 2.0}
    loaded = MemoryCounts.model_validate(counts)
    assert loaded.fp32.per_sample == entry["memory_counts"]["fp32"]["per_sample"]
    assert "a_later_field" not in loaded.model_dump()


def test_the_catalog_form_refuses_unknown_fields_at_every_level() -> None:
    _, entry = _counted()
    counts = entry["memory_counts"]
    with pytest.raises(ValidationError):
        CatalogMemoryCounts.model_validate({**counts, "tracekr": "x"})
    with pytest.raises(ValidationError):
        CatalogMemoryCounts.model_validate({**counts, "fp32": {**counts["fp32"], "fixd": 1}})


def test_a_typo_in_a_catalog_files_counts_is_a_catalog_error(tmp_path: Path) -> None:
    model_id, entry = _counted()
    entry["id"] = "my-" + model_id
    entry["memory_counts"]["fp32"]["per_sampel"] = 1.0
    user = tmp_path / "models.yaml"
    user.write_text(yaml.safe_dump({"models": [entry]}))
    with pytest.raises(CatalogError) as err:
        load_models([user])
    assert "per_sampel" in err.value.message


@pytest.mark.parametrize("name", ["estimate", "advice"])
def test_published_schemas_allow_unknown_fields_in_counts(name: str) -> None:
    defs = json.loads((SCHEMAS / f"{name}.schema.json").read_text())["$defs"]
    for part in ("MemoryCounts", "CountedPeak"):
        assert defs[part].get("additionalProperties", True) is not False
