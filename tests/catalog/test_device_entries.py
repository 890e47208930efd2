"""The device entries people ask about: present, complete, sourced, physically consistent."""

from __future__ import annotations

import re

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.match import match_gpu
from hwadvisor.catalog.schema import DeviceEntry, DeviceKind

DEVICES = load_devices()
NEW_GPUS = ["a10g", "b200", "h100-nvl", "l40", "rtx-a6000", "rtx-5090", "mi250x"]
#: Apple's M-series as sold: no M4 Ultra exists (the M3 Ultra of 2025 is the newest Ultra).
APPLE = {
    f"apple-m{gen}{tier}"
    for gen in "1234"
    for tier in ("", "-pro", "-max", "-ultra")
    if (gen, tier) != ("4", "-ultra")
}
GIB = 1024**3


def test_the_parts_people_ask_about_are_in_the_catalog() -> None:
    assert set(NEW_GPUS) <= set(DEVICES)
    assert {d for d in DEVICES if d.startswith("apple-")} == APPLE
    assert "apple-m4-ultra" not in DEVICES


@pytest.mark.parametrize("entry", list(DEVICES.values()), ids=lambda e: e.id)
def test_every_device_has_source_date_release_and_power(entry: DeviceEntry) -> None:
    assert len(entry.source) > 10 and re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", entry.date)
    assert entry.released is not None
    assert entry.power_source, "say where the power figure comes from, or that none is published"
    if entry.board_power_w is None:
        assert "not published" in entry.power_source


@pytest.mark.parametrize("ident", NEW_GPUS + sorted(APPLE))
def test_new_entries_cite_a_vendor_page(ident: str) -> None:
    assert "https://" in DEVICES[ident].source


@pytest.mark.parametrize("ident", NEW_GPUS)
def test_new_gpus_carry_every_figure_the_others_do(ident: str) -> None:
    entry = DEVICES[ident]
    assert entry.kind is DeviceKind.GPU
    assert entry.peaks_tflops.fp32 and entry.peaks_tflops.bf16 and entry.peaks_tflops.fp16
    assert entry.interconnect.gb_s_per_direction and entry.board_power_w and entry.tdp_watts
    assert entry.achieved.source.strip()


def test_variants_relate_as_their_datasheets_say() -> None:
    a10, a10g = DEVICES["a10"], DEVICES["a10g"]
    # Same memory system; AWS's part has more CUDA-core and less tensor throughput.
    assert (a10g.memory_bytes, a10g.bandwidth_gb_s) == (a10.memory_bytes, a10.bandwidth_gb_s)
    assert a10g.peaks_tflops.fp32 > a10.peaks_tflops.fp32  # type: ignore[operator]
    assert a10g.peaks_tflops.bf16 < a10.peaks_tflops.bf16  # type: ignore[operator]
    l40, l40s = DEVICES["l40"], DEVICES["l40s"]
    assert l40.peaks_tflops.bf16 == pytest.approx(l40s.peaks_tflops.bf16 / 2, rel=0.01)  # type: ignore[operator]
    assert l40.memory_bytes == l40s.memory_bytes and l40.bandwidth_gb_s == l40s.bandwidth_gb_s
    nvl, sxm = DEVICES["h100-nvl"], DEVICES["h100-sxm"]
    assert nvl.memory_bytes > sxm.memory_bytes and nvl.bandwidth_gb_s > sxm.bandwidth_gb_s
    assert nvl.peaks_tflops.bf16 < sxm.peaks_tflops.bf16  # type: ignore[operator]
    assert DEVICES["b200"].peaks_tflops.bf16 > 2 * sxm.peaks_tflops.bf16  # type: ignore[operator]
    assert DEVICES["mi250x"].peaks_tflops.tf32 is None  # CDNA 2 has no TF32


@pytest.mark.parametrize("ident", sorted(APPLE))
def test_apple_gpu_peaks_follow_cores_times_lanes_times_clock(ident: str) -> None:
    """fp32 = GPU cores x 128 lanes x 2 FLOPs x clock, at an Apple GPU clock (1.2-1.8 GHz)."""
    entry = DEVICES[ident]
    cores = int(re.search(r"(\d+)-core GPU", entry.name).group(1))  # type: ignore[union-attr]
    ghz = entry.peaks_tflops.fp32 * 1e3 / (cores * 128 * 2)  # type: ignore[operator]
    assert 1.2 < ghz < 1.8, (ident, ghz)
    gb = int(re.search(r"(\d+) GB unified", entry.name).group(1))  # type: ignore[union-attr]
    assert entry.memory_bytes == gb * 10**9  # the largest configuration, as named


@pytest.mark.parametrize("ident", sorted(APPLE))
def test_apple_entries_state_the_gpu_share_of_unified_memory(ident: str) -> None:
    entry = DEVICES[ident]
    assert entry.kind is DeviceKind.SOC and entry.gpu_memory_fraction is not None
    assert "recommendedMaxWorkingSetSize" in (entry.gpu_memory_source or "")
    expected = 0.75 if entry.memory_bytes > 36e9 else 2 / 3
    assert entry.gpu_memory_fraction == pytest.approx(expected, abs=1e-3)
    assert "largest configuration" in (entry.notes or "").lower()


def test_tiers_and_generations_order_bandwidth() -> None:
    for gen in "1234":
        tiers = [f"apple-m{gen}{t}" for t in ("", "-pro", "-max", "-ultra")]
        bandwidths = [DEVICES[t].bandwidth_gb_s for t in tiers if t in DEVICES]
        assert bandwidths == sorted(bandwidths) and len(set(bandwidths)) == len(bandwidths)


@pytest.mark.parametrize(
    ("name", "gib", "expected"),
    [
        ("NVIDIA A10G", 22.0, "a10g"),
        ("NVIDIA A10", 22.5, "a10"),
        ("NVIDIA H100 NVL", 93.6, "h100-nvl"),
        ("NVIDIA H100 80GB HBM3", 79.6, "h100-sxm"),
        ("NVIDIA B200", 179.1, "b200"),
        ("NVIDIA L40", 44.5, "l40"),
        ("NVIDIA L40S", 44.5, "l40s"),
        ("NVIDIA RTX A6000", 47.5, "rtx-a6000"),
        ("NVIDIA GeForce RTX 5090", 31.4, "rtx-5090"),
        ("AMD Instinct MI250X / MI250", 64.0, "mi250x"),
        ("AMD Instinct MI250", 64.0, None),  # the smaller part is not the MI250X
        ("Apple M2 GPU (10-core)", 16.0, "apple-m2"),  # the plain M2 stays the M2
        ("Apple M2 Pro", 32.0, "apple-m2-pro"),
        ("Apple M2 Max", 96.0, "apple-m2-max"),
        ("Apple M1", 16.0, "apple-m1"),
        ("Apple M1 Ultra", 128.0, "apple-m1-ultra"),
        ("Apple M3 Ultra", 512.0, "apple-m3-ultra"),
        ("Apple M4 Pro", 48.0, "apple-m4-pro"),
        ("Apple M4 Ultra", 256.0, None),  # no such part, and not the plain M4
    ],
)
def test_probe_names_match_the_new_entries(name: str, gib: float, expected: str | None) -> None:
    assert match_gpu(name, int(gib * GIB)) == expected
