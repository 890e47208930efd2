"""A catalog CPU priced operator by operator (estimate.cpu_catalog, rates.catalog_rates)."""

from __future__ import annotations

import pytest
from tests.benchmark_modules import load_benchmark

from hwadvisor.catalog import find_device
from hwadvisor.catalog.instances import cpu_share
from hwadvisor.estimate import build_workload
from hwadvisor.estimate.timing.cpu_catalog import (
    GRAIN_ELEMENTS,
    SharedLevels,
    catalog_levels,
    reference_sweep,
    sustained_scale,
)
from hwadvisor.estimate.timing.rates import catalog_rates
from hwadvisor.estimate.timing.step import step_time
from hwadvisor.models.workload import (
    GemmBucket,
    ModelKind,
    OpGroup,
    OpProfile,
    Precision,
    Task,
    Workload,
)

GENOA = find_device("epyc-9654")
SPR = find_device("xeon-8480")


def _workload(groups: list[OpGroup], batch: int = 8, task: Task = Task.INFER) -> Workload:
    prof = OpProfile(
        gemm=[GemmBucket(size=512, flops=1e9)], memory_bytes=0, kernels=10, op_groups=groups
    )
    return Workload(
        kind=ModelKind.ENCODER, task=task, batch_size=batch, flops_per_sample=1e9, profile=prof,
        params=1_000_000, precision=Precision.FP32,
    )  # fmt: skip


def test_the_recorded_sweep_names_its_core_and_clock() -> None:
    sweep = reference_sweep()
    assert sweep is not None
    assert sweep["clock_ghz"] > 0 and sweep["clock_source"]
    assert {"eltwise", "batch_norm", "dropout", "softmax"} <= set(sweep["families_gb_s"])


def test_amd_peaks_at_the_all_core_boost_intel_at_base() -> None:
    scale, note = sustained_scale(GENOA)
    assert scale == pytest.approx(3.55 / 2.4)
    assert note is not None and "3.55 GHz" in note
    assert sustained_scale(SPR) == (1.0, None)  # AVX-512 licence clocks are not in the catalog
    rates = catalog_rates(GENOA, Precision.FP32)
    assert rates.gemm(1e6) == pytest.approx(7.4e12 * scale * GENOA.achieved.gemm, rel=0.02)


def test_a_catalog_cpu_is_priced_per_operator_not_by_a_class_fraction() -> None:
    rates = catalog_rates(cpu_share(GENOA, 2), Precision.FP32)
    assert isinstance(rates.levels, SharedLevels)
    light = _workload([OpGroup(family="eltwise", count=4, bytes=4e5)])
    heavy = _workload([OpGroup(family="dropout", count=4, bytes=4e5)])
    # Same FLOPs; dropout's Bernoulli mask is far slower per byte than an add.
    t_light, t_heavy = step_time(light, rates), step_time(heavy, rates)
    assert t_light.total is not None and t_heavy.total is not None
    assert t_heavy.parts["memory"] > 10 * t_light.parts["memory"]
    assert "compute" not in t_light.parts  # no class-rate shortcut on a CPU


def test_small_operators_run_on_one_thread_large_ones_on_every_core() -> None:
    levels, _ = catalog_levels(find_device("xeon-6248"), 100e9)
    assert levels is not None and levels.cores == 20
    assert levels.threads_for(8.0 * GRAIN_ELEMENTS) == 1
    assert levels.threads_for(8.0 * GRAIN_ELEMENTS * 100) == 20
    small = levels.seconds_per_byte("eltwise", 8.0 * GRAIN_ELEMENTS)
    one_core, _ = catalog_levels(cpu_share(find_device("xeon-6248"), 2), 5e9)
    assert one_core is not None
    assert small == pytest.approx(one_core.seconds_per_byte("eltwise", 8.0 * GRAIN_ELEMENTS))


def test_past_the_caches_a_share_streams_no_faster_than_its_bandwidth() -> None:
    levels, _ = catalog_levels(GENOA, 100e9)
    assert levels is not None
    huge = 64.0 * levels.cache_bytes
    assert levels.seconds_per_byte("eltwise", huge) == pytest.approx(1 / 100e9)
    # A one-core share draws at least what the recorded core streams alone.
    one, _ = catalog_levels(cpu_share(GENOA, 2), 1e9)
    assert one is not None
    assert one.seconds_per_byte("eltwise", huge) < 1 / 1e9


def test_cold_element_wise_operands_on_a_share_come_at_its_dram_rate() -> None:
    levels, _ = catalog_levels(cpu_share(GENOA, 2), 5e9)
    assert levels is not None and levels.private_bytes == levels.cores * 1048576
    ws = 2.0 * levels.private_bytes  # past the two L2s, inside the L3
    hot = levels.seconds("eltwise", ws) or 0.0
    cold = levels.seconds("eltwise", ws, cold=True) or 0.0
    t = levels.threads_for(ws)
    per_core_dram = levels.curves["eltwise"][-1][1] / t
    assert cold == pytest.approx(ws * max(per_core_dram, levels.dram_seconds_per_byte))
    assert cold > hot
    inside = 0.5 * levels.private_bytes
    assert levels.seconds("eltwise", inside, cold=True) == levels.seconds("eltwise", inside)


def test_a_slower_clock_makes_cache_resident_operators_slower() -> None:
    fast, _ = catalog_levels(cpu_share(GENOA, 2), 5e9)  # 3.55 GHz sustained
    slow, note = catalog_levels(cpu_share(find_device("xeon-6248"), 2), 5e9)  # 2.5 GHz base
    assert fast is not None and slow is not None
    ratio = slow.seconds_per_byte("softmax", 5e5) / fast.seconds_per_byte("softmax", 5e5)
    assert ratio == pytest.approx(3.55 / 2.5, rel=0.05)
    assert "2.5 GHz over 3.55" in note


def test_a_product_split_over_many_cores_runs_each_core_on_a_smaller_block() -> None:
    one = catalog_rates(cpu_share(GENOA, 2), Precision.FP32)
    socket = catalog_rates(GENOA, Precision.FP32)
    assert one.gemm(256) is not None and socket.gemm(256) is not None
    big_one, big_socket = one.gemm(16384), socket.gemm(16384)
    assert big_one is not None and big_socket is not None
    # At a large size both reach the fraction; at 256 the socket's cores each get a block
    # 96^(1/3) = 4.6x smaller and fall further below it than one core does.
    assert socket.gemm(256) / big_socket < 0.75 * (one.gemm(256) / big_one)


def test_bert_base_on_one_ice_lake_core_is_a_few_hundred_ms() -> None:
    wl = build_workload(model="bert-base", task="infer", batch_size=1, precision="fp32")
    share = cpu_share(find_device("xeon-8369b"), 2)  # ecs.c7.large: one core
    st = step_time(wl, catalog_rates(share, wl.precision))
    assert st.total is not None
    # 22.4 GFLOP at 75% of one core's 172.8 GFLOP/s peak: products alone ~0.17-0.19 s.
    assert 0.17 < st.total < 0.3
    assert st.parts["gemm"] > 0.8 * st.total


def test_the_band_is_validated_only_where_the_validation_ran() -> None:
    from hwadvisor.estimate.timing.bands import band_class, load_bands

    genoa_core = catalog_rates(cpu_share(GENOA, 2), Precision.FP32)
    assert band_class(genoa_core, 1, {}) == "catalog_cpu"
    assert load_bands()["catalog_cpu"].validated
    # The whole socket (96 cores), and a kind of core with no recorded sweep, are not.
    assert band_class(catalog_rates(GENOA, Precision.FP32), 1, {}) == "catalog_cpu_other"
    spr_core = catalog_rates(cpu_share(SPR, 2), Precision.FP32)
    assert band_class(spr_core, 1, {}) == "catalog_cpu_other"
    assert "published" in load_bands()["catalog_cpu_other"].basis
    assert any("another kind of core" in n for n in spr_core.assumptions)


def test_the_other_band_is_a_fresh_run_of_the_published_rows() -> None:
    """catalog_cpu_other's band is the published rows' (refresh error_bands.yaml if not)."""
    from hwadvisor.estimate.timing.bands import load_bands

    rows = load_benchmark("catalog_cpu_accuracy").published_rows()
    assert len(rows) == 12 and {r["band_class"] for r in rows} == {"catalog_cpu_other"}
    ratios = [r["ratio"] for r in rows]
    spec = load_bands()["catalog_cpu_other"]
    assert (spec.low_ratio, spec.high_ratio) == pytest.approx(
        (min(ratios), max(ratios)), abs=0.002
    ), "run benchmarks/catalog_cpu_accuracy.py --published and copy its band"
    # More cores lose more than the model's split says: the error grows with the cores.
    s128 = [r["ratio"] for r in rows if "s128" in r["anchor"] and r["device"] == "xeon-8380"]
    assert s128[-1] > s128[0]
