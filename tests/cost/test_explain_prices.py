"""``rules explain`` of a cost rule is priced exactly as ``recommend`` is.

A price file the test writes (a SkyPilot-format CSV, dated by its modification time)
and ``--price-per-hour`` change what HW802 and HW804 explain, and the prices the
explanation shows are the picks ``recommend`` names with the same options.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

import pytest

REPORTS = Path(__file__).resolve().parents[1] / "data" / "reports"
FACTS = str(REPORTS / "recorded-spr-amx-kvm.json")
#: S5's case: 300 BERT-base requests a day with a two-second target.
SERVING = ["-s", "inference", "--model", "bert-base", "--qps", "0.00347", "--latency-ms", "2000"]
TRAINING = ["-s", "training", "--model", "resnet50", "--dataset-size", "2000", "--epochs", "1"]
HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region\n"


def _price_file(folder: Path, rows: str) -> str:
    """A SkyPilot catalog CSV, dated 2026-11-01 by its modification time."""
    path = folder / "vms.csv"
    path.write_text(HEADER + rows)
    stamp = datetime(2026, 11, 1, tzinfo=timezone.utc).timestamp()
    os.utime(path, (stamp, stamp))
    return str(path)


def _both(cli, rule: str, options: list[str]) -> tuple[dict, dict]:  # type: ignore[no-untyped-def]
    """(recommend --json, rules explain RULE --json) with the same options."""
    rec = cli("recommend", *options, "--facts", FACTS, "--json")
    exp = cli("rules", "explain", rule, *options, "--facts", FACTS, "--json")
    assert rec.code == 0, rec.err
    assert exp.code == 0, exp.err
    return rec.json(), exp.json()


def _fired(advice: dict) -> set[str]:
    return {f["rule"] for f in advice["findings"]}


def test_a_price_file_changes_hw802_as_it_changes_recommend(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rec, exp = _both(cli, "HW802", SERVING)
    assert exp["fires"] is True and "HW802" in _fired(rec)
    assert exp["prices"]["source"] == "the shipped instance catalog"
    # A GPU instance at 5 cents an hour: a month of it is cheaper than any CPU instance.
    cheap = _price_file(tmp_path, "g4dn.xlarge,T4,1,4,16,0.05,0.02,us-east-1\n")
    rec, exp = _both(cli, "HW802", [*SERVING, "--prices", cheap])
    assert exp["fires"] is False and "HW802" not in _fired(rec)
    assert cheap in exp["prices"]["source"]
    gpu = exp["prices"]["picks"]["cheapest_gpu"]
    assert gpu == rec["estimates"]["cheapest_gpu"]
    assert gpu["instance"] == "g4dn.xlarge" and gpu["usd"] == pytest.approx(0.05 * 730)
    assert gpu["price_date"] == "2026-11-01"
    ratio = next(n for n in exp["nodes"] if "gpu_over_cpu" in n["test"])
    cpu = exp["prices"]["picks"]["cheapest_cpu"]["usd"]
    assert ratio["values"]["cost.gpu_over_cpu"] == pytest.approx(gpu["usd"] / cpu)


def test_every_pick_shown_is_the_one_recommend_names(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    prices = _price_file(
        tmp_path,
        "g4dn.xlarge,T4,1,4,16,0.30,0.10,us-east-1\np3.2xlarge,V100,1,8,61,1.0,,us-east-1\n",
    )
    rec, exp = _both(cli, "HW804", [*TRAINING, "--prices", prices, "--budget", "low"])
    picks = exp["prices"]["picks"]
    assert picks, exp
    for name, pick in picks.items():
        assert pick == rec["estimates"][name], name
    assert {"cheapest", "fastest"} <= set(picks)


def test_price_per_hour_prices_here_in_the_explanation(cli) -> None:  # type: ignore[no-untyped-def]
    _, cloud = _both(cli, "HW804", TRAINING)
    assert cloud["prices"]["own_hardware"] is None
    assert cloud["prices"]["picks"]["cheapest"]["device"] != "here"
    rec, own = _both(cli, "HW804", [*TRAINING, "--price-per-hour", "0.001"])
    assert own["prices"]["own_hardware"].startswith("--price-per-hour 0.001")
    cheapest = own["prices"]["picks"]["cheapest"]
    assert cheapest["device"] == "here" and cheapest == rec["estimates"]["cheapest"]
    assert own["fires"] is ("HW804" in _fired(rec))


def test_the_terminal_explanation_names_the_file_and_dates(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    cheap = _price_file(tmp_path, "g4dn.xlarge,T4,1,4,16,0.05,0.02,us-east-1\n")
    res = cli("rules", "explain", "HW802", *SERVING, "--facts", FACTS, "--prices", cheap)
    assert res.code == 0, res.err
    flat = " ".join(res.out.split())
    assert "laid over the shipped instance catalog" in flat
    assert "g4dn.xlarge" in flat and "price of 2026-11-01" in flat


def test_a_rule_without_prices_shows_none(cli) -> None:  # type: ignore[no-untyped-def]
    res = cli("rules", "explain", "HW111", "--facts", FACTS, "--json")
    assert res.code == 0 and "prices" not in res.json()


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        ("g4dn.xlarge,T4,1,4,16,-1,,us-east-1\n", "must be 0 or more"),
        (None, "missing column"),
    ],
)
def test_a_bad_price_file_is_one_line(cli, tmp_path: Path, rows: str | None, said: str) -> None:  # type: ignore[no-untyped-def]
    if rows is None:
        path = tmp_path / "vms.csv"
        path.write_text("InstanceType,Price\ng4dn.xlarge,1\n")
        prices = str(path)
    else:
        prices = _price_file(tmp_path, rows)
    res = cli("rules", "explain", "HW802", *SERVING, "--facts", FACTS, "--prices", prices)
    assert res.code == 2
    (line,) = res.error_lines()
    assert said in line
    res = cli("rules", "explain", "HW804", *TRAINING, "--price-per-hour", "-1")
    assert res.code == 2 and len(res.error_lines()) == 1
