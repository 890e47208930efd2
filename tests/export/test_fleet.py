"""Fleet ranking: the pure ordering, the GPU catalog match, and the command over saved reports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog.match import match_gpu
from hwadvisor.estimate import build_workload
from hwadvisor.export.fleet import Candidate, rank_fleet
from hwadvisor.export.gather import gather_fleet
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.fleet import FleetStatus
from hwadvisor.models.workload import Task, Workload

from .conftest import BAD_REPORTS, GOOD_REPORTS, PARTIAL_REPORTS, REPORTS, report_named

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


GIB = 1024**3


def _est(total: float | None, fits: bool | None, step: float | None = 1.0) -> DeviceEstimate:
    return DeviceEstimate(
        device="here",
        step_time_s=step,
        total_time_s=total,
        fits=fits,
        memory_bytes=GIB,
        device_memory_bytes=2 * GIB,
    )


def test_ranking_puts_fitting_fast_machines_first() -> None:
    wl = Workload(deadline_hours=1.0)
    reps = [
        report_named(n)
        for n in (
            "recorded-epyc-milan-kvm",
            "recorded-spr-amx-kvm",
            "synthetic-t4-inference",
            "synthetic-rtx4090-workstation",
            "synthetic-dgx-h100x8",
        )
    ]
    cands = [
        Candidate(reps[0], _est(10_000.0, True)),  # too slow for a 1 h deadline
        Candidate(reps[1], _est(600.0, None)),  # fast, memory unknown
        Candidate(reps[2], _est(1_200.0, True)),
        Candidate(reps[3], _est(60.0, False)),  # fastest but does not fit
        Candidate(reps[4], _est(300.0, True)),
    ]
    result = rank_fleet(cands, wl)
    order = [Path(m.source).stem for m in result.machines]
    assert order == [
        "synthetic-dgx-h100x8",
        "synthetic-t4-inference",
        "recorded-spr-amx-kvm",
        "recorded-epyc-milan-kvm",
        "synthetic-rtx4090-workstation",
    ]
    assert [m.status for m in result.machines] == [
        FleetStatus.FITS,
        FleetStatus.FITS,
        FleetStatus.UNKNOWN,
        FleetStatus.TOO_SLOW,
        FleetStatus.NO_FIT,
    ]
    assert [m.rank for m in result.machines] == [1, 2, 3, 4, 5]


def test_inference_targets_decide_status() -> None:
    wl = Workload(task=Task.INFER, latency_ms=50.0, batch_size=1)
    slow = Candidate(report_named("recorded-epyc-milan-kvm"), _est(None, True, step=1.4))
    quick = Candidate(report_named("synthetic-t4-inference"), _est(None, True, step=0.006))
    result = rank_fleet([slow, quick], wl)
    assert [m.status for m in result.machines] == [FleetStatus.FITS, FleetStatus.TOO_SLOW]
    assert "50 ms" in result.machines[1].reason


def test_candidate_without_estimate_is_skipped() -> None:
    result = rank_fleet(
        [
            Candidate(
                report_named("recorded-epyc-milan-kvm"), None, error="GPU not in the catalog: X"
            )
        ],
        Workload(),
    )
    assert result.machines == []
    assert result.skipped[0].reason == "GPU not in the catalog: X"


@pytest.mark.parametrize(
    ("name", "gib", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", 79.6, "h100-sxm"),
        ("NVIDIA H100 PCIe", 79.6, "h100-pcie"),
        ("NVIDIA A10", 22.5, "a10"),
        ("NVIDIA A100-SXM4-40GB", 39.4, "a100-40gb"),
        ("NVIDIA A100-SXM4-80GB", 79.2, "a100-80gb"),
        ("Tesla T4", 15.0, "t4"),
        ("NVIDIA GeForce RTX 4090", 23.99, "rtx-4090"),
        ("NVIDIA GeForce GTX 1080", 8.0, None),
        ("Apple M2 GPU (10-core)", 16.0, "apple-m2"),  # a system-on-chip entry
        ("Apple M2 Max", 96.0, "apple-m2-max"),  # another part of the family: its own entry
        ("Apple M2 Ultra", 192.0, "apple-m2-ultra"),  # a catalog entry of its own
        ("NVIDIA GeForce RTX 4090 Laptop GPU", 16.0, None),  # another chip than the desktop part
        ("NVIDIA GeForce RTX 4090 Max-Q", 16.0, None),
        ("AMD EPYC 9654", 0.0, None),  # CPU entries are never a GPU's match
    ],
)
def test_catalog_gpu_match(name: str, gib: float, expected: str | None) -> None:
    assert match_gpu(name, int(gib * GIB)) == expected


def test_saved_fleet_training_ranks_gpus_first_and_skips_bad_reports() -> None:
    wl = build_workload(model="resnet50", dataset_size=1_281_167, epochs=10)
    result = gather_fleet([*GOOD_REPORTS, *BAD_REPORTS, *PARTIAL_REPORTS], wl, scenario="training")
    ranked = [Path(m.source).stem for m in result.machines]
    assert ranked[:3] == [
        "synthetic-dgx-h100x8",
        "synthetic-rtx4090-workstation",
        "synthetic-t4-inference",
    ]
    # No CPU-only machine runs ten ImageNet epochs within the 24 h default (too slow, or
    # the 4 GiB container is too small), and all rank below the GPU machines.
    rest = result.machines[3:]
    assert all(
        m.device == "cpu" and m.status in (FleetStatus.TOO_SLOW, FleetStatus.NO_FIT) for m in rest
    )
    assert len(result.machines) == len(GOOD_REPORTS)
    assert {s.source for s in result.skipped} == {str(p) for p in [*BAD_REPORTS, *PARTIAL_REPORTS]}
    partial = next(s for s in result.skipped if s.source == str(PARTIAL_REPORTS[0]))
    assert partial.reason.startswith("partial report: no memory size and no CPU peak")
    times = [m.time_s for m in result.machines[:3]]
    assert times == sorted(times)  # type: ignore[type-var]


def test_saved_fleet_cpu_scenario_prices_cpus() -> None:
    wl = build_workload(model="bert-base", task="infer", batch_size=1)
    result = gather_fleet(GOOD_REPORTS, wl, scenario="edge")
    assert {m.device for m in result.machines} == {"cpu"}
    assert Path(result.machines[0].source).stem in {"synthetic-dgx-h100x8", "recorded-spr-amx-kvm"}


def test_fleet_cli_json(cli: Cli) -> None:
    args = [
        "fleet",
        *map(str, GOOD_REPORTS),
        str(REPORTS / "bad-truncated.json"),
        "--scenario",
        "inference",
        "--model",
        "bert-base",
        "--batch-size",
        "1",
        "--latency-ms",
        "50",
        "--json",
    ]
    result = cli(*args)
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["schema_version"].startswith("1.")
    assert doc["workload"]["task"] == "infer"
    by_host = {Path(m["source"]).stem: m for m in doc["machines"]}
    assert by_host["recorded-epyc-milan-kvm"]["status"] == "too_slow"
    # at batch 1 the GPUs wait on the host's launches: they fit, ahead of the slow CPUs
    h100 = by_host["synthetic-dgx-h100x8"]
    assert h100["status"] == "fits"
    assert h100["rank"] < by_host["recorded-epyc-milan-kvm"]["rank"]
    assert doc["skipped"][0]["source"].endswith("bad-truncated.json")


def test_fleet_cli_bad_workload_is_one_line(cli: Cli) -> None:
    run = cli("fleet", str(GOOD_REPORTS[0]), "--model", "resnet-5O")
    assert run.code == 2
    assert len(run.error_lines()) == 1


def test_rule_engine_verdict_orders_equal_status() -> None:
    wl = Workload(deadline_hours=10.0)
    a = Candidate(report_named("recorded-laptop-avx2"), _est(100.0, True), rules_fit=False)
    b = Candidate(report_named("recorded-spr-amx-kvm"), _est(900.0, True), rules_fit=True)
    result = rank_fleet([a, b], wl)
    # Both fit by the estimate; the one the rules accept ranks first despite being slower.
    assert [Path(m.source).stem for m in result.machines] == [
        "recorded-spr-amx-kvm",
        "recorded-laptop-avx2",
    ]


def test_saved_fleet_carries_the_rule_engine_verdict() -> None:
    wl = build_workload(model="resnet50", dataset_size=1_281_167, epochs=10)
    result = gather_fleet(GOOD_REPORTS, wl, scenario="training")
    by_stem = {Path(m.source).stem: m for m in result.machines}
    dgx = by_stem["synthetic-dgx-h100x8"]
    assert dgx.recommended_device == "gpu" and dgx.rules_fit is True and dgx.advice
    assert by_stem["recorded-laptop-avx2"].rules_fit is False


def test_fleet_with_no_readable_report_is_bad_input(cli: Cli) -> None:
    """Nothing given could be read: exit 2 with one line and the JSON error document."""
    run = cli("fleet", *map(str, BAD_REPORTS), "/nonexistent/report.json", "--json")
    assert run.code == 2
    (line,) = run.error_lines()
    assert line.startswith("hwadvisor: error: ") and "no report could be read" in line
    assert f"(and {len(BAD_REPORTS)} more)" in line
    assert json.loads(run.out)["error"]["exit_code"] == 2


def test_fleet_with_reports_that_cannot_be_ranked_is_undetermined(cli: Cli) -> None:
    """Reports read but none rankable (no GPU in the catalog, no figures): exit 3."""
    run = cli("fleet", *map(str, PARTIAL_REPORTS), "--json", "--model", "resnet50")
    assert run.code == 3
    doc = json.loads(run.out)
    assert doc["machines"] == [] and len(doc["skipped"]) == len(PARTIAL_REPORTS)
