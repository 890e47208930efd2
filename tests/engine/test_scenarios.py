"""Every saved machine advised for all six scenarios, with the estimator's real figures.

The workloads are the catalog's: ResNet-50 on ImageNet for training, LLaMA-7B for
distributed training, BERT-base at 20 QPS for inference, YOLOv5n at 100 ms for the edge.
The device class follows the scenario and the estimates; whether the machine fits
follows what it has.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hwadvisor.engine import RuleSet
from hwadvisor.estimate import build_workload
from hwadvisor.models.advice import Advice
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Scenario
from hwadvisor.pipeline import advise, estimate_for_advice

MACHINES = [
    "laptop",
    "cpu-server-amx",
    "rtx4090-workstation",
    "t4-cloud",
    "h100x8-nvlink",
    "arm-edge",
    "apple-m2",
]
GPU_MACHINES = {"rtx4090-workstation", "t4-cloud", "h100x8-nvlink", "apple-m2"}
WORKLOADS: dict[Scenario, dict[str, Any]] = {
    Scenario.PROTOTYPING: {"model": "resnet50", "task": "train", "dataset_size": 1000, "epochs": 1},
    Scenario.TRAINING: {"model": "resnet50", "task": "train", "dataset_size": 1281167, "epochs": 1},
    Scenario.DISTRIBUTED: {
        "model": "llama-7b",
        "task": "train",
        "dataset_size": 100000,
        "epochs": 1,
    },
    Scenario.INFERENCE: {"model": "bert-base", "task": "infer", "qps": 20},
    Scenario.EDGE: {"model": "yolov5n", "task": "infer", "latency_ms": 100, "batch_size": 1},
    Scenario.PREPROCESSING: {"task": "train"},
}
EXPECTED_DEVICE = {
    Scenario.PROTOTYPING: "cpu",
    Scenario.TRAINING: "gpu",
    Scenario.DISTRIBUTED: "multi_gpu",
    Scenario.EDGE: "cpu",
    Scenario.PREPROCESSING: "cpu",
}


def _advise(
    machine: str, scenario: Scenario, facts_of: Callable[[str], Facts], rules: RuleSet
) -> Advice:
    facts = facts_of(machine)
    workload = build_workload(**WORKLOADS[scenario])
    estimates = estimate_for_advice(workload, facts=facts, bench=facts.bench)
    return advise(
        facts=facts, scenario=scenario, workload=workload, estimates=estimates, rules=rules
    )


@pytest.mark.parametrize("scenario", list(Scenario), ids=lambda s: s.value)
@pytest.mark.parametrize("machine", MACHINES)
def test_sound_advice_everywhere(
    machine: str, scenario: Scenario, facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    advice = _advise(machine, scenario, facts_of, shipped_rules)
    v = advice.verdict
    if scenario is Scenario.DISTRIBUTED:
        # Several GPUs, unless one GPU is shown to hold the job and meet the deadline.
        assert v.device.value in ("gpu", "multi_gpu")
        assert v.device.value == "multi_gpu" or (v.option is not None and v.option.gpus == 1)
    elif scenario in EXPECTED_DEVICE:
        assert v.device.value == EXPECTED_DEVICE[scenario]
    else:
        # 20 QPS of BERT-base: a GPU unless this CPU's estimate serves it.
        assert v.device.value in ("cpu", "gpu")
    assert v.rule is not None or v.option is not None, "a rule or a row decides every scenario"
    assert v.summary and "{" not in v.summary and v.summary.endswith(".")
    assert v.fits_reasons
    severities = [f.severity.value for f in advice.findings]
    assert severities == sorted(severities, key=["critical", "warning", "info"].index)
    for f in advice.findings:
        assert f.source and "{" not in f.message
    if v.device.value != "cpu" and machine not in GPU_MACHINES:
        assert v.fits_here is False
        assert advice.migration, "a CPU user moving to GPUs gets the checklist"
    if scenario is Scenario.PREPROCESSING:
        assert v.fits_here is True


@pytest.mark.parametrize("machine", sorted(GPU_MACHINES - {"apple-m2"}))
def test_a_gpu_here_trains_here(
    machine: str, facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    advice = _advise(machine, Scenario.TRAINING, facts_of, shipped_rules)
    assert advice.verdict.device.value == "gpu" and advice.verdict.fits_here is True
    assert advice.verdict.rule == "HW117"


def test_only_the_eight_gpu_node_fits_distributed_training(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    fits = {
        m: _advise(m, Scenario.DISTRIBUTED, facts_of, shipped_rules).verdict.fits_here
        for m in MACHINES
    }
    assert [m for m, f in fits.items() if f] == ["h100x8-nvlink"]


def test_cuda_mismatch_is_critical_in_every_scenario(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    for scenario in Scenario:
        advice = _advise("t4-cloud", scenario, facts_of, shipped_rules)
        first = advice.findings[0]
        assert (first.rule, first.severity.value) == ("HW401", "critical")
        assert "12.1" in first.message and "11.2" in first.message


def test_amx_server_reports_its_measured_speed_up(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    advice = _advise("cpu-server-amx", Scenario.INFERENCE, facts_of, shipped_rules)
    by_rule = {f.rule: f for f in advice.findings}
    assert "HW201" in by_rule
    # REFERENCE.md figures carried by the saved bench: bf16 ~1.1 TFLOP/s over fp32 308.
    assert "3.6x" in by_rule["HW208"].message
    assert by_rule["HW208"].evidence["bench.cpu.bf16_over_fp32"] == pytest.approx(1100 / 308)


def test_small_training_job_stays_on_the_cpu(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    facts = facts_of("cpu-server-amx")
    workload = build_workload(model="resnet50", task="train", dataset_size=2000, epochs=1)
    estimates = estimate_for_advice(workload, facts=facts, bench=facts.bench)
    advice = advise(
        facts=facts,
        scenario=Scenario.TRAINING,
        workload=workload,
        estimates=estimates,
        rules=shipped_rules,
    )
    assert advice.verdict.device.value == "cpu" and advice.verdict.rule == "HW110"
    assert advice.estimates.here is not None and advice.estimates.here.total_time_s is not None
    assert advice.estimates.here.total_time_s < 24 * 3600
    assert not advice.migration


def test_advice_replays_identically(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    a = _advise("rtx4090-workstation", Scenario.TRAINING, facts_of, shipped_rules)
    b = _advise("rtx4090-workstation", Scenario.TRAINING, facts_of, shipped_rules)
    assert a.model_dump_json() == b.model_dump_json()


def test_disturbed_measurements_lower_the_confidence(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    from hwadvisor.models.bench import BenchReport, BenchResult, Derived

    facts = facts_of("laptop")
    workload = build_workload(model="resnet50", task="train", dataset_size=1281167, epochs=1)
    fp32 = BenchResult(
        device="cpu",
        kernel="matmul",
        dtype="fp32",
        shape=[512] * 3,
        value=40.0,
        unit="GFLOP/s",
        median_s=0.01,
        iqr_s=0.0,
        runs=5,
    )
    calm = BenchReport(
        budget_s=3,
        elapsed_s=3,
        results=[fp32],
        derived=[Derived(id="cpu.load_over_threads", ratio=0.5, text="")],
    )
    busy = calm.model_copy(
        update={"derived": [Derived(id="cpu.load_over_threads", ratio=2.7, text="")]}
    )
    got = {}
    for name, bench in (("calm", calm), ("busy", busy), ("none", None)):
        est = estimate_for_advice(workload, facts=facts, bench=bench)
        got[name] = advise(
            facts=facts,
            scenario=Scenario.TRAINING,
            workload=workload,
            estimates=est,
            bench=bench,
            rules=shipped_rules,
        )
    assert (
        got["calm"].verdict.rule == got["busy"].verdict.rule == got["none"].verdict.rule == "HW111"
    )
    confidence = [got[n].verdict.confidence.value for n in ("calm", "busy", "none")]
    assert confidence == ["high", "medium", "medium"]
    assert "HW209" in {f.rule for f in got["busy"].findings} - {
        f.rule for f in got["calm"].findings
    }


def test_own_gpu_that_misses_the_deadline_does_not_fit(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    facts = facts_of("t4-cloud")
    workload = build_workload(
        model="resnet50", task="train", dataset_size=1281167, epochs=10, deadline_hours=4
    )
    estimates = estimate_for_advice(workload, facts=facts, bench=None)
    assert estimates is not None
    local = [e for e in estimates.estimates if e.device.startswith("local:")]
    assert [e.device for e in local] == ["local:t4"]
    advice = advise(
        facts=facts,
        scenario=Scenario.TRAINING,
        workload=workload,
        estimates=estimates,
        rules=shipped_rules,
    )
    assert advice.verdict.device.value == "gpu" and advice.verdict.fits_here is False
    assert any("deadline" in r for r in advice.verdict.fits_reasons)
    assert "HW118" in {f.rule for f in advice.findings}


def test_migration_checklist_is_personalised(
    facts_of: Callable[[str], Facts], shipped_rules: RuleSet
) -> None:
    from hwadvisor.models.facts import Gpu, Software, TorchInfo

    base = facts_of("laptop")
    gpu = Gpu(
        index=0,
        vendor="nvidia",
        name="NVIDIA A10",
        memory_total_bytes=24 * 2**30,
        cuda_driver_version="12.2",
    )
    facts = base.model_copy(
        update={"gpus": [gpu], "software": Software(torch=TorchInfo(version="2.5.1+cpu"))}
    )
    workload = build_workload(model="resnet50", task="train", dataset_size=1281167, epochs=1)
    advice = advise(
        facts=facts,
        scenario=Scenario.TRAINING,
        workload=workload,
        estimates=None,
        rules=shipped_rules,
    )
    steps = {m.rule: m.step for m in advice.migration}
    assert "supports CUDA up to 12.2" in steps["HW604"] and "whl/cu121" in steps["HW604"]
    assert "num_workers=about 4" in steps["HW601"]  # the laptop's usable cores
    assert "HW403" in {f.rule for f in advice.findings}


def test_serving_rules_name_the_inference_scenarios_of_the_model(shipped_rules: RuleSet) -> None:
    """Which scenarios are inference is decided once (``Scenario.is_inference``)."""
    from hwadvisor.models.workload import INFERENCE_SCENARIOS

    assert {s for s in Scenario if s.is_inference} == INFERENCE_SCENARIOS
    assert {Scenario.INFERENCE, Scenario.EDGE} == INFERENCE_SCENARIOS
    for rid in ("HW405", "HW406"):  # serving through an optimized CPU runtime
        assert set(shipped_rules.rules[rid].scenarios) == INFERENCE_SCENARIOS, rid
