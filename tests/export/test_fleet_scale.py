"""Fleets at scale: folders and JSON Lines, identical hardware priced once, --by, bad input."""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

import hwadvisor.estimate
from hwadvisor.cost.model import Cost
from hwadvisor.estimate import build_workload
from hwadvisor.export.fleet import Candidate, rank_fleet
from hwadvisor.export.gather import gather_fleet, hardware_key, read_reports
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.fleet import RankBy
from hwadvisor.models.workload import Workload

from .conftest import REPORTS, report_named

ROOT = Path(__file__).resolve().parents[2]
RECORDED = sorted(REPORTS.glob("recorded-*.json"))


def _copies(folder: Path, count: int, *, racks: int = 3) -> list[Path]:
    """``count`` reports from the recorded hosts, host names varied, over sub-folders."""
    docs = [json.loads(p.read_text()) for p in RECORDED]
    out = []
    for i in range(count):
        doc = docs[i % len(docs)]
        doc["host"]["hostname"] = f"node-{i:04d}"
        doc["generated_at"] = f"2026-11-30T02:{i % 60:02d}:00+00:00"
        sub = folder / f"rack-{i % racks}"
        sub.mkdir(parents=True, exist_ok=True)
        path = sub / f"node-{i:04d}.json"
        path.write_text(json.dumps(doc))
        out.append(path)
    return out


def test_a_folder_is_read_recursively_with_jsonl_and_without_dot_files(tmp_path: Path) -> None:
    paths = _copies(tmp_path, 6)
    lines = tmp_path / "rack-0" / "more.jsonl"
    lines.write_text("\n".join(p.read_text() for p in paths[:2]) + "\n\n{broken\n")
    hidden = tmp_path / ".cache"
    hidden.mkdir()
    (hidden / "x.json").write_text(paths[0].read_text())
    (tmp_path / "notes.txt").write_text("not a report")
    read = read_reports([tmp_path])
    assert len(read.reports) == 8
    assert [s.source for s in read.skipped] == [f"{lines}:4"]
    assert "not valid JSON" in read.skipped[0].reason
    assert not any(".cache" in r.source for r in read.reports)


def test_json_lines_on_stdin(tmp_path: Path) -> None:
    paths = _copies(tmp_path, 3)
    stdin = io.StringIO("\n".join(p.read_text() for p in paths) + "\n")
    read = read_reports(["-"], stdin=stdin)
    assert [r.source for r in read.reports] == ["<stdin>:1", "<stdin>:2", "<stdin>:3"]
    assert [r.facts.host.hostname for r in read.reports] == ["node-0000", "node-0001", "node-0002"]


def test_identical_hardware_shares_one_key_and_keeps_its_own_name(tmp_path: Path) -> None:
    paths = _copies(tmp_path, 2 * len(RECORDED))
    read = read_reports(paths)
    assert len(set(read.keys)) == len(RECORDED)
    a, b = read.reports[0], read.reports[len(RECORDED)]
    assert a.facts.cpu is b.facts.cpu  # validated once, shared
    assert (a.facts.host.hostname, b.facts.host.hostname) == (
        "node-0000",
        f"node-{len(RECORDED):04d}",
    )
    assert a.facts.generated_at != b.facts.generated_at
    # A machine that differs in anything else is its own key.
    doc = json.loads(paths[0].read_text())
    doc["memory"]["total_bytes"] += 1
    assert hardware_key(doc) != read.keys[0]


def test_identical_hardware_is_estimated_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    real = hwadvisor.estimate.estimate_workload

    def counting(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(str(kwargs.get("on")))
        return real(*args, **kwargs)

    monkeypatch.setattr(hwadvisor.estimate, "estimate_workload", counting)
    paths = _copies(tmp_path, 4 * len(RECORDED))
    wl = build_workload(model="resnet50", dataset_size=10_000, epochs=1)
    result = gather_fleet(paths, wl)  # no scenario: no rule engine, only the estimate
    assert len(result.machines) == len(paths)
    assert len(calls) == len(RECORDED)
    hosts = {m.hostname for m in result.machines}
    assert len(hosts) == len(paths)
    same = [
        m
        for m in result.machines
        if m.source.endswith(("node-0000.json", f"node-{len(RECORDED):04d}.json"))
    ]
    assert same[0].time_s == same[1].time_s and same[0].cost == same[1].cost


def _est(total: float) -> DeviceEstimate:
    return DeviceEstimate(
        device="here",
        step_time_s=1.0,
        total_time_s=total,
        fits=True,
        memory_bytes=1,
        device_memory_bytes=2,
    )


def test_by_cost_and_by_energy_reorder_machines_of_equal_status() -> None:
    reps = [
        report_named(n)
        for n in ("recorded-epyc-milan-kvm", "recorded-spr-amx-kvm", "recorded-laptop-avx2")
    ]
    costs = [
        Cost(on_demand_usd=3.0, energy_kwh=0.1),
        Cost(on_demand_usd=1.0, energy_kwh=0.9),
        Cost(on_demand_usd=None, energy_kwh=0.5),
    ]
    cands = [
        Candidate(r, _est(t), cost=c)
        for r, t, c in zip(reps, (100.0, 200.0, 300.0), costs, strict=True)
    ]
    wl = Workload(deadline_hours=1.0)
    order = {
        by: [Path(m.source).stem for m in rank_fleet(cands, wl, by=by).machines] for by in RankBy
    }
    assert order[RankBy.TIME] == [
        "recorded-epyc-milan-kvm",
        "recorded-spr-amx-kvm",
        "recorded-laptop-avx2",
    ]
    assert order[RankBy.COST] == [
        "recorded-spr-amx-kvm",
        "recorded-epyc-milan-kvm",
        "recorded-laptop-avx2",
    ]
    assert order[RankBy.ENERGY] == [
        "recorded-epyc-milan-kvm",
        "recorded-laptop-avx2",
        "recorded-spr-amx-kvm",
    ]
    assert rank_fleet(cands, wl, by=RankBy.COST).by is RankBy.COST


def test_fleet_command_reads_a_folder_and_prices_machines(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    for p in sorted(REPORTS.glob("synthetic-*.json")):
        (tmp_path / p.name).write_text(p.read_text())
    res = cli("fleet", str(tmp_path), "--model", "resnet50", "--by", "cost", "--json")
    assert res.code == 0, res.err
    doc = res.json()
    assert doc["by"] == "cost" and len(doc["machines"]) == 3
    t4 = next(m for m in doc["machines"] if m["priced_as"] == "t4")
    assert t4["cost"]["instance"] == "g4dn.xlarge" and t4["cost"]["price_date"] == "2022-04"
    assert t4["cost"]["energy_kwh"] == pytest.approx(70 * t4["time_s"] / 3.6e6)
    assert any("2022-04" in w for w in doc["warnings"])
    assert any("2022-04" in line and "warning" in line for line in res.error_lines())
    res = cli("fleet", str(tmp_path), "--model", "resnet50", "--price-per-hour", "2", "--json")
    assert res.code == 0
    for m in res.json()["machines"]:
        assert m["cost"]["on_demand_usd"] == pytest.approx(2 * m["time_s"] / 3600)


def test_fleet_bad_by_is_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    res = cli("fleet", str(RECORDED[0]), "--model", "resnet50", "--by", "speed")
    assert res.code == 2
    (line,) = res.error_lines()
    assert "--by must be time, cost or energy" in line


@pytest.mark.parametrize("content", [None, "{not json", '{"schema_version": "1.0", "tool": {}}'])
def test_a_folder_without_a_readable_report_is_bad_input(
    cli, tmp_path: Path, content: str | None
) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "sub").mkdir()
    if content is not None:
        (tmp_path / "sub" / "a.json").write_text(content)
    res = cli("fleet", str(tmp_path), "--model", "resnet50", "--json")
    assert res.code == 2
    (line,) = res.error_lines()
    assert "no report could be read" in line
    assert res.json()["error"]["exit_code"] == 2


def test_the_scale_benchmark_runs_the_real_command() -> None:
    run = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "fleet_scale.py"),
            "--count",
            "40",
            "--mode",
            "stdin",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr  # 1 only if this shared machine is slow
    doc = json.loads(run.stdout)
    assert doc["ranked"] == 40 and doc["skipped"] == 0 and doc["peak_rss_mb"] > 0
