"""A catalog CPU priced from its datasheet (estimate.timing.cpu.catalog_cpu_model)."""

from __future__ import annotations

import pytest
from tests.benchmark_modules import load_benchmark

from hwadvisor.catalog import find_device
from hwadvisor.catalog.instances import cpu_share
from hwadvisor.estimate import build_workload
from hwadvisor.estimate.timing.catalog import device_model
from hwadvisor.estimate.timing.cpu import sustained_scale
from hwadvisor.estimate.timing.step import step_time
from hwadvisor.models.workload import Precision

GENOA = find_device("epyc-9654")
SPR = find_device("xeon-8480")


def test_amd_peaks_at_the_all_core_boost_intel_at_base() -> None:
    scale, note = sustained_scale(GENOA)
    assert scale == pytest.approx(3.55 / 2.4)
    assert note is not None and "3.55 GHz" in note
    assert sustained_scale(SPR) == (1.0, None)  # AVX-512 licence clocks are not in the catalog
    rates = device_model(GENOA, Precision.FP32)
    assert rates.gemm(1e6) == pytest.approx(7.4e12 * scale * GENOA.achieved.gemm, rel=0.02)


def test_a_product_split_over_many_cores_runs_each_core_on_a_smaller_block() -> None:
    one = device_model(cpu_share(GENOA, 2), Precision.FP32)
    socket = device_model(GENOA, Precision.FP32)
    small_one, small_socket = one.gemm(256), socket.gemm(256)
    big_one, big_socket = one.gemm(16384), socket.gemm(16384)
    assert None not in (small_one, small_socket, big_one, big_socket)
    # At a large size both reach the fraction; at 256 the socket's cores each get a block
    # 96^(1/3) = 4.6x smaller and fall further below it than one core does.
    assert small_socket / big_socket < 0.75 * (small_one / big_one)  # type: ignore[operator]


def test_bert_base_on_one_ice_lake_core_is_a_few_hundred_ms() -> None:
    wl = build_workload(model="bert-base", task="infer", batch_size=1, precision="fp32")
    share = cpu_share(find_device("xeon-8369b"), 2)  # ecs.c7.large: one core
    st = step_time(wl, device_model(share, wl.precision))
    assert st.total is not None
    # 22.4 GFLOP at 75% of one core's 172.8 GFLOP/s peak: products alone ~0.17-0.19 s.
    assert 0.17 < st.total < 0.3
    assert st.parts["gemm"] > 0.8 * st.total


def test_a_catalog_cpu_takes_the_published_rows_band() -> None:
    """Every catalog CPU is in one band class, refreshed from the published rows."""
    from hwadvisor.estimate.timing.bands import band_class, load_bands

    assert band_class(device_model(cpu_share(GENOA, 2), Precision.FP32), 1, {}) == "catalog_cpu"
    rows = load_benchmark("catalog_cpu_accuracy").published_rows()
    assert len(rows) == 12 and {r["band_class"] for r in rows} == {"catalog_cpu"}
    ratios = [r["ratio"] for r in rows]
    spec = load_bands()["catalog_cpu"]
    assert spec.validated and "published" in spec.basis
    assert (spec.low_ratio, spec.high_ratio) == pytest.approx(
        (min(ratios), max(ratios)), abs=0.002
    ), "run benchmarks/catalog_cpu_accuracy.py --published and copy its band"
