"""Counts on the command line as people write them: 125000000, 1.25e8, 125M, 7B."""

from __future__ import annotations

import json

import pytest
import typer

from hwadvisor.cli import main
from hwadvisor.cli._workload import parse_count


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("125000000", 125_000_000),
        ("1.25e8", 125_000_000),
        ("1e9", 1_000_000_000),
        ("125M", 125_000_000),
        ("125m", 125_000_000),
        ("7B", 7_000_000_000),
        ("7G", 7_000_000_000),
        ("1.5k", 1_500),
        ("1.28M", 1_280_000),
        ("2T", 2_000_000_000_000),
        (" 42 ", 42),
        ("4.1M", 4_100_000),  # 4.1 * 1e6 is 4099999.9999999995 in floats
        ("16.1k", 16_100),
        ("1.281167M", 1_281_167),
        ("2.5e3", 2_500),
    ],
)
def test_counts_people_write(text: str, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("12.5", "not a whole number"),
        ("1.5", "not a whole number"),
        ("abc", "not a count"),
        ("-5", "not a count"),
        ("7 billion", "not a count"),
        ("", "not a count"),
        ("1e400", "too large"),
        ("nan", "not a count"),
        ("inf", "not a count"),
    ],
)
def test_what_is_not_a_count(text: str, reason: str) -> None:
    with pytest.raises(typer.BadParameter, match=reason):
        parse_count(text)


def test_estimate_takes_a_count_with_a_suffix(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["estimate", "--params", "1e9", "--task", "infer", "--on", "t4", "--json"])
    assert exc.value.code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["workload"]["params"] == 1_000_000_000
