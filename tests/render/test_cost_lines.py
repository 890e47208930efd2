"""The one-line cost summaries: dollars with their date, and why a row has none."""

from __future__ import annotations

from hwadvisor.cost.model import Cost
from hwadvisor.models.cost import Choice
from hwadvisor.render.cost import choice_summary, cost_summary


def test_a_priced_instance_without_the_jobs_time_says_that_is_why() -> None:
    stale = "the price of g4dn.xlarge is dated 2022-04, 4.7 years old: refresh it"
    cost = Cost(instance="g4dn.xlarge", hourly_usd=0.526, notes=["priced the whole job", stale])
    line = cost_summary(cost)
    assert line == "unpriced (g4dn.xlarge at $0.526 an hour; the job's time is unknown)"
    nothing = Cost(notes=["no priced instance carries 1 x a10: give --prices FILE"])
    assert (
        cost_summary(nothing) == "unpriced (no priced instance carries 1 x a10: give --prices FILE)"
    )


def test_a_job_on_several_nodes_names_them() -> None:
    cost = Cost(instance="p5.48xlarge", hourly_usd=98.32, time_s=3600, on_demand_usd=786.56,
                instances=8, price_date="2025-05")  # fmt: skip
    assert cost_summary(cost).startswith("$786.56 on demand on 8 x p5.48xlarge (prices of 2025-05")
    pick = Choice(device="h100-sxm x32", instance="p5.48xlarge", usd=10.0, time_s=5.0,
                  meets_deadline=True, plan="32 × NVIDIA H100 SXM 80GB with FSDP (ZeRO-3)",
                  nodes=4, fits=True, price_date="2025-05")  # fmt: skip
    assert choice_summary("cheapest", pick) == (
        "cheapest: 32 × NVIDIA H100 SXM 80GB with FSDP (ZeRO-3) on 4 x p5.48xlarge, $10.00, "
        "price of 2025-05, meets the deadline"
    )
    held = pick.model_copy(update={"fits": False, "plan": None, "nodes": 1})
    assert "(does not fit in memory: no priced option holds the job)" in choice_summary("c", held)
