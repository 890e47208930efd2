"""Estimates: time from bench figures and catalog peaks, fits and fixes, multi-GPU scaling."""

from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog import load_devices
from hwadvisor.errors import CatalogError, UsageError
from hwadvisor.estimate import build_workload, estimate_workload
from hwadvisor.estimate.report import DEFAULT_DEVICES
from hwadvisor.estimate.timing.catalog import device_model
from hwadvisor.estimate.timing.scaling import efficiency
from hwadvisor.estimate.timing.step import OPTIMIZER_BYTES_PER_PARAM
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.workload import (
    GemmBucket,
    ModelKind,
    OpProfile,
    Optimizer,
    Precision,
    Task,
    Workload,
)


def _bench(rate_gflops: float = 100.0, bw_gbs: float = 10.0) -> BenchReport:
    def res(kernel: str, shape: list[int], value: float, unit: str) -> BenchResult:
        return BenchResult(
            device="cpu",
            kernel=kernel,
            dtype="fp32",
            shape=shape,
            value=value,
            unit=unit,
            median_s=0.01,
            iqr_s=0.0,
            runs=5,
        )

    return BenchReport(
        budget_s=1,
        elapsed_s=1,
        results=[
            res("matmul", [256, 256, 256], rate_gflops / 2, "GFLOP/s"),
            res("matmul", [1024, 1024, 1024], rate_gflops, "GFLOP/s"),
            res("triad", [1 << 20], bw_gbs, "GB/s"),
        ],
    )


def _mlp_workload(batch: int = 10) -> Workload:
    prof = OpProfile(gemm=[GemmBucket(size=1024, flops=1e9)], memory_bytes=1e8, kernels=0)
    return Workload(
        model="x",
        kind=ModelKind.MLP,
        params=1_000_000,
        flops_per_sample=1e9,
        batch_size=batch,
        activation_bytes_per_sample=0.0,
        profile=prof,
        dataset_size=1000,
        epochs=2.0,
    )


def test_here_step_time_adds_the_priced_parts() -> None:
    wl = _mlp_workload()
    est = estimate_workload(wl, facts=None, bench=_bench(), on=["here"]).estimates[0]
    gemm = 3 * 1e9 * 10 / 100e9  # forward + 2x backward at the 1024 rate
    memory = 3 * 1e8 * 10 / 10e9
    optimizer = 1_000_000 * OPTIMIZER_BYTES_PER_PARAM[Optimizer.ADAMW] / 10e9
    assert est.time_breakdown_s["gemm"] == pytest.approx(gemm)
    assert est.time_breakdown_s["memory"] == pytest.approx(memory)
    assert est.step_time_s == pytest.approx(gemm + memory + optimizer)
    # 2 epochs of 1000 samples at batch 10 = 200 steps.
    assert est.total_time_s == pytest.approx(200 * est.step_time_s)
    assert est.basis and "measured" in est.basis


def test_smaller_products_are_priced_slower() -> None:
    small = _mlp_workload().model_copy(
        update={"profile": OpProfile(gemm=[GemmBucket(size=256, flops=1e9)])}
    )
    big = _mlp_workload().model_copy(
        update={"profile": OpProfile(gemm=[GemmBucket(size=1024, flops=1e9)])}
    )
    t_small = (
        estimate_workload(small, facts=None, bench=_bench(), on=["here"])
        .estimates[0]
        .time_breakdown_s["gemm"]
    )
    t_big = (
        estimate_workload(big, facts=None, bench=_bench(), on=["here"])
        .estimates[0]
        .time_breakdown_s["gemm"]
    )
    assert t_small == pytest.approx(2 * t_big)


def test_no_bench_no_facts_is_unknown_with_reason() -> None:
    est = estimate_workload(_mlp_workload(), facts=None, bench=None, on=["here"]).estimates[0]
    assert est.step_time_s is None and est.total_time_s is None
    assert any("unknown" in a for a in est.assumptions)


def test_default_devices_and_unknown_id() -> None:
    wl = build_workload(model="resnet50")
    report = estimate_workload(wl, facts=None, bench=None)
    assert [e.device for e in report.estimates] == DEFAULT_DEVICES
    with pytest.raises(CatalogError, match="did you mean a100"):
        estimate_workload(wl, facts=None, bench=None, on=["a100-120gb"])
    with pytest.raises(UsageError):
        estimate_workload(wl, facts=None, bench=None, on=["t4"], gpus=0)


def test_faster_gpus_are_faster() -> None:
    # at batch 128 the step is the GPUs' own work, not the host's launches
    wl = build_workload(model="bert-base", precision="bf16", batch_size=128)
    report = estimate_workload(wl, facts=None, bench=None, on=["t4", "a100-80gb", "h100-sxm"])
    t4, a100, h100 = (e.step_time_s or 0 for e in report.estimates)
    assert t4 > a100 > h100 > 0
    assert any("fp16" in a for a in report.estimates[0].assumptions)  # T4 has no bf16


def test_resnet50_a100_amp_matches_published_throughput() -> None:
    # REFERENCE.md: A100 AMP ResNet-50 training ~2470 img/s, run in channels_last (NHWC)
    # as the published configs.yml runs AMP.
    wl = build_workload(model="resnet50", precision="amp", batch_size=256)
    wl = wl.model_copy(update={"channels_last": True})
    est = estimate_workload(wl, facts=None, bench=None, on=["a100-80gb"]).estimates[0]
    assert est.throughput_samples_s == pytest.approx(2470, rel=0.15)


def test_a_7b_training_does_not_fit_one_a100_and_fixes_lead_to_a_fit() -> None:
    # LLaMA-7B's parameter count, trained from its size alone (no shape: the generic model)
    wl = build_workload(params=6_738_415_616, seq_len=2048, batch_size=4, precision="fp32")
    est = estimate_workload(wl, facts=None, bench=None, on=["a100-80gb"]).estimates[0]
    assert est.fits is False and est.memory_bytes and est.memory_bytes > 80e9
    fixes = [f.fix for f in est.fixes]
    assert fixes[0] == "activation checkpointing" and fixes[1].startswith("batch 1 per device")
    # In fp32 as given, and once checkpointing and the micro-batch have shrunk the
    # activations autocast's 16-bit weight copies would cost more than it saves.
    assert not any(f.startswith("mixed precision") for f in fixes)
    assert not any(f.fits for f in est.fixes[:-1])
    assert est.fixes[-1].memory_bytes <= 0.9 * 80 * 2**30  # the last fix brings it within
    # Each fix lowers the memory.
    mems = [est.memory_bytes] + [f.memory_bytes for f in est.fixes]
    assert all(a >= b for a, b in itertools.pairwise(mems))


def test_four_nvlink_gpus_scale_near_linearly() -> None:
    # GUIDANCE R2: four GPUs ~ near-linear for ResNet-50.
    wl = build_workload(model="resnet50", batch_size=64)
    one = estimate_workload(wl, facts=None, bench=None, on=["v100-16gb"]).estimates[0]
    four = estimate_workload(wl, facts=None, bench=None, on=["v100-16gb"], gpus=4).estimates[0]
    assert one.throughput_samples_s and four.throughput_samples_s
    assert four.throughput_samples_s / one.throughput_samples_s > 3.6
    assert four.gpus == 4


def test_pcie_scales_worse_than_nvlink_for_a_large_model() -> None:
    wl = build_workload(model="llama-7b", precision="bf16", batch_size=1)
    devices = load_devices()
    sxm, pcie = (
        device_model(devices["h100-sxm"], Precision.BF16),
        device_model(devices["h100-pcie"], Precision.BF16),
    )
    e_sxm, _ = efficiency(wl, sxm, 0.2, 8)
    e_pcie, _ = efficiency(wl, pcie, 0.2, 8)
    assert 0 < e_pcie < e_sxm <= 1


def test_inference_has_no_optimizer_and_counts_kv_cache() -> None:
    wl = build_workload(model="gpt2", task="infer", batch_size=8, precision="fp16")
    est = estimate_workload(wl, facts=None, bench=None, on=["t4"]).estimates[0]
    assert wl.task is Task.INFER
    assert est.memory and est.memory.kv_cache_bytes > 0 and est.memory.optimizer_bytes == 0
    assert "optimizer" not in est.time_breakdown_s


def test_yolov5n_memory_is_counted() -> None:
    wl = build_workload(model="yolov5n")  # counted on tests/data/models/yolov5n.py
    est = estimate_workload(wl, facts=None, bench=None, on=["t4"]).estimates[0]
    assert est.memory is not None and est.memory_bytes and est.fits is not None
    assert est.step_time_s is not None


def test_implausible_bench_figures_fall_back_to_the_stated_peak_path() -> None:
    from hwadvisor.models.facts import Cpu, Facts, PeakGflops

    facts = Facts(cpu=Cpu(peak_gflops=PeakGflops(fp32=1000.0)))
    busy = estimate_workload(
        _mlp_workload(), facts=facts, bench=_bench(rate_gflops=5.0), on=["here"]
    )
    est = busy.estimates[0]
    assert est.basis and "assumed" in est.basis
    assert any("probably busy" in a for a in est.assumptions)
    calm = estimate_workload(
        _mlp_workload(), facts=facts, bench=_bench(rate_gflops=500.0), on=["here"]
    )
    assert calm.estimates[0].basis and "measured" in calm.estimates[0].basis


_MODEL = (
    "import os, torch\n"
    "def build():\n"
    "    open(os.environ['PID_FILE'], 'w').write(str(os.getpid()))\n"
    "    return torch.nn.Linear(4, 2)\n"
    "def broken():\n"
    "    class M(torch.nn.Linear):\n"
    "        def forward(self, x):\n"
    "            raise ValueError('no steps today\\nsecond line')\n"
    "    return M(4, 2)\n"
)


def _measured_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    from hwadvisor.models.workload import Task, Workload

    model = tmp_path / "pid_model.py"
    model.write_text(_MODEL)
    monkeypatch.setenv("PID_FILE", str(tmp_path / "pid"))
    return Workload(
        model=f"{model}:build", batch_size=2, input_shape=[4], task=Task.TRAIN, dataset_size=20
    )


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_measure_runs_the_steps_in_a_fresh_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.estimate.timing.measure import measure_here

    wl = _measured_model(tmp_path, monkeypatch)
    est = measure_here(wl, min_run_s=0.02)
    assert est.measured is True and est.step_time_s and est.step_time_s > 0
    assert est.basis and "timed runs" in est.basis and "fresh process" in est.basis
    assert est.total_time_s == pytest.approx(10 * est.step_time_s)
    assert int((tmp_path / "pid").read_text()) != os.getpid()
    with pytest.raises(UsageError, match="your own model"):
        measure_here(build_workload(model="resnet50"))


def test_the_measuring_child_times_steps_and_raises_the_models_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the contained child runs (``measure_data``), here in this process: the
    timing as JSON-ready data, or the model's own error (the child turns it into one
    line: tests/hardening/test_user_code.py)."""
    import json

    from hwadvisor.estimate.timing.measure import measure_data

    wl = _measured_model(tmp_path, monkeypatch)
    step = {"model": wl.model, "batch_size": 2, "input_shape": [4], "task": "train",
            "optimizer": "adamw", "precision": "fp32"}  # fmt: skip
    broken = wl.model.replace(":build", ":broken")
    with pytest.raises(ValueError, match="no steps today"):
        measure_data(broken, {**step, "model": broken}, min_run_s=0.01)
    got = measure_data(wl.model, step, min_run_s=0.01)
    assert json.loads(json.dumps(got))["median_s"] > 0 and got["runs"] >= 1


@pytest.mark.slow
def test_measure_of_a_model_that_fails_is_one_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.estimate.timing.measure import measure_here

    wl = _measured_model(tmp_path, monkeypatch)
    with pytest.raises(UsageError) as err:
        measure_here(wl.model_copy(update={"model": wl.model.replace(":build", ":broken")}))
    assert err.value.message.endswith("the model's code raised ValueError: no steps today")


def _two_precisions(bf16_over_fp32: float) -> BenchReport:
    """A steady bench with fp32 and bf16 figures at each matmul size."""
    results = [
        BenchResult(
            device="cpu",
            kernel="matmul",
            dtype=dtype,
            shape=[n, n, n],
            value=value * (ratio if dtype == "bf16" else 1.0),
            unit="GFLOP/s",
            median_s=0.01,
            iqr_s=0.0,
            runs=5,
        )
        for n, value in ((256, 50.0), (1024, 100.0))
        for dtype, ratio in (("fp32", 1.0), ("bf16", bf16_over_fp32))
    ]
    triad = BenchResult(
        device="cpu",
        kernel="triad",
        dtype="fp32",
        shape=[1 << 20],
        value=10.0,
        unit="GB/s",
        median_s=0.01,
        iqr_s=0.0,
        runs=5,
    )
    return BenchReport(budget_s=1, elapsed_s=1, results=[*results, triad])


def test_a_defaulted_bf16_is_priced_in_fp32_where_the_cpu_runs_fp32_faster() -> None:
    wl = build_workload(model="bert-base", task="infer")
    assert wl.precision is Precision.BF16  # the language-model default
    slow_bf16 = _two_precisions(0.25)
    here = estimate_workload(wl, facts=None, bench=slow_bf16, on=["here"]).estimates[0]
    fp32 = build_workload(model="bert-base", task="infer", precision="fp32")
    fp32_here = estimate_workload(fp32, facts=None, bench=slow_bf16, on=["here"]).estimates[0]
    assert here.step_time_s == pytest.approx(fp32_here.step_time_s)
    assert any("priced in fp32, not the default bf16" in a for a in here.assumptions)
    # A precision the user gave is kept, however slow it is here.
    given = build_workload(model="bert-base", task="infer", precision="bf16")
    kept = estimate_workload(given, facts=None, bench=slow_bf16, on=["here"]).estimates[0]
    assert kept.step_time_s is not None and fp32_here.step_time_s is not None
    assert kept.step_time_s > fp32_here.step_time_s
    assert not any("priced in fp32" in a for a in kept.assumptions)
    # Where bf16 is the faster path (AMX), the default stands.
    fast_bf16 = _two_precisions(4.0)
    amx = estimate_workload(wl, facts=None, bench=fast_bf16, on=["here"]).estimates[0]
    assert not any("priced in fp32" in a for a in amx.assumptions)
    assert amx.step_time_s is not None and amx.step_time_s < fp32_here.step_time_s


@pytest.mark.parametrize(
    ("precision", "dtype", "autocast"),
    [("fp32", "float32", False), ("amp", "float32", True), ("bf16", "bfloat16", False),
     ("fp16", "float16", False)],
)  # fmt: skip
def test_measured_steps_run_the_jobs_precision(precision: str, dtype: str, autocast: bool) -> None:
    """bf16 and fp16 hold the weights in 16 bits, as the memory model counts them; amp
    keeps fp32 weights and autocasts each product."""
    import torch

    from hwadvisor.estimate.timing.measure import _one_step
    from hwadvisor.models.workload import Precision, Task, Workload

    model = torch.nn.Sequential(torch.nn.Linear(8, 4))
    seen: list[tuple[torch.dtype, bool]] = []
    model.register_forward_hook(
        lambda m, args, out: seen.append((out.dtype, torch.is_autocast_enabled("cpu")))
    )
    for task in (Task.INFER, Task.TRAIN):
        wl = Workload(batch_size=2, input_shape=[8], task=task, precision=Precision(precision))
        _one_step(torch, model, wl)()
        assert next(model.parameters()).dtype == getattr(torch, dtype)
    out = torch.bfloat16 if autocast else getattr(torch, dtype)
    assert seen == [(out, autocast)] * 2
