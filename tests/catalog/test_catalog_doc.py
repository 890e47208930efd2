"""docs/catalog.md lists what the data holds: every device, family and alias, no more."""

from __future__ import annotations

import re
from pathlib import Path

from hwadvisor.catalog import load_devices, load_families, load_models

DOC = Path(__file__).resolve().parents[2] / "docs" / "catalog.md"


def _block(name: str) -> str:
    """The text between ``<!-- name: ... -->`` and ``<!-- /name -->`` in the page."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(rf"<!-- {name}:.*?-->(.*?)<!-- /{name} -->", text, re.S)
    assert found, f"docs/catalog.md has no {name} block"
    return found.group(1)


def _rows(name: str) -> list[list[str]]:
    rows = []
    for line in _block(name).splitlines():
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if len(cells) > 1 and not set(cells[0]) <= {"-"} and cells[0] not in ("family", "alias"):
            rows.append(cells)
    return rows


def test_the_device_list_names_every_catalog_device() -> None:
    listed = set(re.findall(r"\b[a-z0-9][a-z0-9.]*(?:-[a-z0-9.]+)*\b", _block("devices")))
    missing = set(load_devices()) - listed
    assert not missing, f"add to docs/catalog.md: {sorted(missing)}"


def test_the_family_table_is_families_yaml() -> None:
    doc = {r[0]: (r[1], {o.strip().strip("`") for o in r[2].split(",")}) for r in _rows("families")}
    data = {
        f.family: (f.default, {m for m in f.members if m != f.default})
        for f in load_families("devices") + load_families("models")
    }
    assert doc == data


def test_the_alias_table_is_the_entries_aliases() -> None:
    data = {
        (alias, entry.id)
        for entries in (load_devices(), load_models())
        for entry in entries.values()
        for alias in entry.aliases
    }
    assert {(r[0], r[1]) for r in _rows("aliases")} == data
