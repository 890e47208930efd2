"""The processors of the CPU instances state their figures with a source, or say none was found."""

from __future__ import annotations

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.instances import load_instances

DEVICES = load_devices()
CPUS = sorted({i.device_id for i in load_instances().instances if i.is_cpu})


def test_the_cpu_instances_map_to_the_three_cloud_processors() -> None:
    assert CPUS == ["xeon-8369b", "xeon-8481c", "xeon-8488c"]


@pytest.mark.parametrize("cpu", CPUS)
def test_each_processor_states_its_shape_clocks_and_power(cpu: str) -> None:
    e = DEVICES[cpu]
    assert e.cores and e.threads == 2 * e.cores and e.sockets == 1
    assert e.base_ghz and e.all_core_ghz and e.all_core_ghz > e.base_ghz
    assert e.tdp_watts and e.board_power_w == e.tdp_watts
    # A figure is either sourced (a URL and the date it was checked) or marked unverified.
    for said in (e.source, e.power_source):
        assert said and ("https://" in said or "unverified" in said), said
        assert "2026-12-01" in said


@pytest.mark.parametrize("cpu", CPUS)
def test_the_fp32_peak_follows_the_stated_base_clock(cpu: str) -> None:
    e = DEVICES[cpu]
    assert e.peaks_tflops.fp32 == pytest.approx(e.cores * e.base_ghz * 64 / 1000, rel=0.01)


def test_the_aws_part_is_the_one_its_brand_string_names() -> None:
    e = DEVICES["xeon-8488c"]
    assert (e.cores, e.threads, e.base_ghz, e.all_core_ghz) == (48, 96, 2.4, 3.2)
    assert "szilard/GBM-perf/issues/56" in e.source
