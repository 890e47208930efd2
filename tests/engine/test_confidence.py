"""A verdict that rests on this machine's measurements loses confidence when they are doubtful,
and says why (issue 14.3); the device class it gives does not change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from tests.engine.conftest import CaseRun

SERVES = {
    "rule": "HW130",
    "name": "a few QPS served by the CPU",
    "scenario": "inference",
    "machine": "laptop",
    "workload": {"task": "infer", "qps": 5, "batch_size": 1},
    "estimates": [
        {"device": "here", "throughput_samples_s": 50, "step_time_s": 0.02, "fits": True}
    ],
}


@pytest.mark.parametrize(
    ("bench", "said"),
    [
        (
            {"cpu.matmul.fp32": 100.0, "cpu.load_over_threads": 3.0},
            "busy machine (load average 3.0x",
        ),
        (None, "no microbenchmark ran"),
        (
            {"cpu.matmul.fp32": 100.0, "cpu.fp32_matmul_of_peak": 0.01},
            "only 1.0% of the theoretical",
        ),
        (
            {"cpu.matmul.fp32": 100.0, "cpu.end_over_start": 0.7},
            "speed moved while the microbenchmark ran (fp32 matmul timed again at the end: 0.70x",
        ),
        (
            {"cpu.matmul.fp32": 100.0, "cpu.end_over_start": 1.3},
            "again at the end: 1.30x its first figure",
        ),
    ],
)
def test_doubtful_measurements_lower_the_confidence_with_the_reason(
    runner: Callable[[dict[str, Any]], CaseRun], bench: dict[str, float] | None, said: str
) -> None:
    case = {**SERVES, "facts": {"bench": None}}
    if bench is not None:
        case["bench"] = bench
    v = runner(case).verdict
    assert (v.device.value, v.rule, v.confidence.value) == ("cpu", "HW130", "medium")
    assert len(v.confidence_reasons) == 1
    assert v.confidence_reasons[0].startswith("high lowered to medium: ")
    assert said in v.confidence_reasons[0]


def test_calm_measurements_keep_the_rules_confidence(
    runner: Callable[[dict[str, Any]], CaseRun],
) -> None:
    for steady in (0.5, 1.0):
        bench = {"cpu.matmul.fp32": 100.0, "cpu.load_over_threads": steady}
        # The speed held within twice a steady figure's spread, either way.
        bench["cpu.end_over_start"] = 0.85 if steady < 1 else 1.18
        v = runner({**SERVES, "bench": bench}).verdict
        assert (v.device.value, v.confidence.value, v.confidence_reasons) == ("cpu", "high", [])


def test_a_rule_of_thumb_verdict_does_not_rest_on_measurements(
    runner: Callable[[dict[str, Any]], CaseRun],
) -> None:
    # HW133 decides from the workload alone: a busy bench says nothing about it.
    case = {
        "rule": "HW133",
        "name": "low volume",
        "scenario": "inference",
        "machine": "laptop",
        "workload": {"task": "infer", "qps": 5},
        "bench": {"cpu.matmul.fp32": 100.0, "cpu.load_over_threads": 4.0},
    }
    v = runner(case).verdict
    assert (v.rule, v.confidence.value, v.confidence_reasons) == ("HW133", "low", [])
