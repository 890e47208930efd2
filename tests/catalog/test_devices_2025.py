"""The hardware of 2025-26: present, sourced, dense figures that relate as the datasheets say."""

from __future__ import annotations

import pytest

from hwadvisor.catalog import find_device, load_devices
from hwadvisor.catalog.match import match_gpu
from hwadvisor.catalog.schema import DeviceKind

DEVICES = load_devices()
GPUS_2025 = ["b300", "gb200", "h200-nvl", "mi325x", "mi355x", "rtx-pro-6000"]
GIB = 1024**3


@pytest.mark.parametrize("ident", [*GPUS_2025, "gb10"])
def test_each_cites_its_datasheet_with_a_date_and_power(ident: str) -> None:
    entry = DEVICES[ident]
    assert "https://" in entry.source and entry.date >= "2026-12"
    assert entry.board_power_w and entry.released and entry.released >= 2024
    assert entry.peaks_tflops.fp32 and entry.peaks_tflops.bf16 and entry.peaks_tflops.fp8


def test_fp4_is_listed_where_tensor_cores_run_it_and_not_elsewhere() -> None:
    with_fp4 = {k for k, d in DEVICES.items() if d.peaks_tflops.fp4}
    assert with_fp4 == {"b200", "b300", "gb200", "mi355x", "rtx-pro-6000", "gb10"}
    for ident in with_fp4:  # FP4 runs at twice the FP8 rate, or more (Blackwell Ultra)
        peaks = DEVICES[ident].peaks_tflops
        assert peaks.fp4 >= 2 * peaks.fp8 * 0.99  # type: ignore[operator]


def test_the_datasheets_relations_hold() -> None:
    b200, b300, gb200 = DEVICES["b200"], DEVICES["b300"], DEVICES["gb200"]
    assert b300.peaks_tflops.fp4 == pytest.approx(1.5 * b200.peaks_tflops.fp4)  # type: ignore[operator]
    assert b300.peaks_tflops.int8 < b200.peaks_tflops.int8 / 10  # type: ignore[operator]
    assert b300.memory_bytes == 288e9 and b300.bandwidth_gb_s == b200.bandwidth_gb_s
    # The GB200's GPU runs at 1,200 W: above the HGX B200's 1,000 W figures.
    assert gb200.peaks_tflops.bf16 > b200.peaks_tflops.bf16  # type: ignore[operator]
    h200, nvl = DEVICES["h200"], DEVICES["h200-nvl"]
    assert (nvl.memory_bytes, nvl.bandwidth_gb_s) == (h200.memory_bytes, h200.bandwidth_gb_s)
    assert nvl.peaks_tflops.bf16 < h200.peaks_tflops.bf16  # type: ignore[operator]
    mi300x, mi325x, mi355x = DEVICES["mi300x"], DEVICES["mi325x"], DEVICES["mi355x"]
    assert mi325x.peaks_tflops.bf16 == pytest.approx(mi300x.peaks_tflops.bf16, rel=0.01)  # type: ignore[arg-type]
    assert mi325x.memory_bytes > mi300x.memory_bytes and mi355x.memory_bytes == 288e9
    assert mi355x.peaks_tflops.tf32 is None  # CDNA 4 has no TF32
    pro, geforce = DEVICES["rtx-pro-6000"], DEVICES["rtx-5090"]
    assert (
        pro.bandwidth_gb_s == geforce.bandwidth_gb_s
        and pro.memory_bytes == 3 * geforce.memory_bytes
    )
    spark = DEVICES["gb10"]
    assert spark.kind is DeviceKind.SOC and spark.memory_bytes == 128e9
    assert spark.bandwidth_gb_s == 273


@pytest.mark.parametrize(
    ("name", "gib", "expected"),
    [
        ("NVIDIA B300 SXM6 AC", 268.0, "b300"),
        ("NVIDIA GB200", 184.0, "gb200"),
        ("NVIDIA H200 NVL", 140.0, "h200-nvl"),
        ("NVIDIA H200", 140.0, "h200"),
        ("AMD Instinct MI325X", 256.0, "mi325x"),
        ("AMD Instinct MI355X", 288.0, "mi355x"),
        ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", 95.6, "rtx-pro-6000"),
        ("NVIDIA RTX PRO 6000 Blackwell Max-Q Workstation Edition", 95.6, None),  # 300 W part
        ("NVIDIA GB10", 119.7, "gb10"),
    ],
)
def test_driver_names_match_the_entries(name: str, gib: float, expected: str | None) -> None:
    assert match_gpu(name, int(gib * GIB)) == expected


def test_the_product_names_people_type_resolve() -> None:
    assert find_device("dgx-spark").id == "gb10"
    assert find_device("rtx-pro-6000-blackwell").id == "rtx-pro-6000"
