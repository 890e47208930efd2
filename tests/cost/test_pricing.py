"""Cost through the product: `estimate` and `recommend` price every estimate and name the
cheapest option that meets the deadline, the fastest, and the budget pick; the documents'
claims (P1, S2, S5, C5) and their ratio table on their own instances, run as the user runs
them. Nothing here probes or benchmarks this machine (no 'here' without --facts)."""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cost import DEFAULT_ALLOWANCE
from hwadvisor.engine import load_rules

from .conftest import write

Cli = Callable[..., Any]
FACTS = Path(__file__).resolve().parents[1] / "data" / "facts"
IMAGENET = "1281167"
#: A few hundred requests a day (GUIDANCE S5): 300 a day, as requests per second.
S5_QPS = f"{300 / 86400:.6f}"
OUR_HEADER = "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,DeviceId,PriceDate"


def _estimate(cli: Cli, *args: str) -> dict[str, Any]:
    result = cli("estimate", "--no-bench", "--json", *args)
    assert result.code == 0, result.err
    return result.json()


def _rows(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["device"]: e for e in doc["estimates"]}


def test_p1_energy_per_job_of_90_resnet50_epochs_is_lower_on_an_a100_than_a_sapphire_rapids_cpu(
    cli: Cli,
) -> None:
    doc = _estimate(
        cli,
        *("--model", "resnet50", "--epochs", "90", "--dataset-size", IMAGENET),
        *("--on", "a100-80gb", "--on", "xeon-8480", "--on", "c7i-flex.xlarge"),
    )
    rows = _rows(doc)
    gpu, cpu, small = rows["a100-80gb"], rows["xeon-8480"], rows["c7i-flex.xlarge"]
    for est in (gpu, cpu, small):
        cost = est["cost"]
        # Energy is board power x the estimated time, with the power's source stated.
        assert cost["energy_kwh"] == pytest.approx(cost["power_w"] * est["total_time_s"] / 3.6e6)
        assert cost["power_source"]
    assert gpu["cost"]["power_w"] > cpu["cost"]["power_w"]  # the GPU draws more power ...
    assert gpu["cost"]["energy_kwh"] < cpu["cost"]["energy_kwh"]  # ... and uses less energy
    assert gpu["cost"]["energy_kwh"] < small["cost"]["energy_kwh"]  # a CPU instance too


def test_every_estimate_carries_a_cost_and_spot_is_below_on_demand(cli: Cli) -> None:
    doc = _estimate(
        cli,
        *("--model", "resnet50", "--epochs", "1", "--dataset-size", IMAGENET),
        *("--on", "p3.2xlarge", "--on", "n1-highmem-8", "--on", "Standard_NC6s_v3"),
        *("--on", "g5.xlarge", "--on", "t4", "--on", "rtx-4090"),
    )
    spots = 0
    for est in doc["estimates"]:
        cost = est["cost"]
        assert cost is not None, est["device"]
        if cost["on_demand_usd"] is not None:
            assert cost["price_date"] and cost["price_source"], est["device"]
        if cost["spot_usd"] is not None:
            spots += 1
            assert cost["spot_usd"] < cost["on_demand_usd"], est["device"]
            assert cost["spot_allowance"] == pytest.approx(DEFAULT_ALLOWANCE.fraction())
            assert "interruptions" in cost["spot_basis"]
    assert spots >= 4
    rtx = _rows(doc)["rtx-4090"]["cost"]  # no instance carries it: energy only, and why
    assert rtx["on_demand_usd"] is None and rtx["energy_kwh"] and "--prices" in rtx["notes"][-1]


def test_on_takes_an_instance_type_priced_for_its_time(cli: Cli) -> None:
    doc = _estimate(
        cli,
        *("--model", "resnet50", "--epochs", "1", "--dataset-size", IMAGENET),
        *("--on", "p4d.24xlarge", "--on", "C7I-FLEX.XLARGE", "--on", "ecs.gn6i-c4g1.xlarge"),
    )
    rows = _rows(doc)
    assert list(rows) == ["p4d.24xlarge", "c7i-flex.xlarge", "ecs.gn6i-c4g1.xlarge"]  # no defaults
    p4d = rows["p4d.24xlarge"]
    assert p4d["gpus"] == 8 and "8 x NVIDIA A100" in p4d["name"]
    assert p4d["cost"]["instance"] == "p4d.24xlarge"
    assert p4d["cost"]["on_demand_usd"] == pytest.approx(32.773 * p4d["total_time_s"] / 3600)
    cpu = rows["c7i-flex.xlarge"]  # 4 vCPUs: 2 cores of the 48-core processor, not all of it
    assert cpu["gpus"] == 1 and "4 vCPUs (2 cores)" in cpu["name"]
    assert cpu["cost"]["power_w"] == pytest.approx(350 * 2 / 48)
    alibaba = rows["ecs.gn6i-c4g1.xlarge"]["cost"]
    assert alibaba["on_demand_usd"] is None and "without an account" in alibaba["notes"][-1]


def test_the_cheapest_option_meeting_the_deadline_and_the_fastest(cli: Cli) -> None:
    doc = _estimate(
        cli,
        *("--model", "resnet50", "--epochs", "10", "--dataset-size", IMAGENET, "--deadline", "12"),
        *("--on", "p3.2xlarge", "--on", "n1-highmem-8", "--on", "a2-highgpu-1g"),
        *("--on", "t4", "--on", "h100-sxm"),
    )
    deadline = 12 * 3600
    options = [
        (e["cost"]["on_demand_usd"], e["total_time_s"], e["cost"]["instance"])
        for e in doc["estimates"]
        if e["cost"]["on_demand_usd"] is not None
    ]
    meeting = [o for o in options if o[1] <= deadline]
    assert meeting and len(meeting) < len(options)  # the T4 misses 12 h: the pick is not it
    best = min(meeting)
    pick = doc["cheapest"]
    assert (pick["usd"], pick["instance"]) == pytest.approx((best[0], best[2]))
    assert pick["meets_deadline"] and pick["price_date"] and not pick["spot"]
    assert doc["fastest"]["time_s"] == min(e["total_time_s"] for e in doc["estimates"])
    assert doc["budget_low"] is None  # only under --budget low


def test_budget_low_names_spot_and_the_cheapest_instance_meeting_the_deadline(cli: Cli) -> None:
    """S2 and C5: spot/preemptible instances, previous-generation GPUs, with real prices."""
    doc = _estimate(
        cli,
        *("--model", "resnet50", "--epochs", "10", "--dataset-size", IMAGENET, "--deadline", "12"),
        *("--on", "p3.2xlarge", "--on", "n1-highmem-8", "--on", "Standard_NC6s_v3"),
        *("--on", "a2-highgpu-1g", "--budget", "low"),
    )
    low = doc["budget_low"]
    assert low["spot"] and low["meets_deadline"] and low["cites"] == ["S2", "C5"]
    assert any("spot" in why for why in low["why"])
    # The cheapest of every option, spot (with the allowance's extra time) and on demand.
    slow = 1 + DEFAULT_ALLOWANCE.fraction()
    every = []
    for e in doc["estimates"]:
        c, t = e["cost"], e["total_time_s"]
        every.append((c["on_demand_usd"], t, c["instance"]))
        if c["spot_usd"] is not None:
            every.append((c["spot_usd"], t * slow, c["instance"]))
    best = min(o for o in every if o[0] is not None and o[1] <= 12 * 3600)
    assert (low["usd"], low["instance"]) == pytest.approx((best[0], best[2]))
    assert low["usd"] < doc["cheapest"]["usd"]
    assert any("previous-generation" in w for w in low["why"]) == (low["device"] == "v100-16gb")


def test_budget_low_advice_cites_s2_and_c5_with_the_numbers(cli: Cli) -> None:
    result = cli(
        "recommend",
        *("--scenario", "training", "--model", "resnet50", "--epochs", "10"),
        *("--dataset-size", IMAGENET, "--deadline", "12", "--budget", "low"),
        *("--facts", str(FACTS / "laptop.json"), "--no-bench", "--json"),
    )
    assert result.code == 0, result.err
    doc = result.json()
    low = doc["estimates"]["budget_low"]
    # Spot and on-demand weighed together: here a per-GPU RunPod A100 on demand ($1.39/h)
    # undercuts every spot offer with its interruption allowance.
    assert low["meets_deadline"] and low["usd"] <= doc["estimates"]["cheapest"]["usd"]
    # Previous generations are weighed under --budget low: the V100s and the A100 40GB.
    assert {"v100-16gb", "a100-40gb"} <= {a["device"] for a in doc["estimates"]["alternatives"]}
    found = next(f for f in doc["findings"] if f["rule"] == "HW803")
    assert set(found["source"]) == {"S2", "C5"}
    assert f"{low['usd']:.2f} USD" in found["message"] and low["price_date"] in found["message"]
    assert ("on spot" in found["message"]) == low["spot"]


def test_s5_300_bert_requests_a_day_cost_less_on_a_cpu_instance_and_the_verdict_says_cpu(
    cli: Cli,
) -> None:
    result = cli(
        "recommend",
        *("--scenario", "inference", "--model", "bert-base", "--qps", S5_QPS),
        *("--latency-ms", "2000", "--facts", str(FACTS / "laptop.json"), "--no-bench", "--json"),
    )
    assert result.code == 0, result.err
    doc = result.json()
    est = doc["estimates"]
    cpu, gpu = est["cheapest_cpu"], est["cheapest_gpu"]
    assert cpu["cpu"] and cpu["per"] == "month" and cpu["meets_deadline"]
    assert cpu["usd"] < gpu["usd"]
    # The cheapest GPU option is the cheapest monthly bill of every GPU alternative.
    gpu_bills = [
        a["cost"]["monthly_usd"]
        for a in est["alternatives"]
        if a["cost"] and a["cost"]["monthly_usd"] and a["device"] != cpu["instance"]
    ]
    assert gpu["usd"] == pytest.approx(min(gpu_bills))
    assert est["cheapest"]["instance"] == cpu["instance"]
    # Billed whether busy or idle: a month of one instance at its hourly price.
    cpu_alt = next(a for a in est["alternatives"] if a["device"] == cpu["instance"])
    assert cpu_alt["cost"]["monthly_usd"] == pytest.approx(cpu_alt["cost"]["hourly_usd"] * 730)
    assert cpu_alt["cost"]["instances"] == 1
    verdict = doc["verdict"]
    assert verdict["device"] == "cpu"
    assert "S5" in load_rules().get(verdict["rule"]).source
    s5 = next(f for f in doc["findings"] if f["rule"] == "HW802")
    assert "300 a day" in s5["message"] and f"{cpu['usd']:.2f} USD a month" in s5["message"]


def test_own_hardware_prices_here_and_is_an_option(cli: Cli) -> None:
    result = cli(
        "recommend",
        *("--scenario", "training", "--model", "resnet50", "--epochs", "1"),
        *("--dataset-size", "100000", "--price-per-hour", "0.5"),
        *("--facts", str(FACTS / "cpu-server-amx.json"), "--no-bench", "--json"),
    )
    assert result.code == 0, result.err
    here = result.json()["estimates"]["here"]
    cost = here["cost"]
    assert cost["instance"] == "here" and "own hardware" in cost["price_source"]
    assert cost["on_demand_usd"] == pytest.approx(0.5 * here["total_time_s"] / 3600)
    assert cost["price_date"] == date.today().isoformat()


def test_own_hardware_from_a_purchase_and_electricity(cli: Cli) -> None:
    result = cli(
        "recommend",
        *("--scenario", "training", "--model", "resnet50", "--epochs", "1"),
        *("--dataset-size", "100000", "--purchase-usd", "8760", "--years", "1"),
        *("--electricity-usd-kwh", "0.2"),
        *("--facts", str(FACTS / "cpu-server-amx.json"), "--no-bench", "--json"),
    )
    assert result.code == 0, result.err
    cost = result.json()["estimates"]["here"]["cost"]
    # $1 an hour of purchase, plus the processor's share of its TDP at $0.2 per kWh.
    assert cost["hourly_usd"] == pytest.approx(1.0 + cost["power_w"] / 1000 * 0.2)


def test_the_terminal_shows_every_cost_with_its_price_date(cli: Cli) -> None:
    result = cli(
        "estimate",
        *("--model", "resnet50", "--epochs", "1", "--dataset-size", IMAGENET, "--no-bench"),
        *("--on", "p3.2xlarge", "--on", "t4", "--on", "ecs.c7.large"),
    )
    assert result.code == 0, result.err
    text = " ".join(result.out.split())
    assert "prices of 2022-03" in text and "prices of 2022-04" in text
    assert "cheapest: v100-16gb on p3.2xlarge" in text or "cheapest: t4 on g4dn.xlarge" in text
    assert "fastest: " in text
    # Every dollar figure is followed by the date of its price (the line may wrap).
    costs = re.findall(r"\$[\d.,]+ on demand on \S+", text)
    dated = re.findall(
        r"\$[\d.,]+ on demand on \S+(?:; \$[\d.,]+ on spot \(\+[\d.]+% for interruptions\))?"
        r" \(prices of \d{4}-\d{2}",
        text,
    )
    assert len(costs) == 2 and len(dated) == len(costs), text
    # The shipped snapshots are older than a year: a warning names the date.
    warning = [ln for ln in result.err.splitlines() if "warning" in ln]
    assert len(warning) == 1 and "dated 2022-03" in warning[0]


def test_a_fresh_price_file_prices_the_documents_alibaba_instances(
    cli: Cli, tmp_path: Path
) -> None:
    today = date.today().isoformat()
    prices = write(
        tmp_path,
        "alibaba.csv",
        [
            OUR_HEADER,
            f"ecs.c7.large,,0,2,4,0.07,0.02,cn-hangzhou,xeon-8369b,{today}",
            f"ecs.gn6i-c4g1.xlarge,T4,1,4,15,1.40,0.35,cn-hangzhou,t4,{today}",
        ],
    )
    result = cli(
        "estimate",
        *("--model", "resnet50", "--epochs", "1", "--dataset-size", IMAGENET, "--no-bench"),
        *("--on", "ecs.c7.large", "--on", "ecs.gn6i-c4g1.xlarge", "--prices", str(prices)),
        "--json",
    )
    assert result.code == 0, result.err
    assert "warning" not in result.err  # fresh prices: nothing stale
    doc = result.json()
    rows = _rows(doc)
    gpu = rows["ecs.gn6i-c4g1.xlarge"]
    assert gpu["cost"]["on_demand_usd"] == pytest.approx(1.40 * gpu["total_time_s"] / 3600)
    assert gpu["cost"]["price_date"] == today and not gpu["cost"]["stale"]
    # The CPU instance takes days: the GPU instance is cheaper as well as faster.
    assert doc["cheapest"]["instance"] == doc["fastest"]["instance"] == "ecs.gn6i-c4g1.xlarge"


def _ratio(cli: Cli, model: str, task: str, cpu: str, gpu: str) -> float:
    extra = ["--dataset-size", IMAGENET] if task == "train" else ["--batch-size", "1"]
    doc = _estimate(cli, "--model", model, "--task", task, *extra, "--on", cpu, "--on", gpu)
    rows = _rows(doc)
    key = "total_time_s" if task == "train" else "step_time_s"
    return float(rows[cpu][key] / rows[gpu][key])


def test_ratio_table_resnet50_training_on_the_documents_instances(cli: Cli) -> None:
    """R3: ResNet-50 training, CPU (c7.large) against GPU (gn6i): 10x-100x or more."""
    ratio = _ratio(cli, "resnet50", "train", "ecs.c7.large", "ecs.gn6i-c4g1.xlarge")
    assert ratio >= 10


@pytest.mark.parametrize(
    ("model", "low", "high", "cpu_ms", "gpu_max"),
    [
        ("bert-base", 5, 20, (10, 100), 10),  # R4: CPU tens of ms, GPU a few ms: 5x-20x
        # R5: CPU ~30-50 ms, GPU under 5 ms: 2x-5x. Eager PyTorch at batch 1 is the host's
        # launches: Ultralytics publish 6.3 ms on a V100 (yolov5 README, p3.2xlarge), so
        # the GPU side is held to that figure rather than the documents' "under 5 ms"
        ("yolov5n", 2, 5, (30, 50), 7),
    ],
)
def test_ratio_table_inference_gap_on_two_vcpus_is_the_core_count(
    cli: Cli, model: str, low: float, high: float, cpu_ms: tuple[float, float], gpu_max: float
) -> None:
    """R4, R5 on the documents' instances: 2 vCPUs are one core, so the CPU side is far
    slower than the documents' figures and the ratio lands above their range; the ECS c7
    size whose latency lands in the documents' CPU figure (docs/cost.md) is larger."""
    tight = _ratio(cli, model, "infer", "ecs.c7.large", "ecs.gn6i-c4g1.xlarge")
    assert tight > high
    sizes = ("ecs.c7.xlarge", "ecs.c7.2xlarge", "ecs.c7.4xlarge", "ecs.c7.8xlarge")
    doc = _estimate(
        cli, "--model", model, "--task", "infer", "--batch-size", "1",
        *[a for s in sizes for a in ("--on", s)], "--on", "ecs.gn6i-c4g1.xlarge",
    )  # fmt: skip
    rows = _rows(doc)
    gpu_ms = rows["ecs.gn6i-c4g1.xlarge"]["step_time_s"] * 1000
    assert gpu_ms < gpu_max  # the documents' GPU figure: a few ms (YOLOv5n: under 5 ms)
    in_figure = [s for s in sizes if cpu_ms[0] <= rows[s]["step_time_s"] * 1000 <= cpu_ms[1]]
    assert in_figure, {s: rows[s]["step_time_s"] * 1000 for s in sizes}
    ratios = [rows[s]["step_time_s"] * 1000 / gpu_ms for s in in_figure]
    if model == "bert-base":  # at the documents' CPU latency the ratio is theirs
        assert any(low <= r <= high for r in ratios), ratios
    else:  # their own figures give >= 30/5 = 6x: the gap is explained in docs/cost.md
        assert all(r > cpu_ms[0] / gpu_max for r in ratios), ratios


@pytest.mark.parametrize("seq", [8, 16, 32, 48])
def test_ratio_table_bert_base_short_requests_on_the_documents_instances(
    cli: Cli, seq: int
) -> None:
    """R4 on the documents' own pair: for a request of up to ~50 tokens all three of their
    figures hold at once: the CPU (c7.large) in tens of ms, the GPU (gn6i) a few ms and
    the ratio 5x-20x. A 128-token request takes the one core of c7.large ~190 ms, which
    their "tens of ms" rules out (docs/cost.md)."""
    doc = _estimate(
        cli, "--model", "bert-base", "--task", "infer", "--batch-size", "1",
        "--seq-len", str(seq), "--on", "ecs.c7.large", "--on", "ecs.gn6i-c4g1.xlarge",
    )  # fmt: skip
    rows = _rows(doc)
    cpu_ms = rows["ecs.c7.large"]["step_time_s"] * 1000
    gpu_ms = rows["ecs.gn6i-c4g1.xlarge"]["step_time_s"] * 1000
    assert 10 <= cpu_ms < 100, cpu_ms
    assert gpu_ms < 10, gpu_ms
    assert 5 <= cpu_ms / gpu_ms <= 20, cpu_ms / gpu_ms


def test_a_job_no_single_gpu_holds_is_priced_on_its_plan(cli: Cli) -> None:
    """70B at 4,096 tokens fits no GPU as written: the picks are the plan (its GPUs on
    full nodes, timed with its fixes), never a row the job does not fit."""
    doc = _estimate(
        cli, "--params", "70B", "--seq-len", "4096", "--task", "train",
        "--dataset-size", "100000", "--on", "h100-sxm", "--on", "a100-80gb",
    )  # fmt: skip
    rows = _rows(doc)
    assert all(r["fits"] is False and r["plan"]["total_time_s"] for r in rows.values())
    pick = doc["cheapest"]
    assert pick["fits"] is True and pick["plan"] in {r["plan"]["plan"] for r in rows.values()}
    row = next(r for r in rows.values() if r["plan"]["plan"] == pick["plan"])
    assert pick["time_s"] == pytest.approx(row["plan"]["total_time_s"])
    assert pick["nodes"] == -(-row["plan"]["gpus"] // 8)
    assert doc["fastest"]["fits"] is True


def test_picks_skip_an_option_the_job_does_not_fit() -> None:
    from hwadvisor.cost import Option, cheapest, fastest

    small = Option("t4", "g", 1.0, 10.0, fits=False)
    big = Option("h100-sxm", "p", 9.0, 20.0, fits=True)
    unknown = Option("l4", "q", 5.0, 30.0)
    assert cheapest([small, big, unknown], None).instance == "q"  # type: ignore[union-attr]
    assert fastest([small, big], None).instance == "p"  # type: ignore[union-attr]
    only = cheapest([small], None)
    assert only is not None and only.fits is False
    assert "no priced option holds the job in memory as written" in only.why


# Bad input: one line on stderr, exit 2, nothing written. -----------------------------------


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            [
                "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,SpotPrice,Region",
                "x,T4,1,4,16,0.1,r",
            ],
            "missing column 'Price'",
        ),
        (
            [OUR_HEADER, "g4dn.xlarge,T4,1,4,16,-1,,us-east-1,t4,2026-11"],
            "must be 0 or more, got -1",
        ),
        ([OUR_HEADER, "g4dn.xlarge,T4,1,4,16,nan,,us-east-1,t4,2026-11"], "not a finite number"),
    ],
)
def test_a_bad_price_file_is_one_line_and_nothing_is_written(
    cli: Cli, tmp_path: Path, lines: list[str], expected: str
) -> None:
    prices = write(tmp_path, "prices.csv", lines)
    out = tmp_path / "out.json"
    for command in (
        ["estimate", "--model", "resnet50", "--on", "t4", "--no-bench"],
        ["recommend", "--scenario", "training", "--model", "resnet50", "--no-bench"],
    ):
        args = (
            [*command, "--facts", str(FACTS / "laptop.json")]
            if command[0] == "recommend"
            else command
        )
        result = cli(*args, "--prices", str(prices), "--output", str(out))
        assert result.code == 2, result.err
        assert len(result.error_lines()) == 1 and expected in result.err, result.err
        assert "prices.csv" in result.err
        assert not out.exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--on", "p4d.24xlarg"], "did you mean p4d.24xlarge?"),
        (["--on", "ecs.gn6i"], "did you mean ecs.gn6i-c4g1.xlarge?"),
        (["--on", "t4", "--price-per-hour", "-1"], "--price-per-hour must be 0 or more, got -1"),
        (["--on", "t4", "--years", "2"], "--price-per-hour, or --purchase-usd and --years"),
        (["--on", "t4", "--purchase-usd", "1000", "--years", "0"], "--years must be above 0"),
    ],
)
def test_bad_pricing_options_are_one_line_and_nothing_is_written(
    cli: Cli, tmp_path: Path, args: list[str], expected: str
) -> None:
    out = tmp_path / "out.json"
    result = cli("estimate", "--model", "resnet50", "--no-bench", *args, "--output", str(out))
    assert result.code == 2, result.err
    assert len(result.error_lines()) == 1 and expected in result.err, result.err
    assert not out.exists()


def test_a_nan_price_per_hour_is_refused_by_recommend_before_any_work(
    cli: Cli, tmp_path: Path
) -> None:
    out = tmp_path / "advice.json"
    result = cli(
        "recommend", "--scenario", "training", "--model", "resnet50", "--price-per-hour", "nan",
        "--facts", str(FACTS / "laptop.json"), "--no-bench", "--output", str(out),
    )  # fmt: skip
    assert result.code == 2 and len(result.error_lines()) == 1, result.err
    assert "--price-per-hour" in result.err and not out.exists()
