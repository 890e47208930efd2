"""Prices as people rent: one GPU where it is sold singly, never a silent 8-GPU bill."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.instances import InstanceCatalog, load_instances, stale_warning
from hwadvisor.cost.choose import cheapest, cheapest_instance, fastest, instance_options
from hwadvisor.cost.job import job_cost
from hwadvisor.cost.price import per_requests_usd

from .conftest import TODAY

Cli = Callable[..., Any]
DEVICES = load_devices()
SHIPPED = load_instances(cached=False)
#: RunPod's per-GPU pods, as SkyPilot's RunPod catalog lists them (catalogs/v8/runpod).
RUNPOD_2X = SHIPPED.find("1x_A100-80GB_SECURE").__class__(
    instance_type="2x_A100-80GB_SECURE",
    device_id="a100-80gb",
    accelerator_count=2,
    vcpus=16,
    memory_gib=234,
    price=2.78,
    spot_price=None,
    cloud="runpod",
    price_date="2026-12-06",
)


def test_a_marketplace_bills_the_gpus_the_job_uses() -> None:
    one_of_two = job_cost(RUNPOD_2X, 3600.0, devices_used=1)
    assert one_of_two.on_demand_usd == pytest.approx(1.39)
    assert any("sells these GPUs singly" in n for n in one_of_two.notes)
    assert RUNPOD_2X.billed_gpus(1) == 1 and RUNPOD_2X.billed_gpus(2) == 2


def test_a_whole_instance_bills_all_its_gpus_and_says_so() -> None:
    p4de = SHIPPED.find("p4de.24xlarge")
    cost = job_cost(p4de, 3600.0, devices_used=1)
    assert cost.on_demand_usd == pytest.approx(p4de.price)  # all 8 GPUs, for one
    assert any("uses 1 of 8 GPUs: the whole instance is billed" in n for n in cost.notes)


def test_the_cheapest_instance_is_chosen_by_what_the_job_is_billed() -> None:
    both = InstanceCatalog(instances=(SHIPPED.find("p4de.24xlarge"), RUNPOD_2X))
    assert cheapest_instance(both, "a100-80gb", 1) is RUNPOD_2X  # 1.39 for one, not 40.97


def test_a_pick_billed_for_a_whole_node_names_the_option_sized_to_the_job() -> None:
    a100 = DEVICES["a100-80gb"]
    node = instance_options(SHIPPED.find("p4de.24xlarge"), a100, 1800.0, count=1, spot=False)
    single = instance_options(SHIPPED.find("1x_A100-80GB_SECURE"), a100, 3000.0, spot=False)
    fast = fastest([*node, *single], deadline_s=86400.0)
    assert fast is not None and fast.instance == "p4de.24xlarge"
    assert any(
        "bills all 8 of its GPUs for a job on 1" in w and "1x_A100-80GB_SECURE" in w
        for w in fast.why
    )
    cheap = cheapest([*node, *single], deadline_s=86400.0)
    assert cheap is not None and cheap.instance == "1x_A100-80GB_SECURE"
    assert not any("bills all" in w for w in cheap.why)


def test_the_readme_job_prices_an_h100_row_as_a_single_h100(cli: Cli) -> None:
    code, out, err = cli(
        "recommend", "--facts", "tests/data/facts/laptop.json", "-s", "training",
        "-m", "resnet50", "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    h100 = _costs(json.loads(out))["h100-sxm"]
    # One H100 is rented as one (Lambda's gpu_1x_h100_sxm5), not as p5.48xlarge's eight.
    assert h100["instance"] == "gpu_1x_h100_sxm5" and h100["devices"] == 1
    assert h100["on_demand_usd"] < 2 and h100["price_date"] == "2026-12-06"


def _costs(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The cost of each estimate row of an advice or estimate document, by device."""
    found: dict[str, dict[str, Any]] = {}

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("cost"), dict) and "device" in node:
                found.setdefault(node["device"], node["cost"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    return found


def test_serving_is_priced_per_thousand_requests_over_the_month() -> None:
    # $730 a month at 1 QPS: 2,628,000 requests, $0.2778 per 1,000; no minimum per request.
    assert per_requests_usd(730.0, 1.0) == pytest.approx(730.0 / 2628.0)
    assert per_requests_usd(None, 1.0) is None and per_requests_usd(730.0, 0.0) is None


def test_serving_costs_carry_the_price_per_thousand_requests(cli: Cli) -> None:
    code, out, err = cli(
        "estimate", "--model", "bert-base", "--task", "infer", "--qps", "20",
        "--on", "t4", "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    cost = json.loads(out)["estimates"][0]["cost"]
    assert cost["monthly_usd"] is not None
    per_k = cost["monthly_usd"] / (20 * 730 * 3600 / 1000)
    assert any(f"${per_k:.4g} per 1,000 requests" in n for n in cost["notes"]), cost["notes"]


def test_the_stale_warning_names_the_command_that_fixes_it() -> None:
    warning = stale_warning(SHIPPED.find("g4dn.xlarge"), TODAY)
    assert warning is not None and "`hwadvisor prices update`" in warning


def test_a_row_billed_for_a_whole_node_says_so_and_that_no_smaller_offer_is_priced(
    cli: Cli,
) -> None:
    code, out, err = cli("estimate", "--model", "resnet50", "--on", "h200", "--no-bench", "--json")
    assert code == 0, err
    cost = json.loads(out)["estimates"][0]["cost"]
    assert cost["instance"] == "p5en.48xlarge"  # the only priced H200 offer: 8 GPUs
    assert any("the whole instance is billed" in n for n in cost["notes"])
    assert any("no priced offer of fewer than 8 x h200" in n for n in cost["notes"])
