"""Requests are billed by their own time: no instance's one-minute minimum per 1,000."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from hwadvisor.cost import billed_usd


def test_a_job_pays_the_minute_and_requests_do_not() -> None:
    assert billed_usd(3.6, 1.0) == pytest.approx(0.06)  # a one-second job pays a minute
    assert billed_usd(3.6, 1.0, minimum_s=0.0) == pytest.approx(0.001)


def test_per_thousand_requests_the_faster_and_cheaper_option_wins(cli: Callable[..., Any]) -> None:
    code, out, err = cli(
        "estimate", "--model", "bert-base", "--task", "infer", "--batch-size", "64",
        "--on", "t4", "--on", "a100-80gb", "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    usd = {}
    for est in doc["estimates"]:
        cost = est["cost"]
        assert "priced per 1,000 requests" in cost["notes"]
        # The time of 1,000 requests is seconds: billed by it, not by a minute.
        assert cost["time_s"] < 60
        assert cost["on_demand_usd"] == pytest.approx(cost["hourly_usd"] * cost["time_s"] / 3600)
        usd[est["device"]] = cost["on_demand_usd"]
    assert usd["t4"] != usd["a100-80gb"]
