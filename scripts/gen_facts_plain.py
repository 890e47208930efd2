"""Regenerate src/hwadvisor/models/facts_plain.py from the pydantic facts models."""

from __future__ import annotations

from pathlib import Path

from hwadvisor.models.plain_gen import render

OUT = Path(__file__).resolve().parents[1] / "src" / "hwadvisor" / "models" / "facts_plain.py"


def main() -> None:
    """Write the plain dataclasses of the facts document."""
    OUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
