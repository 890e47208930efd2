"""The cost model: the documents' claims (P1, S2, S5, C5) computed from the pure functions
with figures passed in, spot against on-demand, picks with a deadline, bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.instances import Instance, instance_device, load_instances
from hwadvisor.cost import (
    DEFAULT_ALLOWANCE,
    Option,
    OwnHardware,
    SpotAllowance,
    budget_low,
    cheapest,
    cheapest_instance,
    energy_kwh,
    fastest,
    instances_for_qps,
    job_cost,
    options_for,
    own_cost,
    replicas_per_instance,
    s5_holds,
    serving_cost,
    serving_option,
)
from hwadvisor.errors import UsageError

from .conftest import SKYPILOT_HEADER, TODAY, write

DEVICES = load_devices()
IMAGENET = 1_281_167
#: ResNet-50 AMP training on one A100 80GB: 2,470 img/s (NVIDIA DeepLearningExamples).
A100_IMG_S = 2470.0


def test_p1_energy_per_job_is_lower_on_an_a100_than_on_a_sapphire_rapids_cpu() -> None:
    """P1: the GPU draws more power but finishes sooner. 90 epochs of ResNet-50, the CPU
    given the documents' smallest GPU/CPU ratio (R1: ~10x): a two-socket Xeon 8480+."""
    images = 90 * IMAGENET
    gpu_s = images / A100_IMG_S
    cpu_s = images / (A100_IMG_S / 10)
    a100, xeon = DEVICES["a100-80gb"], DEVICES["xeon-8480"]
    gpu = energy_kwh(a100.board_power_w, gpu_s)
    cpu = energy_kwh(xeon.board_power_w, cpu_s, count=2)
    assert a100.board_power_w > 2 * xeon.board_power_w / 2  # the GPU draws more than a socket
    assert gpu is not None and cpu is not None and gpu < cpu
    assert gpu == pytest.approx(400 * gpu_s / 3.6e6)
    # The CPU would have to be within 400 / 700 of the GPU's speed to use less energy.
    assert cpu / gpu == pytest.approx(10 * 700 / 400)


def test_spot_is_below_on_demand_for_every_shipped_row_with_both() -> None:
    both = [i for i in load_instances().instances if i.price and i.spot_price]
    assert len(both) >= 8
    for inst in both:
        cost = job_cost(inst, 10 * 3600, device=DEVICES[inst.device_id], today=TODAY)
        assert cost.spot_usd is not None and cost.on_demand_usd is not None
        assert cost.spot_usd < cost.on_demand_usd, inst.instance_type
        assert cost.spot_allowance == pytest.approx(DEFAULT_ALLOWANCE.fraction())


def test_a_job_costs_its_time_not_an_hour() -> None:
    inst = Instance(
        "box", "t4", 1, 4, 16.0, price=0.36, spot_price=0.12, price_date="2026-10", source="test"
    )
    cost = job_cost(inst, 30 * 60, device=DEVICES["t4"], today=TODAY)
    assert cost.on_demand_usd == pytest.approx(0.18)
    assert cost.spot_usd == pytest.approx(0.12 * 0.5 * (1 + DEFAULT_ALLOWANCE.fraction()))
    assert cost.energy_kwh == pytest.approx(70 * 1800 / 3.6e6) and cost.power_w == 70
    assert cost.price_date == "2026-10" and cost.price_source == "test" and not cost.stale
    assert job_cost(inst, 5, today=TODAY).on_demand_usd == pytest.approx(0.36 / 60)  # 1-min minimum


def test_the_whole_instance_is_billed_when_the_job_uses_fewer_gpus() -> None:
    p4d = load_instances().find("p4d.24xlarge")
    one = job_cost(p4d, 3600, device=DEVICES["a100-40gb"], devices_used=1, today=TODAY)
    assert one.on_demand_usd == pytest.approx(p4d.price)
    assert one.energy_kwh == pytest.approx(0.4) and one.stale
    assert any("1 of 8 GPUs" in n for n in one.notes)
    assert any("2024-09" in n for n in one.notes)
    nine = job_cost(p4d, 3600, devices_used=9, today=TODAY)  # two nodes, both billed
    assert nine.instances == 2 and nine.on_demand_usd == pytest.approx(2 * p4d.price)
    assert any("9 of 16 GPUs" in n for n in nine.notes)


def test_a_job_past_one_node_is_priced_on_full_nodes() -> None:
    """64 H100s are 8 x p5.48xlarge (the type with the most of them), billed together; a
    GPU no instance carries four of is not clustered."""
    catalog = load_instances()
    nodes = catalog.offering("h100-sxm", 64)
    assert nodes and {i.accelerator_count for i in nodes} == {8}
    p5 = min((i for i in nodes if i.price is not None), key=lambda i: i.price or 0.0)
    cost = job_cost(p5, 7200, device=DEVICES["h100-sxm"], devices_used=64, today=TODAY)
    assert cost.instances == 8 and cost.devices == 64
    assert cost.on_demand_usd == pytest.approx(8 * (p5.price or 0.0) * 2)
    assert cost.energy_kwh == pytest.approx(64 * 700 * 2 / 1000)
    opts = options_for(DEVICES["h100-sxm"], 64, 7200, catalog)
    assert opts and min(o.usd for o in opts if o.usd) == pytest.approx(cost.on_demand_usd)
    assert cheapest_instance(catalog, "h100-sxm", 64) is not None
    small = [
        d
        for d in DEVICES
        if catalog.offering(d)
        and all(not i.is_cpu and i.accelerator_count < 4 for i in catalog.offering(d))
    ]
    assert small and all(catalog.offering(d, 64) == [] for d in small)


def test_the_interruption_allowance_is_stated_and_adjustable() -> None:
    frac = DEFAULT_ALLOWANCE.fraction()
    assert 0.035 < frac < 0.04
    assert (
        "CheckFreq" in DEFAULT_ALLOWANCE.basis()
        and "Spot Instance Advisor" in DEFAULT_ALLOWANCE.basis()
    )
    scarce = SpotAllowance(interruptions_per_month=30)  # about once a day
    assert scarce.fraction() > frac
    with pytest.raises(UsageError):
        SpotAllowance(checkpoint_overhead=-0.1)


def _three_clouds(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        "three.csv",
        [
            SKYPILOT_HEADER,
            "slow.t4,T4,1,4,16,,0.50,0.15,r1,a",
            "mid.v100,V100,1,8,61,,2.00,0.60,r2,a",
            "fast.h100,H100,1,26,200,,4.00,,r3,a",
        ],
    )


def _options(path: Path, hours: dict[str, float]) -> list[Option]:
    cat = load_instances(path)
    out: list[Option] = []
    for dev, h in hours.items():
        out += [
            o
            for o in options_for(DEVICES[dev], 1, h * 3600, cat)
            if o.instance in {"slow.t4", "mid.v100", "fast.h100"}
        ]
    return out


def test_cheapest_meets_the_deadline_and_fastest_is_the_shortest(tmp_path: Path) -> None:
    opts = _options(_three_clouds(tmp_path), {"t4": 20, "v100-16gb": 6, "h100-sxm": 1})
    # On demand: T4 $10 in 20 h, V100 $12 in 6 h, H100 $4 in 1 h.
    pick = cheapest([o for o in opts if not o.spot], deadline_s=8 * 3600)
    assert pick is not None and pick.instance == "fast.h100" and pick.meets_deadline
    assert pick.usd == pytest.approx(4.0)
    opts = _options(_three_clouds(tmp_path), {"t4": 20, "v100-16gb": 6, "h100-sxm": 3})
    pick = cheapest([o for o in opts if not o.spot], deadline_s=8 * 3600)  # H100 $12, V100 $12
    assert pick is not None and pick.instance == "fast.h100"  # equal dollars: the faster
    pick = cheapest([o for o in opts if not o.spot], deadline_s=30 * 3600)
    assert pick is not None and pick.instance == "slow.t4"  # $10 and within 30 h
    quick = fastest(opts, deadline_s=8 * 3600)
    assert quick is not None and quick.instance == "fast.h100" and quick.time_s == 3 * 3600
    none = cheapest(opts, deadline_s=600)
    assert none is not None and not none.meets_deadline and none.instance == "fast.h100"


def test_unpriced_options_are_never_chosen() -> None:
    opts = [Option("t4", "ali", None, 100.0), Option("a10", "priced", 9.0, 200.0)]
    pick = cheapest(opts, deadline_s=1000)
    assert pick is not None and pick.instance == "priced"
    assert cheapest([Option("t4", "ali", None, 100.0)], None) is None


def test_budget_low_names_spot_and_a_previous_generation_gpu(tmp_path: Path) -> None:
    """S2, C5: on a tight budget a previous-generation GPU or a spot instance."""
    opts = _options(_three_clouds(tmp_path), {"t4": 20, "v100-16gb": 6, "h100-sxm": 3})
    pick = budget_low(opts, deadline_s=8 * 3600)
    assert pick is not None and pick.instance == "mid.v100" and pick.spot
    assert pick.meets_deadline and pick.usd == pytest.approx(
        0.60 * 6 * (1 + DEFAULT_ALLOWANCE.fraction())
    )
    assert {"S2", "C5"} <= set(pick.cites)
    assert any("spot" in w for w in pick.why) and any("previous-generation" in w for w in pick.why)


def test_budget_low_takes_a_cpu_instance_only_where_s5_holds() -> None:
    gpu = Option("t4", "gpu.box", 380.0, 0.005, meets=True, released=2018)
    cpu = Option("xeon-8488c", "cpu.box", 130.0, 0.06, cpu=True, meets=True)
    assert s5_holds(qps=300 / 86400, latency_ms=2000) and not s5_holds(qps=50, latency_ms=2000)
    assert not s5_holds(qps=300 / 86400, latency_ms=50)
    low = budget_low([gpu, cpu], None, s5=True)
    assert low is not None and low.instance == "cpu.box" and "S5" in low.cites
    low = budget_low([gpu, cpu], None, s5=False)
    assert low is not None and low.instance == "gpu.box"


def test_s5_300_requests_a_day_of_bert_base_cost_less_a_month_on_a_cpu_instance(
    tmp_path: Path,
) -> None:
    """S5: an idle GPU instance is still billed. BERT-base at batch 1: a 4-vCPU Sapphire
    Rapids instance serves a request in ~60 ms, a T4 in ~5 ms (B§2: tens of ms / a few ms);
    one instance of either carries 300 requests a day, so the bill is the hourly price."""
    path = write(
        tmp_path,
        "serving.csv",
        [
            SKYPILOT_HEADER,
            "c7i.xlarge,,,4,8,,0.1785,,us-east-1,a",
            "g4dn.xlarge,T4,1,4,16,,0.526,0.158,us-east-1,a",
            "g6.xlarge,L4,1,4,16,,0.805,0.24,us-east-1,a",
        ],
    )
    cat = load_instances(path)
    qps = 300 / 86400
    gpu_inst = min(
        (
            cheapest_instance(cat, d)
            for d in ("t4", "l4", "a10", "a100-40gb")
            if cheapest_instance(cat, d)
        ),
        key=lambda i: i.price or 0,  # type: ignore[union-attr]
    )
    assert gpu_inst is not None and gpu_inst.instance_type == "g4dn.xlarge"
    cpu_inst = cat.find("c7i.xlarge")
    share, _ = instance_device(cpu_inst, DEVICES)
    cpu = serving_cost(
        cpu_inst,
        qps=qps,
        throughput_samples_s=1 / 0.060,
        latency_s=0.060,
        latency_target_s=1.0,
        device=share,
    )
    gpu = serving_cost(
        gpu_inst,
        qps=qps,
        throughput_samples_s=1 / 0.005,
        latency_s=0.005,
        latency_target_s=1.0,
        device=DEVICES["t4"],
    )
    assert cpu.instances == gpu.instances == 1
    assert cpu.monthly_usd == pytest.approx(0.1785 * 730) and gpu.monthly_usd == pytest.approx(
        0.526 * 730
    )
    assert cpu.monthly_usd < gpu.monthly_usd
    assert s5_holds(qps, 1000)
    monthly = [
        serving_option(
            cpu_inst,
            qps=qps,
            throughput_samples_s=1 / 0.060,
            latency_s=0.060,
            latency_target_s=1.0,
            device=share,
        ),
        serving_option(
            gpu_inst,
            qps=qps,
            throughput_samples_s=1 / 0.005,
            latency_s=0.005,
            latency_target_s=1.0,
            device=DEVICES["t4"],
        ),
    ]
    assert cheapest(monthly, None).instance == "c7i.xlarge"  # type: ignore[union-attr]
    verdict = budget_low(monthly, None, s5=True)
    assert verdict is not None and verdict.device == "xeon-8488c" and "S5" in verdict.cites


def test_serving_counts_enough_instances_billed_busy_or_idle() -> None:
    inst = Instance(
        "g", "t4", 1, 4, 16.0, price=0.5, spot_price=None, price_date="2026-11", source="t"
    )
    cost = serving_cost(inst, qps=250, throughput_samples_s=100, device=DEVICES["t4"], today=TODAY)
    assert cost.instances == 3 and cost.monthly_usd == pytest.approx(3 * 0.5 * 730)
    assert cost.energy_kwh == pytest.approx(70 * 3 * (250 / 300) * 730 / 1000)
    assert instances_for_qps(0.001, 100) == 1
    slow = serving_cost(inst, qps=1, throughput_samples_s=10, latency_s=0.2, latency_target_s=0.1)
    assert any("over the 100 ms target" in n for n in slow.notes)
    with pytest.raises(UsageError):
        instances_for_qps(-1, 10)


def test_serving_runs_one_replica_per_gpu_group_on_a_many_gpu_instance() -> None:
    """An 8-GPU instance serving a one-GPU job runs 8 replicas, so 250 QPS at 100 per
    replica needs one instance, not three; a two-GPU job runs 4 replicas; a CPU one."""
    eight = Instance(
        "p", "t4", 8, 96, 384.0, price=8.0, spot_price=None, price_date="2026-11", source="t"
    )
    one = serving_cost(eight, qps=250, throughput_samples_s=100, device=DEVICES["t4"], today=TODAY)
    assert one.instances == 1 and one.monthly_usd == pytest.approx(8.0 * 730)
    # 8 GPUs working 250/800 of the month at the T4's 70 W
    assert one.energy_kwh == pytest.approx(70 * 8 * (250 / 800) * 730 / 1000)
    assert "8 replicas of the job on each instance" in one.notes
    pairs = serving_cost(eight, qps=900, throughput_samples_s=100, per_replica=2, today=TODAY)
    assert pairs.instances == 3  # 4 replicas x 100 per instance
    cpu = Instance(
        "c", None, 0, 4, 8.0, price=0.2, spot_price=None, price_date="2026-11", source="t"
    )
    assert replicas_per_instance(cpu) == 1 and replicas_per_instance(eight, 3) == 2
    # a 16-GPU replica spans two 8-GPU instances: 250 QPS at 100 a replica is 3 replicas
    wide = serving_cost(
        eight, qps=250, throughput_samples_s=100, per_replica=16, device=DEVICES["t4"], today=TODAY
    )
    assert wide.instances == 6 and wide.monthly_usd == pytest.approx(6 * 8.0 * 730)
    assert wide.energy_kwh == pytest.approx(70 * 8 * 6 * (250 / 300) * 730 / 1000)


def test_own_hardware_by_the_hour_or_by_purchase() -> None:
    here = own_cost(OwnHardware(price_per_hour=1.5), 7200, device=DEVICES["rtx-4090"], today=TODAY)
    assert here.on_demand_usd == pytest.approx(3.0) and here.instance == "here"
    assert here.energy_kwh == pytest.approx(0.9) and here.price_date == "2026-12-01"
    bought = OwnHardware(purchase_usd=8760 * 3, years=3, electricity_usd_per_kwh=0.25)
    assert bought.hourly(450) == pytest.approx(1 + 0.45 * 0.25)
    assert "purchase $26280 over 3 years" in bought.describe()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"price_per_hour": -1}, "--price-per-hour must be 0 or more, got -1"),
        ({"price_per_hour": float("nan")}, "--price-per-hour must be 0 or more"),
        ({"price_per_hour": float("inf")}, "--price-per-hour must be 0 or more, got inf"),
        ({"purchase_usd": 1000, "years": 0}, "--years must be above 0"),
        ({"purchase_usd": 1000}, "needs --price-per-hour, or --purchase-usd and --years"),
    ],
)
def test_own_hardware_refuses_impossible_figures(kwargs: dict[str, float], message: str) -> None:
    with pytest.raises(UsageError) as err:
        OwnHardware(**kwargs)
    assert message in err.value.message


def test_fleet_price_per_hour_minus_one_is_one_line_exit_2(cli) -> None:  # type: ignore[no-untyped-def]
    from tests.export.conftest import GOOD_REPORTS

    res = cli("fleet", str(GOOD_REPORTS[0]), "--model", "resnet50", "--price-per-hour", "-1")
    assert res.code == 2
    (line,) = res.error_lines()
    assert "--price-per-hour must be 0 or more, got -1" in line


def test_the_cpu_instance_weighed_is_the_cheapest_that_holds_the_job() -> None:
    """A 16 GiB job on a CPU: of one processor's instances the cheapest with the memory
    (with the 10% headroom), and a processor none of whose instances holds it keeps its
    cheapest."""
    from hwadvisor.catalog.instances import InstanceCatalog
    from hwadvisor.pipeline.pricing import cpu_instances

    def cpu(name: str, gib: float, price: float, device: str = "xeon-8488c") -> Instance:
        return Instance(name, device, 0, 4, gib, price=price, spot_price=None,
                        price_date="2026-11", source="t")  # fmt: skip

    catalog = InstanceCatalog(instances=(
        cpu("small", 8, 0.1), cpu("mid", 16, 0.2), cpu("big", 32, 0.4), cpu("bigger", 64, 0.8),
        cpu("other", 8, 0.05, device="epyc-9654"),
    ))  # fmt: skip
    names = {i.instance_type for i in cpu_instances(catalog, need_bytes=16 * (1 << 30))}
    assert names == {"big", "other"}
    assert {i.instance_type for i in cpu_instances(catalog)} == {"small", "other"}
