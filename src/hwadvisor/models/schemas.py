"""The published JSON Schemas, generated from the pydantic models.

``docs/schemas/<name>.schema.json`` holds a copy of each; a test regenerates them and
fails when the models and the published files disagree.
"""

from __future__ import annotations

import importlib
from typing import Any

#: Document name -> "module:Class" of its model (imported only when asked for).
SCHEMAS: dict[str, str] = {
    "facts": "hwadvisor.models.facts:Facts",
    "bench": "hwadvisor.models.bench:BenchReport",
    "advice": "hwadvisor.models.advice:Advice",
    "estimate": "hwadvisor.models.estimate:EstimateReport",
    "rules": "hwadvisor.models.rules:RuleFile",
}


def schema_for(name: str) -> dict[str, Any]:
    """The JSON Schema of document ``name`` (one of :data:`SCHEMAS`)."""
    module_name, _, cls_name = SCHEMAS[name].partition(":")
    model = getattr(importlib.import_module(module_name), cls_name)
    schema: dict[str, Any] = model.model_json_schema(mode="serialization")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://hwadvisor.invalid/schemas/{name}.schema.json"
    return schema
