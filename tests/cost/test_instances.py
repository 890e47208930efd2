"""The instance catalog: coverage, sources and dates, lookups, CPU shares, price files."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.instances import (
    cpu_share,
    instance_device,
    load_instances,
    stale_summary,
    stale_warning,
)
from hwadvisor.catalog.price_files import accelerator_device, cpu_device
from hwadvisor.errors import CatalogError

from .conftest import SKYPILOT_HEADER, TODAY, write

SHIPPED = load_instances()
DEVICES = load_devices()


def _types() -> set[str]:
    return {i.instance_type for i in SHIPPED.instances}


@pytest.mark.parametrize(
    "prefix",
    [
        "g4dn.",
        "g5.",
        "g6.",
        "p3.",
        "p4d.",
        "p4de.",
        "p5.",
        "p5en.",
        "c7i.",
        "m7i.",
        "a2-",
        "a3-",
        "g2-",
        "c3-",
        "Standard_NC",
        "Standard_ND",
    ],
)
def test_the_families_issue_13_names_are_covered(prefix: str) -> None:
    assert any(t.startswith(prefix) for t in _types()), prefix


def test_alibaba_rows_are_spelled_exactly_and_unpriced_with_the_reason() -> None:
    rows = {i.instance_type: i for i in SHIPPED.instances if i.cloud == "alibaba"}
    assert {"ecs.c7.large", "ecs.gn6i-c4g1.xlarge", "ecs.gn7i-c8g1.2xlarge"} <= set(rows)
    # The c7 family by size (vCPU:memory 1:2), for the documents' ratio table at more cores.
    sizes = ("xlarge", "2xlarge", "4xlarge", "8xlarge")
    assert {rows[f"ecs.c7.{s}"].vcpus for s in sizes} == {4, 8, 16, 32}
    assert all(i.price is None and "without an account" in i.note for i in rows.values())
    assert rows["ecs.gn6i-c4g1.xlarge"].device_id == "t4"
    assert rows["ecs.gn7i-c8g1.2xlarge"].device_id == "a10"
    assert rows["ecs.c7.large"].is_cpu and rows["ecs.c7.large"].vcpus == 2
    for row in rows.values():
        assert row.price is None and row.spot_price is None
        assert "without an account" in row.note


def test_every_row_maps_to_the_catalog_and_every_price_is_dated_and_sourced() -> None:
    for inst in SHIPPED.instances:
        entry = DEVICES[inst.device_id]
        assert (entry.kind.value == "cpu") == inst.is_cpu, inst.instance_type
        assert inst.source.strip(), inst.instance_type
        if inst.price is not None or inst.spot_price is not None:
            assert inst.price_date, inst.instance_type
        else:
            assert inst.note.startswith("unpriced") or "unpriced" in inst.note, inst.instance_type


def test_cpu_entries_state_their_topology_and_power() -> None:
    for entry in DEVICES.values():
        if entry.kind.value != "cpu":
            continue
        assert entry.cores and entry.threads and entry.sockets and entry.base_ghz, entry.id
        assert entry.board_power_w and entry.power_source, entry.id
    for cpu in {i.device_id for i in SHIPPED.instances if i.is_cpu}:
        assert DEVICES[cpu].all_core_ghz, cpu  # the clouds state their all-core turbo


def test_find_is_case_blind_and_unknown_types_get_a_did_you_mean() -> None:
    assert SHIPPED.find("standard_nc6s_v3").instance_type == "Standard_NC6s_v3"
    with pytest.raises(CatalogError) as err:
        SHIPPED.find("g5.xlarg")
    assert "did you mean g5.xlarge?" in err.value.line()
    with pytest.raises(CatalogError) as err:
        SHIPPED.find("gn6i")
    assert "ecs.gn6i-c4g1.xlarge" in err.value.line()


def test_a_cpu_instance_is_priced_from_its_vcpus_not_the_processor() -> None:
    xeon = DEVICES["xeon-8369b"]  # 32 cores, 64 threads
    share, count = instance_device(SHIPPED.find("ecs.c7.large"), DEVICES)
    assert count == 1 and share.id == "ecs.c7.large"
    # 2 vCPUs are 2 hardware threads: one core of 32 (SMT on).
    assert share.peaks_tflops.fp32 == pytest.approx(xeon.peaks_tflops.fp32 / 32)
    assert share.bandwidth_gb_s == pytest.approx(xeon.bandwidth_gb_s / 32)
    assert share.board_power_w == pytest.approx(xeon.board_power_w / 32)
    assert share.memory_bytes == 4 * 1024**3 and share.cores == 1 and share.threads == 2
    assert share.peaks_tflops.bf16 is None  # what the processor lacks stays absent
    double = cpu_share(DEVICES["xeon-8488c"], 192)  # c7i.48xlarge: two sockets of 48 cores
    assert double.sockets == 2
    assert double.peaks_tflops.fp32 == pytest.approx(2 * DEVICES["xeon-8488c"].peaks_tflops.fp32)


def test_a_gpu_instance_runs_on_its_gpus() -> None:
    entry, count = instance_device(SHIPPED.find("p4d.24xlarge"), DEVICES)
    assert entry.id == "a100-40gb" and count == 8


def test_stale_prices_warn_with_their_date() -> None:
    old = SHIPPED.find("g4dn.xlarge")  # 2022-04
    warning = stale_warning(old, TODAY)
    assert warning is not None and "2022-04" in warning and "--prices" in warning
    assert stale_warning(SHIPPED.find("p5en.48xlarge"), TODAY) is None  # 2026-08
    assert stale_warning(SHIPPED.find("ecs.c7.large"), TODAY) is None  # unpriced: no age
    summary = stale_summary(SHIPPED.instances, TODAY)
    assert summary is not None and "2022-03" in summary


def test_skypilot_file_replaces_its_types_and_skips_unknown_accelerators(
    skypilot_file: Path,
) -> None:
    cat = load_instances(skypilot_file)
    g4 = cat.find("g4dn.xlarge")
    assert g4.price == 0.58 and g4.region == "us-west-2"  # the cheapest region
    assert cat.find("g4dn.xlarge", region="us-east-1").price == 0.60
    assert cat.find("c7i.large").device_id == "xeon-8488c" and cat.find("c7i.large").is_cpu
    assert cat.find("c7i.large").price_date  # dated by the file
    assert sum(cat.skipped.values()) == 2 and any("K80" in r for r in cat.skipped)
    assert cat.find("p3.2xlarge").price == 3.06  # a type the file lacks keeps the shipped row


def test_gcp_gpus_listed_apart_are_added_to_their_host(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "gcp-vms.csv",
        [
            SKYPILOT_HEADER,
            "a2-highgpu-1g,A100,1,12,85,,0.94,0.30,us-central1,us-central1-a",
            ",A100,1,,,,2.93,1.17,us-central1,us-central1-a",
            ",V100,1,,,,2.48,0.74,us-central1,us-central1-a",
        ],
    )
    cat = load_instances(path)
    a2 = cat.find("a2-highgpu-1g")
    assert a2.price == pytest.approx(0.94 + 2.93) and a2.spot_price == pytest.approx(0.30 + 1.17)
    assert cat.skipped == {"GPU listed without a host instance to attach it to": 1}


def test_gpuhunt_offers_join_spot_and_on_demand(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "gpuhunt.csv",
        [
            "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot,provider",
            "p4de.24xlarge,us-east-1,40.97,96,1152,8,A100,80,False,aws",
            "p4de.24xlarge,us-east-1,12.30,96,1152,8,A100,80,True,aws",
            "tiny.gpu,eu,0.2,2,4,1,GTX 1080,8,False,vast",
        ],
    )
    cat = load_instances(path)
    row = cat.find("p4de.24xlarge")
    assert row.device_id == "a100-80gb" and row.price == 40.97 and row.spot_price == 12.30
    assert sum(cat.skipped.values()) == 1


@pytest.mark.parametrize(
    ("name", "memory", "expected"),
    [
        ("A10G", None, "a10g"),
        ("A100-80GB", None, "a100-80gb"),
        ("A100", 80, "a100-80gb"),
        ("V100-32GB", None, "v100-32gb"),
        ("H100", None, "h100-sxm"),
        ("RTX4090", 24, "rtx-4090"),
        ("Tesla T4", 16, "t4"),
        ("K80", 12, None),
    ],
)
def test_accelerator_spellings_map_to_catalog_ids(
    name: str, memory: float | None, expected: str | None
) -> None:
    assert accelerator_device(name, memory, DEVICES) == expected


def test_cpu_families_map_to_their_processor() -> None:
    assert cpu_device("m7i-flex.xlarge") == "xeon-8488c"
    assert cpu_device("c3-standard-8") == "xeon-8481c"
    assert cpu_device("ecs.c7.large") == "xeon-8369b"
    assert cpu_device("c6a.large") is None


@pytest.mark.parametrize(
    ("row", "line_col"),
    [
        ("g4dn.xlarge,T4,1,4,16,,-0.5,0.2,us-east-1,a", "line 2, column Price: must be 0 or more"),
        ("g4dn.xlarge,T4,1,4,16,,0.5,free,us-east-1,a", "line 2, column SpotPrice: not a number"),
        ("g4dn.xlarge,T4,1.5,4,16,,0.5,0.2,us-east-1,a", "line 2, column AcceleratorCount"),
        ("g4dn.xlarge,T4,1,4,16,,nan,0.2,us-east-1,a", "line 2, column Price: not a finite"),
    ],
)
def test_a_bad_cell_is_one_error_naming_file_line_and_column(
    tmp_path: Path, row: str, line_col: str
) -> None:
    path = write(tmp_path, "bad.csv", [SKYPILOT_HEADER, row])
    with pytest.raises(CatalogError) as err:
        load_instances(path)
    line = err.value.line()
    assert line.startswith(str(path)) and line_col in line and "\n" not in line


def test_a_missing_column_is_named(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "nocol.csv",
        [
            "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,SpotPrice,Region",
            "x,T4,1,4,16,0.1,r",
        ],
    )
    with pytest.raises(CatalogError) as err:
        load_instances(path)
    assert "missing column 'Price'" in err.value.line() and str(path) in err.value.line()


def test_our_format_refuses_an_unknown_device_id(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "own.csv",
        [
            "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,SpotPrice,Region,DeviceId,PriceDate",
            "mybox,A100,1,8,64,1.0,,home,a100-40g,2026-11",
        ],
    )
    with pytest.raises(CatalogError) as err:
        load_instances(path)
    assert "line 2, column DeviceId: unknown device 'a100-40g'" in err.value.line()
    assert "did you mean a100-40gb" in err.value.line()


def test_catalog_instances_command(cli, skypilot_file: Path, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    res = cli("catalog", "instances", "--json", "--prices", str(skypilot_file))
    assert res.code == 0, res.err
    doc = res.json()
    assert {r["InstanceType"] for r in doc["instances"]} >= {"g4dn.xlarge", "ecs.c7.large"}
    assert sum(doc["skipped"].values()) == 2
    assert any("more than a year old" in line for line in res.error_lines())  # shipped 2022 rows
    bad = write(tmp_path, "neg.csv", [SKYPILOT_HEADER, "g4dn.xlarge,T4,1,4,16,,-1,,us-east-1,a"])
    res = cli("catalog", "instances", "--prices", str(bad))
    assert res.code == 2
    (line,) = res.error_lines()
    assert "neg.csv" in line and "column Price" in line
    res = cli("catalog", "instances")
    assert res.code == 0 and "ecs.gn6i-c4g1.xlarge" in res.out and "unpriced" in res.out
