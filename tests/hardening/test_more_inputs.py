"""Price, catalog and fleet inputs are read as the other documents are (issue 44):
regular files only, under a cap, every number bounded, a parser's refusal one line."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., Any]
FACTS = Path(__file__).parents[1] / "data" / "facts" / "laptop.json"
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"


def _one_line(res: Any, *needles: str) -> None:
    assert res.code == 2, (res.code, res.err)
    lines = [line for line in res.err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in res.err, res.err
    for needle in needles:
        assert needle in lines[0], lines[0]


def _recommend(cli: Cli, *args: str) -> Any:
    return cli(
        "recommend", "-s", "training", "-m", "resnet50", "--facts", str(FACTS), "--no-bench", *args
    )


def test_a_5000_digit_integer_in_a_facts_file_is_one_line(cli: Cli, tmp_path: Path) -> None:
    doc = tmp_path / "facts.json"
    doc.write_text('{"schema_version": "1.0", "cpu": ' + "9" * 5000 + "}", encoding="utf-8")
    res = cli("recommend", "-s", "training", "-m", "resnet50", "--facts", str(doc), "--no-bench")
    _one_line(res, "not valid JSON", "4300")


@pytest.mark.parametrize("option", ["--prices", "--catalog"])
def test_a_fifo_or_a_device_is_refused_unread(cli: Cli, tmp_path: Path, option: str) -> None:
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)  # nothing writes to it: a reader would hang
    args = ("estimate", "--model", "resnet50", "--on", "t4", option)
    _one_line(cli(*args, str(fifo)), "not a regular file")
    _one_line(cli(*args, "/dev/zero"), "not a regular file")


def test_a_price_past_its_limit_is_refused(cli: Cli, tmp_path: Path) -> None:
    prices = tmp_path / "prices.csv"
    prices.write_text(HEADER + "x1,A100-80GB,1,8,64,1e300,,us\n", encoding="utf-8")
    _one_line(_recommend(cli, "--prices", str(prices)), "Price", "at most")
    prices.write_text(HEADER + "x1,A100-80GB,1e300,8,64,1.0,,us\n", encoding="utf-8")
    _one_line(_recommend(cli, "--prices", str(prices)), "AcceleratorCount")


def test_a_fleet_skips_a_jsonl_it_cannot_read(cli: Cli, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    reports.mkdir()
    (reports / "good.json").write_text(FACTS.read_text(encoding="utf-8"), encoding="utf-8")
    stuck = tmp_path / "stuck.jsonl"
    os.mkfifo(stuck)  # named on the command line: read as reports, never hung on
    res = cli(
        "fleet", "--scenario", "training", "--model", "resnet50", str(reports), str(stuck), "--json"
    )
    assert res.code == 0, res.err
    assert "not a regular file" in res.out and "stuck.jsonl" in res.out
