"""Regenerate docs/schemas/*.schema.json from the pydantic models."""

from __future__ import annotations

import json
from pathlib import Path

from hwadvisor.models.schemas import SCHEMAS, schema_for

OUT = Path(__file__).resolve().parents[1] / "docs" / "schemas"


def main() -> None:
    """Write one schema file per published document."""
    OUT.mkdir(parents=True, exist_ok=True)
    for name in sorted(SCHEMAS):
        path = OUT / f"{name}.schema.json"
        path.write_text(
            json.dumps(schema_for(name), indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
