"""Multi-GPU plans: the smallest count per GPU, named, with fixes only where they apply."""

from __future__ import annotations

import itertools
import json
from dataclasses import replace
from typing import Any

import pytest

from hwadvisor.catalog import DeviceKind, load_devices
from hwadvisor.estimate.memory.fixes import memory_fixes
from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown, decide_fit
from hwadvisor.estimate.memory.plan import COUNTS, Gpu, fix_levels, plan_for
from hwadvisor.estimate.workload.build import build_workload
from hwadvisor.models.workload import ModelKind, Precision, Task, Workload

GB = 10**9
H100 = Gpu("h100-sxm", "NVIDIA H100 SXM 80GB", 80 * GB)
RTX4090 = Gpu("rtx-4090", "NVIDIA GeForce RTX 4090 24GB", 24 * GB)


def catalog_gpus() -> list[Gpu]:
    """The catalog's GPUs (not CPUs, not systems-on-chip: sharding needs several)."""
    devices = load_devices().values()
    return [Gpu(d.id, d.name, d.memory_bytes) for d in devices if d.kind is DeviceKind.GPU]


def test_7b_at_seq_4096_gets_a_named_multi_gpu_plan_that_fits() -> None:
    wl = build_workload(params=7_000_000_000, seq_len=4096)
    plan = plan_for(wl, RTX4090)
    assert plan is not None and plan.fits and plan.gpus > 1
    assert plan.plan.startswith(f"{plan.gpus} × NVIDIA GeForce RTX 4090 24GB with ")
    assert "FSDP (ZeRO-3)" in plan.plan or "ZeRO-" in plan.plan
    assert decide_fit(plan.memory, RTX4090.memory_bytes).fits is True
    every = [p for gpu in catalog_gpus() if (p := plan_for(wl, gpu))]
    assert every and all(p.fits for p in every)


def test_a_job_that_fits_alone_is_one_gpu_without_fixes() -> None:
    wl = build_workload(model="resnet50", batch_size=32)
    plan = plan_for(wl, H100)
    assert plan is not None and plan.gpus == 1 and plan.strategy == "single"
    assert plan.fixes == [] and plan.plan == "1 × NVIDIA H100 SXM 80GB"


def test_the_plan_is_the_smallest_count() -> None:
    wl = build_workload(params=13_000_000_000, seq_len=2048, precision="amp", batch_size=1)
    plan = plan_for(wl, H100)
    assert plan is not None
    for fixes, mp in fix_levels(wl):
        if "optimizer offload to the host" in fixes:
            continue
        for n in range(1, plan.gpus):
            for stage in (1, 2, 3):
                sharded = MemoryPlan(**{**mp.__dict__, "zero_stage": stage, "shards": n})
                mb = breakdown(wl, sharded, gpu=True)
                assert decide_fit(mb, H100.memory_bytes).fits is not True


def _count_by_count(
    wl: Workload, gpu: Gpu, fewest: str = "gpus"
) -> tuple[int, str, tuple[str, ...]] | None:
    """The plan as trying every count and strategy in turn finds it: (GPUs, strategy,
    fixes); offload only where nothing else fits, the fewest GPUs, then fewest fixes."""
    names = {1: "ZeRO-1", 2: "ZeRO-2", 3: "FSDP (ZeRO-3)"}
    stages = [(3, "tensor parallel")] if wl.task.value == "infer" else list(names.items())

    def fits(mp: MemoryPlan) -> bool:
        return decide_fit(breakdown(wl, mp, gpu=True), gpu.memory_bytes).fits is True

    def smallest(level: int, fixes: tuple[str, ...], mp: MemoryPlan) -> Any:
        if fits(mp):
            return (1, level, 0, "single", fixes)
        for n in (c for c in COUNTS if c > 1):
            for stage, name in stages:
                if fits(replace(mp, zero_stage=stage, shards=n)):
                    return (n, level, stage, name, fixes)
        return None

    levels = fix_levels(wl, cuda=gpu.cuda)
    plain = [lv for lv in levels if "optimizer offload to the host" not in lv[0]]
    found = [c for i, lv in enumerate(plain) if (c := smallest(i, *lv)) is not None]
    if not found and len(plain) < len(levels):
        found = [c for c in [smallest(len(plain), *levels[len(plain)])] if c is not None]
    if not found:
        return None
    order = (lambda c: (c[1], c[0], c[2])) if fewest == "fixes" else (lambda c: (c[0], c[1], c[2]))
    best = min(found, key=order)
    return best[0], best[3], best[4]


@pytest.mark.parametrize(
    ("params", "seq", "batch", "precision", "task"),
    [
        (1.3e9, 2048, 8, "fp32", "train"),
        (7e9, 4096, 1, "amp", "train"),
        (13e9, 2048, 4, "bf16", "train"),
        (30e9, 2048, 1, "bf16", "train"),
        (70e9, 4096, 2, "amp", "train"),
        (175e9, 2048, 1, "fp32", "train"),
        (1e12, 8192, 1, "bf16", "train"),
        (70e9, 4096, 16, "fp16", "infer"),
        (405e9, 8192, 1, "fp32", "infer"),
    ],
)
def test_the_bisection_finds_what_trying_every_count_finds(
    params: float, seq: int, batch: int, precision: str, task: str
) -> None:
    wl = build_workload(
        params=int(params), seq_len=seq, batch_size=batch, precision=precision, task=task
    )
    for gpu in (*catalog_gpus(), Gpu("small", "S", 8 * GB)):
        for fewest in ("gpus", "fixes"):
            plan = plan_for(wl, gpu, fewest=fewest)  # type: ignore[arg-type]
            want = _count_by_count(wl, gpu, fewest)
            got = None if plan is None else (plan.gpus, plan.strategy, tuple(plan.fixes))
            assert got == want, (gpu.id, fewest)


def test_more_memory_never_needs_more_gpus() -> None:
    wl = build_workload(params=30_000_000_000, seq_len=2048)
    counts = []
    for size in (16, 24, 40, 80, 141, 192):
        p = plan_for(wl, Gpu("g", "G", size * GB))
        counts.append(p.gpus if p is not None else 10**9)
    assert counts == sorted(counts, reverse=True) and counts[-1] < 10**9


def test_inference_splits_by_tensor_parallelism() -> None:
    wl = build_workload(model="llama-2-70b", task="infer", precision="bf16", batch_size=1)
    plan = plan_for(wl, Gpu("a100-40gb", "NVIDIA A100 40GB", 40 * GB))
    assert plan is not None and plan.gpus >= 2 and plan.strategy == "tensor parallel"
    assert plan.plan.startswith(f"{plan.gpus} × NVIDIA A100 40GB with tensor parallel")


def test_no_plan_when_nothing_fits_within_the_limit() -> None:
    wl = Workload(
        params=10**12,
        kind=ModelKind.DECODER,
        seq_len=2048,
        batch_size=1,
        precision=Precision.AMP,
        task=Task.TRAIN,
    )
    assert plan_for(wl, Gpu("tiny", "Tiny 1GB", GB), max_gpus=8) is None


def test_cpu_fixes_offer_no_gpu_fix() -> None:
    wl = build_workload(params=7_000_000_000, seq_len=2048)
    fixes = memory_fixes(wl, 16 * GB, gpu=False, gpus=8)
    texts = [f.fix for f in fixes]
    assert texts and not any("GPU" in t or "ZeRO" in t or "FSDP" in t for t in texts)
    assert not any("8-bit" in t or "offload" in t for t in texts)
    gpu = [f.fix for f in memory_fixes(wl, 16 * GB, gpu=True, gpus=8)]
    assert any("FSDP (ZeRO-3) across 8 GPUs" in t for t in gpu)


def test_fixes_stop_at_the_first_that_fits() -> None:
    wl = build_workload(model="resnet50", batch_size=256)
    fixes = memory_fixes(wl, 16 * GB, gpu=True)
    assert fixes and fixes[-1].fits and not any(f.fits for f in fixes[:-1])
    assert [f.memory_bytes for f in fixes] == sorted((f.memory_bytes for f in fixes), reverse=True)


_CUDA_ONLY = ("an 8-bit optimizer", "optimizer offload to the host")


def _big_train() -> Workload:
    return Workload(
        params=13_000_000_000, kind=ModelKind.DECODER, task=Task.TRAIN, batch_size=2,
        seq_len=2048, precision=Precision.BF16, layers=40, hidden=5120, heads=40,
    )  # fmt: skip


def test_a_gpu_without_cuda_gets_no_8_bit_optimizer_or_offload() -> None:
    wl = _big_train()
    assert {f for fixes, _ in fix_levels(wl) for f in fixes} >= set(_CUDA_ONLY)
    assert not {f for fixes, _ in fix_levels(wl, cuda=False) for f in fixes} & set(_CUDA_ONLY)
    mps = memory_fixes(wl, 192 * 10**9, gpu=True, cuda=False)
    cuda = memory_fixes(wl, 192 * 10**9, gpu=True)
    assert mps and not {f.fix for f in mps} & set(_CUDA_ONLY)
    assert {f.fix for f in cuda} & set(_CUDA_ONLY)
    plan = plan_for(wl, Gpu("apple-m2-ultra", "Apple M2 Ultra", 192 * 10**9, cuda=False))
    assert plan is None or not set(plan.fixes) & set(_CUDA_ONLY)


def test_an_apple_soc_row_offers_no_cuda_only_fix(cli: Any) -> None:
    args = ["estimate", "--params", "13B", "--task", "train", "--seq-len", "2048"]
    args += ["--precision", "bf16", "--on", "apple-m2-ultra", "--on", "a100-80gb"]
    code, out, err = cli(*args, "--no-bench", "--json")
    assert code == 0, err
    rows = {e["device"]: e for e in json.loads(out)["estimates"]}
    apple, a100 = rows["apple-m2-ultra"], rows["a100-80gb"]
    assert apple["fits"] is False and apple["fixes"]
    assert not {f["fix"] for f in apple["fixes"]} & set(_CUDA_ONLY)
    assert {f["fix"] for f in a100["fixes"]} & set(_CUDA_ONLY)


def test_recommend_on_an_apple_soc_plans_no_cuda_only_fix() -> None:
    from hwadvisor.estimate.memory.recommended import Placement, as_recommended
    from hwadvisor.estimate.report import estimate_workload

    wl = _big_train().model_copy(update={"params": 70_000_000_000})
    report = estimate_workload(wl, facts=None, bench=None, on=["apple-m2-ultra"])
    (est,) = report.estimates
    out = as_recommended(wl, est, Placement(gpu=True, plan_gpus=1, cuda=False))
    assert out.fits_planned is False
    assert not any(f in (out.planned_reason or "") for f in _CUDA_ONLY)


def test_a_copy_of_a_workload_is_planned_afresh() -> None:
    # The search keeps the breakdowns of the workload it last planned, by plan: a copy
    # with longer sequences (a new object, its plans the same) must not read them.
    wl = build_workload(params=7_000_000_000, seq_len=4096, batch_size=8)
    long = wl.model_copy(update={"seq_len": 16384})
    expected_long = plan_for(long.model_copy(), H100)
    short, again = plan_for(wl, H100), plan_for(long, H100)
    expected_short = plan_for(wl.model_copy(), H100)
    assert again == expected_long and short == expected_short
    assert short is not None and again is not None and short.plan != again.plan


def test_fixes_come_in_the_practitioners_order_and_the_first_that_fits_is_the_plan() -> None:
    # SPEC section 6: activation checkpointing, a smaller micro-batch with accumulation,
    # (an fp32 job's mixed precision,) an 8-bit optimizer; no LoRA for --task train.
    from hwadvisor.estimate.memory.recommended import Placement, as_recommended
    from hwadvisor.estimate.report import estimate_workload

    wl = Workload(
        params=1_300_000_000, kind=ModelKind.DECODER, task=Task.TRAIN, batch_size=2,
        seq_len=16384, precision=Precision.FP32, layers=24, hidden=2048, heads=16,
    )  # fmt: skip
    (est,) = estimate_workload(wl, facts=None, bench=None, on=["l40s"]).estimates
    order = [
        "activation checkpointing",
        "batch 1 per device with 2 steps of gradient accumulation",
        "mixed precision (bf16)",
        "an 8-bit optimizer",
    ]
    assert est.fits is False and [f.fix for f in est.fixes] == order
    assert est.fixes[-1].fits and not any(f.fits for f in est.fixes[:-1])
    mems = [est.memory_bytes] + [f.memory_bytes for f in est.fixes]
    assert all(a is not None and a > b for a, b in itertools.pairwise(mems))
    assert est.plan is not None and est.plan.gpus == 1 and est.plan.fixes == order
    out = as_recommended(wl, est, Placement(gpu=True, plan_gpus=1))
    assert out.fits_planned is True and out.planned_reason
    assert out.planned_reason.startswith(f"fits as {est.plan.plan}")
    assert not any("LoRA" in f for fixes, _ in fix_levels(wl) for f in fixes)


def test_sharding_over_the_gpus_comes_before_the_offload() -> None:
    from hwadvisor.estimate.memory.fixes import fix_steps

    wl = build_workload(params=7_000_000_000, seq_len=2048, batch_size=4, precision="fp32")
    texts = [f.fix for f in memory_fixes(wl, 16 * GB, gpu=True, gpus=2)]
    assert texts[-2:] == ["FSDP (ZeRO-3) across 2 GPUs", "optimizer offload to the host"]
    # the offload, after the sharding, offloads the sharded job
    *_, (_, sharded), (_, offloaded) = fix_steps(wl, gpu=True, gpus=2)
    assert offloaded.offload and (offloaded.zero_stage, offloaded.shards) == (3, 2)
    assert offloaded == replace(sharded, offload=True)
    # a plan shards over more GPUs before it offloads to the host, even where one GPU
    # with the offload would hold the job
    big = Workload(
        params=6_700_000_000, kind=ModelKind.DECODER, task=Task.TRAIN, batch_size=4,
        seq_len=2048, precision=Precision.AMP, layers=32, hidden=4096, heads=32,
    )  # fmt: skip
    alone = memory_fixes(big, 80 * GB, gpu=True)
    assert alone[-1].fix == "optimizer offload to the host" and alone[-1].fits
    plan = plan_for(big, H100)
    assert plan is not None and plan.gpus == 2
    assert plan.fixes == [f.fix for f in alone[:-1]]
