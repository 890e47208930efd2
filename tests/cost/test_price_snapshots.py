"""Every dated price snapshot the catalog was seeded from is in it, with its date and source.

The cases are the published snapshots (each names the public record it was read from);
a row the clouds publish no price for stays unpriced and says why.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / "src" / "hwadvisor" / "catalog" / "data"
ROWS = {r["InstanceType"]: r for r in csv.DictReader((DATA / "instances.csv").open())}

#: (instance, on demand, spot or None, date, the record it was read from)
SNAPSHOTS = [
    ("g4dn.xlarge", 0.526, None, "2022-04", "PR #718"),
    ("g5.xlarge", 1.006, 0.348, "2024-09", "issue #4019"),
    ("g6.xlarge", 0.805, 0.081, "2024-04", "issue #3434"),
    ("p3.2xlarge", 3.060, 0.918, "2022-03", "PR #472"),
    ("p3.8xlarge", 12.240, 3.672, "2022-03", "PR #472"),
    ("p3.16xlarge", 24.480, 7.344, "2022-03", "PR #472"),
    ("p4d.24xlarge", 32.773, 9.279, "2024-09", "issue #4019"),
    ("p4de.24xlarge", 40.966, None, "2024-09", "issue #4019"),
    ("p5en.48xlarge", 63.296, 27.20, "2026-08", "PR #4110"),
    ("p5.48xlarge", 98.32, None, "2025-05", "usage.ai"),
    ("a2-highgpu-1g", 3.673, 1.469, "2023-12", "PR #2892"),
    ("a2-ultragpu-1g", 5.028, 2.011, "2024-03", "PR #3375"),
    ("g2-standard-4", 0.705, 0.248, "2024-03", "PR #3375"),
    ("g5.12xlarge", 5.672, 0.836, "2024-04", "PR #3430"),
    ("n1-highmem-8", 2.953, 1.037, "2024-02", "issue #3111"),
    ("Standard_NC6s_v3", 3.366, 0.527, "2022-03", "PR #472"),
    ("Standard_NC12s_v3", 6.732, 1.055, "2022-03", "PR #472"),
    ("Standard_NC24s_v3", 13.464, 2.109, "2022-03", "PR #472"),
    ("1x_A100-80GB_SECURE", 1.39, None, "2026-12-06", "catalogs/v8/runpod/vms.csv"),
    ("2x_A100-80GB_SECURE", 2.78, None, "2026-12-06", "catalogs/v8/runpod/vms.csv"),
    ("gpu_1x_h100_pcie", 3.29, None, "2026-12-06", "catalogs/v8/lambda/vms.csv"),
    ("gpu_1x_h100_sxm5", 4.29, None, "2026-12-06", "catalogs/v8/lambda/vms.csv"),
    ("gpu_1x_a10", 1.29, None, "2026-12-06", "catalogs/v8/lambda/vms.csv"),
    ("gpu_1x_a6000", 1.09, None, "2026-12-06", "catalogs/v8/lambda/vms.csv"),
    ("gpu_8x_a100_80gb_sxm4", 22.32, None, "2026-12-06", "catalogs/v8/lambda/vms.csv"),
    ("c7i-flex.xlarge", 0.18194, None, "2024-07", "issue #745"),
    ("m7i-flex.xlarge", 0.21346, None, "2024-07", "issue #745"),
]


@pytest.mark.parametrize(("name", "price", "spot", "when", "record"), SNAPSHOTS)
def test_each_snapshot_is_in_the_catalog_with_its_date_and_source(
    name: str, price: float, spot: float | None, when: str, record: str
) -> None:
    row = ROWS[name]
    assert float(row["Price"]) == pytest.approx(price)
    assert (float(row["SpotPrice"]) if row["SpotPrice"] else None) == (
        pytest.approx(spot) if spot is not None else None
    )
    assert row["PriceDate"] == when
    assert record in row["Source"]


def test_a_range_of_spot_prices_keeps_the_upper_figure_and_says_so() -> None:
    assert "26.57-27.20" in ROWS["p5en.48xlarge"]["Note"]


def test_the_p5_price_says_it_is_stale_and_how_it_is_dated() -> None:
    note = ROWS["p5.48xlarge"]["Note"]
    assert "stale" in note and "before 2025-06" in note


def test_every_unpriced_row_says_why() -> None:
    unpriced = [r for r in ROWS.values() if not r["Price"]]
    assert unpriced
    for row in unpriced:
        assert row["Note"].startswith("unpriced:"), row["InstanceType"]
        assert not row["PriceDate"] and not row["SpotPrice"]
    alibaba = [r for r in ROWS.values() if r["Cloud"] == "alibaba"]
    assert alibaba and all(not r["Price"] for r in alibaba)
    assert all("credentials" in r["Note"] for r in alibaba)


def test_every_priced_row_is_dated_and_sourced() -> None:
    for row in ROWS.values():
        if row["Price"]:
            assert row["PriceDate"] and row["Source"], row["InstanceType"]
