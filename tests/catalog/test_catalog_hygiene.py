"""Sources name the original publication, never a document internal to the project."""

from __future__ import annotations

import re
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., Any]
FACTS = Path(__file__).resolve().parents[1] / "data" / "facts"

#: How the project's own product documents are named; none of it may reach a user.
INTERNAL = re.compile(r"REFERENCE\.md|\bREFERENCE\b|\bSPEC\b|SPEC\s*§|GUIDANCE|\bshared\b")
#: In program output "shared" is an ordinary word (shared memory); only the folder counts.
INTERNAL_IN_OUTPUT = re.compile(
    r"REFERENCE\.md|\bREFERENCE\b|\bSPEC\b|SPEC\s*§|GUIDANCE|\bshared/|shared REFERENCE"
)


def _data_files() -> list[Path]:
    folder = resources.files("hwadvisor.catalog").joinpath("data")
    return sorted(Path(str(f)) for f in folder.iterdir() if f.name.endswith((".yaml", ".csv")))


@pytest.mark.parametrize("path", _data_files(), ids=lambda p: p.name)
def test_catalog_data_names_no_internal_document(path: Path) -> None:
    hits = [
        f"{path.name}:{n}: {m.group(0)}"
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        for m in INTERNAL.finditer(line)
    ]
    assert not hits, hits


def test_the_hygiene_pattern_catches_what_it_should() -> None:
    assert INTERNAL.search("figures as in shared REFERENCE.md accelerator table")
    assert INTERNAL.search("exit codes of SPEC §4") and INTERNAL.search("GUIDANCE ids")
    assert not INTERNAL_IN_OUTPUT.search("shared memory per SM; special cases; guidance (training)")


RUNS = [
    ["estimate", "--model", "resnet50", "--no-bench", "--json"],
    [
        "estimate",
        "--model",
        "bert-base",
        "--task",
        "infer",
        "--on",
        "h100",
        "--on",
        "apple-m2-ultra",
        "--no-bench",
        "--json",
    ],
    ["estimate", "--model", "resnet50", "--on", "a10g", "--on", "xeon-8480", "--no-bench"],
    [
        *["recommend", "-s", "training", "--model", "resnet50", "--no-bench", "--json", "--facts"],
        str(FACTS / "t4-cloud.json"),
    ],
    [
        *[
            "recommend",
            "-s",
            "inference",
            "--model",
            "bert-base",
            "--no-bench",
            "--json",
            "--facts",
        ],
        str(FACTS / "apple-m2.json"),
    ],
    ["catalog", "devices", "--json"],
    ["catalog", "models", "--json"],
]


@pytest.mark.parametrize("args", RUNS, ids=lambda a: " ".join(a[:4]))
def test_estimates_and_advice_name_no_internal_document(cli: Cli, args: list[str]) -> None:
    code, out, err = cli(*args)
    assert code == 0, err
    hits = sorted({m.group(0) for m in INTERNAL_IN_OUTPUT.finditer(out + err)})
    assert not hits, hits
