"""Every time figure says how far to trust it: bands per class, from validation runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from tests.benchmark_modules import load_benchmark

from hwadvisor.estimate import build_workload, estimate_workload
from hwadvisor.estimate.timing.bands import band, load_bands
from hwadvisor.models.band import TimeBand
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Cpu, Facts, PeakGflops

ROOT = Path(__file__).resolve().parents[2]


def _load_anchors() -> Any:
    return load_benchmark("gpu_anchors")


def _bench() -> BenchReport:
    r = BenchResult(device="cpu", kernel="matmul", dtype="fp32", shape=[512, 512, 512],
                    value=100.0, unit="GFLOP/s", median_s=1e-3, iqr_s=0.0, runs=3, threads=2)  # fmt: skip
    return BenchReport(budget_s=1.0, elapsed_s=1.0, results=[r])


def test_every_class_names_its_run_and_its_check() -> None:
    bands = load_bands()
    want = {"cpu_measured", "catalog_gpu", "catalog_gpu_host_bound", "multi_gpu", "llm_decode",
            "cpu_theoretical", "catalog_cpu"}  # fmt: skip
    assert want <= set(bands)
    for spec in bands.values():
        assert spec.basis and spec.check and spec.low_ratio <= spec.high_ratio
    validated = [s for s in bands.values() if s.validated]
    widest = (min(s.low_ratio for s in validated), max(s.high_ratio for s in validated))
    for spec in (s for s in bands.values() if not s.validated):
        assert (spec.low_ratio, spec.high_ratio) == widest
        assert "widest validated band" in spec.basis


def test_band_contains_the_estimate_and_inverts_for_throughput() -> None:
    t = band(100.0, "catalog_gpu")
    x = band(10.0, "catalog_gpu", inverse=True)
    assert t is not None and x is not None
    assert t.low <= 100.0 <= t.high and x.low <= 10.0 <= x.high
    spec = load_bands()["catalog_gpu"]
    assert t.low == pytest.approx(100.0 * spec.low_ratio)
    assert x.high == pytest.approx(10.0 / spec.low_ratio)
    host = band(1.0, "catalog_gpu_host_bound")  # validation found faster and slower
    spec = load_bands()["catalog_gpu_host_bound"]
    assert host is not None and (host.low, host.high) == (spec.low_ratio, spec.high_ratio)
    assert host.low < 1.0 < host.high
    assert band(None, "catalog_gpu") is None and band(1.0, "nope") is None


def _classes(**kw: Any) -> dict[str, str | None]:
    report = estimate_workload(**kw)
    return {
        e.device: (e.time_band_s.band_class if e.time_band_s else None) for e in report.estimates
    }


def test_each_estimate_gets_its_class() -> None:
    wl = build_workload(model="resnet50", batch_size=64, dataset_size=100_000, precision="amp")
    on = ["here", "a100-80gb", "xeon-6248", "epyc-9654"]
    got = _classes(workload=wl, facts=None, bench=_bench(), on=on)
    assert got == {"here": "cpu_measured", "a100-80gb": "catalog_gpu",
                   "xeon-6248": "catalog_cpu", "epyc-9654": "catalog_cpu"}  # fmt: skip
    facts = Facts(cpu=Cpu(peak_gflops=PeakGflops(fp32=100.0)))
    assert _classes(workload=wl, facts=facts, bench=None, on=["here"]) == {
        "here": "cpu_theoretical"
    }
    assert _classes(workload=wl, facts=None, bench=None, on=["here"]) == {"here": None}
    multi = _classes(workload=wl, facts=None, bench=None, on=["a100-80gb"], gpus=8)
    assert multi == {"a100-80gb": "multi_gpu"}
    one = build_workload(model="resnet50", task="infer", batch_size=1)
    assert _classes(workload=one, facts=None, bench=None, on=["t4"]) == {
        "t4": "catalog_gpu_host_bound"
    }


def test_bands_are_in_the_json_with_the_command_that_checks_them() -> None:
    wl = build_workload(model="resnet50", batch_size=64, dataset_size=100_000)
    est = estimate_workload(wl, facts=None, bench=None, on=["a100-80gb"]).estimates[0]
    doc = json.loads(est.model_dump_json())
    for key, value in (("time_band_s", est.step_time_s), ("total_time_band_s", est.total_time_s)):
        b = TimeBand.model_validate(doc[key])
        assert b.low <= (value or 0) <= b.high
        assert "gpu_anchors" in b.basis and b.check
    t = doc["throughput_band"]
    assert t["low"] <= est.throughput_samples_s <= t["high"]


@pytest.mark.slow  # reruns the whole anchor benchmark; CI's second step runs it
def test_catalog_gpu_bands_match_a_fresh_anchor_run() -> None:
    """The data file's GPU bands are the current validation run's (refresh them if not)."""
    mod = _load_anchors()
    single, multi = mod.rows() + mod.bert_rows() + mod.yolo_rows(), mod.scaling_rows()
    # each row counts in the class its own estimate carries (host-bound: the host's step)
    device = [1 + r["error"] for r in single if r["band_class"] == "catalog_gpu"]
    host = [1 + r["error"] for r in single if r["band_class"] == "catalog_gpu_host_bound"]
    assert len(device) + len(host) == len(single) and device and host
    scale = [1 + r["error"] for r in multi]
    bands = load_bands()
    assert mod.bands(single, multi)["catalog_gpu"] == (min(device), max(device))
    for name, ratios in (("catalog_gpu", device), ("catalog_gpu_host_bound", host),
                         ("multi_gpu", scale)):  # fmt: skip
        spec = bands[name]
        assert (spec.low_ratio, spec.high_ratio) == pytest.approx(
            (min(ratios), max(ratios)), abs=0.002
        ), f"{name}: run benchmarks/gpu_anchors.py and copy its bands into error_bands.yaml"


def test_anchors_time_what_the_published_loops_time() -> None:
    """The comparison leaves out the input copy the published loops do not clock."""
    mod = _load_anchors()
    assert "input_copy" in mod.UNTIMED
    row = next(r for r in mod.rows() if r["anchor"] == "infer V100 AMP b256")
    parts = row["breakdown_ms"]
    assert parts["input_copy"] > 0  # the estimate still charges it
    # a device-bound row: the GPU's parts, less the copy, set the published figure's time
    device = sum(v for k, v in parts.items() if k not in {"overhead", "input_copy", "loop_host"})
    assert row["estimate"] == pytest.approx(row["batch"] / (device / 1e3), rel=1e-3)
    assert row["estimate"] > row["batch"] / ((device + parts["input_copy"]) / 1e3)
    bert = {r["anchor"]: r for r in mod.bert_rows()}
    assert len(bert) == len(mod.BERT_ANCHORS)
    assert {r["device"] for r in bert.values()} >= {"v100-16gb", "v100-32gb", "a100-40gb"}


def test_fine_tuning_rows_price_the_optimizer_the_published_script_runs() -> None:
    """run_squad.py's FP32 BertAdam loops over its tensors with a host read at each one;
    its FP16 path is apex's fused multi-tensor step: the rows price those, not AdamW."""
    from hwadvisor.catalog.loader import load_models
    from hwadvisor.estimate.timing.gpu import gpu_constants

    mod = _load_anchors()
    params = mod.squad_parameters()
    # the catalog's BERT-large (with its pooler, no head) less the pooler the script drops,
    # plus the question-answering head and the vocabulary padded to a multiple of 8
    catalog = load_models()["bert-large"].params
    assert sum(n for n, _ in params) == catalog - (1024 * 1024 + 1024) + (2 * 1024 + 2) + 6 * 1024
    assert len(params) == 391
    bw = 900e9 * 0.9
    fp32, name32 = mod.squad_optimizer_seconds("fp32", bw)
    fp16, name16 = mod.squad_optimizer_seconds("fp16", bw)
    assert (name32, name16) == ("BertAdam", "amp O2 + FusedAdam")
    h = gpu_constants()["host"]
    launch = float(h["python_s"]) + float(h["op_s"])
    # each tensor waits for a host read and takes the longer of its launches and its
    # bytes; the global clipper reads once before, and zero_grad launches once a tensor after
    sync, elements = float(h["sync_s"]), sum(n for n, _ in params)
    loop = sum(max(mod.BERTADAM_KERNELS[d] * launch, mod.BERTADAM_BYTES[d] * n / bw) + sync
               for n, d in params)  # fmt: skip
    clipper = 4.0 * elements / bw + sync
    zero = max(len(params) * launch, 4.0 * elements / bw)
    assert fp32 == pytest.approx(clipper + loop + zero)
    assert loop > sum(mod.BERTADAM_KERNELS[d] * launch for _, d in params) + len(params) * sync
    # ... and at least its bytes: the loop is never faster than streaming them
    assert fp32 > sum(mod.BERTADAM_BYTES[d] * n for n, d in params) / bw
    assert fp16 < fp32 / 4
    rows = {r["anchor"]: r for r in mod.bert_rows()}
    b4 = rows["BERT-L train V100 16GB FP32 b4"]
    assert b4["breakdown_ms"]["published_optimizer"] == pytest.approx(fp32 * 1e3, rel=1e-3)
    # the estimate's own optimizer part is left out of the step the row prices
    parts = {k: v for k, v in b4["breakdown_ms"].items() if k not in {"overhead"}}
    device = sum(v for k, v in parts.items() if k not in {"optimizer", "published_optimizer"})
    assert b4["estimate"] == pytest.approx(4 / ((device + fp32 * 1e3) / 1e3), rel=1e-3)


def test_duration_with_band_says_the_unit_once() -> None:
    from hwadvisor.render.estimate import with_band

    b = TimeBand(low=1.7 * 3600, high=2.6 * 3600, band_class="x", basis="b", check="c")
    assert with_band(2.1 * 3600, b) == "2.1 h (1.7-2.6 h)"
    mixed = TimeBand(low=50.0, high=90.0, band_class="x", basis="b", check="c")
    assert with_band(70.0, mixed) == "70 s (50 s-1.5 min)"
    assert with_band(70.0, None) == "70 s"


def test_advice_alternatives_carry_their_band() -> None:
    from hwadvisor.pipeline.advice import _estimates

    wl = build_workload(model="resnet50", batch_size=64, dataset_size=100_000)
    report = estimate_workload(wl, facts=None, bench=_bench(), on=["here", "t4"])
    est = _estimates(report)
    assert est.here is not None and est.here.total_time_band_s is not None
    (alt,) = est.alternatives
    assert alt.time_band_s == report.estimates[1].total_time_band_s
    assert alt.time_band_s is not None and alt.time_band_s.band_class == "catalog_gpu"


def test_measured_steps_split_the_hosts_launching_from_the_wait() -> None:
    """``--measure`` times each eager step and, apart, the host's part: the step's Python
    returning before the synchronisation (here a fake CUDA whose queue takes 5 ms)."""
    import time
    from contextlib import nullcontext
    from types import SimpleNamespace

    import torch

    syncs: list[float] = []

    def synchronize() -> None:
        syncs.append(time.perf_counter())
        time.sleep(0.005)  # the GPU's queue draining

    fake = SimpleNamespace(
        cuda=SimpleNamespace(synchronize=synchronize),
        autocast=lambda *a, **k: nullcontext(),
        no_grad=torch.no_grad,
        optim=torch.optim,
        nn=torch.nn,
        zeros=torch.zeros,
        long=torch.long,
        float16=torch.float16,
    )
    model = torch.nn.Linear(8, 4)
    total, host = _load_anchors()._time_steps(fake, model, torch.randn(2, 8), True, False)
    assert len(syncs) == 40  # 10 warm-up steps and 30 timed, each synchronised
    # every timed step is its host part plus one synchronisation of at least 5 ms, so the
    # medians differ by at least that: the wait is in the step, not in the host's part
    assert total - host >= 0.005 > 0.0 < host
