"""The fleet's terminal view at scale: identical hardware once, the top groups, the rest said.

A platform owner's fleet is thousands of nodes of a few kinds: the JSON keeps every
machine (and adds its group), the table shows one line per group of identical hardware,
the top ``--limit`` of them, and one line saying how many more and how to see them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from hwadvisor.estimate import build_workload
from hwadvisor.export.gather import gather_fleet
from hwadvisor.models.fleet import FleetReport, FleetSkip
from hwadvisor.render import stdout_console
from hwadvisor.render.fleet import DEFAULT_LIMIT, more_line, skipped_lines

from .conftest import REPORTS

RECORDED = sorted(REPORTS.glob("recorded-*.json"))


@pytest.fixture
def wide(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A 100-column terminal: one line per group."""
    monkeypatch.setenv("COLUMNS", "100")
    stdout_console.cache_clear()
    yield
    stdout_console.cache_clear()


def _fleet(folder: Path, copies: Callable[[int], int]) -> int:
    """``copies(i)`` reports of recorded host ``i`` under ``folder``; the total."""
    total = 0
    for i, path in enumerate(RECORDED):
        doc = json.loads(path.read_text())
        for n in range(copies(i)):
            doc["host"]["hostname"] = f"{path.stem}-{n:03d}"
            (folder / f"{path.stem}-{n:03d}.json").write_text(json.dumps(doc))
            total += 1
    return total


def _rows(out: str) -> list[str]:
    lines = out.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("──"))
    return [ln for ln in lines[start + 1 :] if re.match(r"\d+\s", ln)]


def test_groups_count_the_nodes_of_identical_hardware(tmp_path: Path) -> None:
    total = _fleet(tmp_path, lambda i: i + 1)
    wl = build_workload(model="resnet50", dataset_size=10_000, epochs=1)
    doc = gather_fleet([tmp_path], wl)
    assert len(doc.machines) == total
    assert len(doc.groups) == len(RECORDED)
    assert sorted(g.count for g in doc.groups) == list(range(1, len(RECORDED) + 1))
    assert [g.rank for g in doc.groups] == list(range(1, len(RECORDED) + 1))
    # Each group stands for its best machine, and every machine names its group.
    assert Counter(m.group for m in doc.machines) == {g.rank: g.count for g in doc.groups}
    for g in doc.groups:
        best = doc.machines[g.first - 1]
        assert best.group == g.rank
        assert all(m.rank >= best.rank for m in doc.machines if m.group == g.rank)
    firsts = [g.first for g in doc.groups]
    assert firsts == sorted(firsts)


def test_the_table_shows_the_top_groups_and_says_how_to_see_the_rest(
    cli, tmp_path: Path, wide: None
) -> None:  # type: ignore[no-untyped-def]
    total = _fleet(tmp_path, lambda i: 3 * (i + 1))
    args = ["fleet", str(tmp_path), "-m", "resnet50", "--by", "cost"]
    doc = cli(*args, "--json").json()
    groups = doc["groups"]
    assert len(doc["machines"]) == total and len(groups) == len(RECORDED)
    res = cli(*args, "--limit", "2")
    assert res.code == 0, res.err
    rows = _rows(res.out)
    assert len(rows) == 2
    for row, g in zip(rows, groups, strict=False):
        best = doc["machines"][g["first"] - 1]
        assert row.split()[:3] == [str(g["rank"]), str(g["count"]), Path(best["source"]).stem]
    rest = groups[2:]
    left = sum(g["count"] for g in rest)
    assert f"{len(rest)} more groups ({left} nodes)" in res.out
    assert "--all" in res.out and "--json" in res.out
    assert f"{total} machines in {len(groups)} hardware groups" in res.out
    everything = cli(*args, "--all")
    assert len(_rows(everything.out)) == len(groups)
    assert "more group" not in everything.out
    default = cli(*args)
    assert len(_rows(default.out)) == min(len(groups), DEFAULT_LIMIT)


def test_json_is_every_machine_whatever_the_limit(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    _fleet(tmp_path, lambda i: 2)
    args = ["fleet", str(tmp_path), "-m", "resnet50", "--json"]
    one, every = cli(*args, "--limit", "1").json(), cli(*args, "--all").json()
    assert [m["source"] for m in one["machines"]] == [m["source"] for m in every["machines"]]
    assert one["groups"] == every["groups"]


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        (["--limit", "0"], "--limit must be 1 or more, got 0"),
        (["--limit", "2", "--all"], "--limit and --all cannot be combined"),
        (["--limit", "many"], "--limit"),
    ],
)
def test_a_bad_limit_is_one_line(cli, extra: list[str], said: str) -> None:  # type: ignore[no-untyped-def]
    res = cli("fleet", str(RECORDED[0]), "-m", "resnet50", *extra)
    assert res.code == 2
    (line,) = res.error_lines()
    assert said in line


def test_more_line_counts_groups_and_nodes() -> None:
    wl = build_workload(model="resnet50")
    report = FleetReport(
        workload=wl,
        machines=[],
        groups=[
            {"rank": 1, "count": 5, "first": 1},
            {"rank": 2, "count": 3, "first": 6},
            {"rank": 3, "count": 1, "first": 9},
        ],
    )
    assert more_line(report, 3) is None and more_line(report, None) is None
    line = more_line(report, 1)
    assert line is not None and "2 more groups (4 nodes)" in line


def test_skipped_reports_are_counted_by_reason() -> None:
    skips = [FleetSkip(source=f"r{i}.json", reason="not valid JSON") for i in range(40)]
    skips += [FleetSkip(source="odd.json", reason="no cpu section")]
    skips += [FleetSkip(source=f"x{i}.json", reason=f"reason {i}") for i in range(6)]
    report = FleetReport(workload=build_workload(model="resnet50"), skipped=skips)
    lines = skipped_lines(report, reasons=3)
    assert lines[0] == "skipped 40: r0.json (and 39 more): not valid JSON"
    assert len(lines) == 4
    assert lines[-1].startswith("skipped 5 more for 5 other reasons")
