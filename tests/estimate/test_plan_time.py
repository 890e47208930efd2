"""A multi-GPU plan's time: recomputation, sharding, the network past one node, and the
plans that are not timed (offload, tensor-parallel inference)."""

from __future__ import annotations

import dataclasses
import functools

import pytest

from hwadvisor.catalog import lookup_device
from hwadvisor.estimate import estimate_workload
from hwadvisor.estimate.memory.plan import CHECKPOINTING, OFFLOAD, Gpu, plan_for
from hwadvisor.estimate.timing.catalog import device_model
from hwadvisor.estimate.timing.plan_time import RECOMPUTED, TRAIN_FORWARDS, timed_plan
from hwadvisor.estimate.timing.scaling import FALLBACK_LINK_GB_S, NODE_GPUS, efficiency
from hwadvisor.estimate.timing.step import step_time
from hwadvisor.estimate.workload.build import build_workload
from hwadvisor.models.workload import Precision, Workload

H100 = lookup_device("h100-sxm").entry
RATES_AT = functools.partial(device_model, H100)
GPU = Gpu(H100.id, H100.name, H100.memory_bytes or 0)


def _job() -> Workload:
    return build_workload(params=70_000_000_000, seq_len=4096, dataset_size=100_000)


def test_a_70b_plan_is_timed_on_its_gpus_with_recomputation_and_sharding() -> None:
    wl = _job()
    plan = plan_for(wl, GPU)
    assert plan is not None and plan.gpus > NODE_GPUS and CHECKPOINTING in plan.fixes
    timed = timed_plan(wl, plan, RATES_AT)
    assert timed.step_time_s and timed.total_time_s and timed.throughput_samples_s
    job = wl.model_copy(
        update={"precision": Precision(timed.precision), "batch_size": timed.batch_per_gpu}
    )
    alone = step_time(job, RATES_AT(Precision(timed.precision)))
    assert alone.total is not None
    # one forward more (a third of the forward and backward), then the sharded all-reduce
    assert timed.step_time_s > alone.total * (1 + 1 / 3) * 0.999
    assert timed.total_time_s == pytest.approx(
        -(-100_000 // (timed.batch_per_gpu * timed.gpus)) * timed.step_time_s
    )
    assert any("recomputes the forward" in n for n in timed.notes)
    assert any("network between nodes" in n and "ConnectX-7" in n for n in timed.notes)


def test_zero3_moves_half_as_much_again_as_ddp() -> None:
    wl = _job()
    rates = RATES_AT(Precision.AMP)
    ddp, _ = efficiency(wl, rates, 1.0, 8)
    zero3, text = efficiency(wl, rates, 1.0, 8, volume=1.5)
    assert zero3 < ddp and "sharded" in text


def test_past_one_node_the_ring_runs_at_the_network_rate() -> None:
    wl = _job()
    rates = RATES_AT(Precision.AMP)
    within, _ = efficiency(wl, rates, 1.0, NODE_GPUS)
    past, text = efficiency(wl, rates, 1.0, 2 * NODE_GPUS)
    assert past < within and f"{H100.interconnect.network_gb_s_per_gpu:g} GB/s" in text
    links = dataclasses.replace(rates.links, network_gb_s=None, network_source=None)
    bare = dataclasses.replace(rates, links=links)
    _, assumed = efficiency(wl, bare, 1.0, 2 * NODE_GPUS)
    assert f"{FALLBACK_LINK_GB_S:g} GB/s assumed" in assumed


def test_offload_and_inference_plans_are_not_timed() -> None:
    wl = _job()
    plan = plan_for(wl, GPU)
    assert plan is not None
    off = plan.model_copy(update={"fixes": [*plan.fixes, OFFLOAD]})
    untimed = timed_plan(wl, off, RATES_AT)
    assert untimed.step_time_s is None and "host CPU" in untimed.notes[-1]
    serve = build_workload(params=400_000_000_000, task="infer", seq_len=4096)
    tp = plan_for(serve, GPU)
    assert tp is not None
    assert timed_plan(serve, tp, RATES_AT).step_time_s is None


def test_the_estimate_row_carries_the_timed_plan() -> None:
    est = estimate_workload(_job(), facts=None, bench=None, on=["h100-sxm"]).estimates[0]
    assert est.fits is False and est.plan is not None
    assert est.plan.step_time_s and est.plan.total_time_s and est.plan.precision == "amp"


def test_accumulation_runs_the_optimizer_once_per_accumulated_batch() -> None:
    """A plan that drops the batch per GPU to 1 with 16 micro-steps of accumulation pays
    the optimizer once per 16 (the single-GPU plan of a 1.3B job at sequence 4096 and batch
    16 on an A100, where checkpointing alone does not fit)."""
    a100 = lookup_device("a100-80gb").entry
    wl = build_workload(params=1_300_000_000, seq_len=4096, batch_size=16, dataset_size=10_000)
    plan = plan_for(wl, Gpu(a100.id, a100.name, a100.memory_bytes or 0))
    assert plan is not None and plan.gpus == 1 and plan.batch_per_gpu == 1
    timed = timed_plan(wl, plan, functools.partial(device_model, a100))
    job = wl.model_copy(update={"precision": Precision(timed.precision), "batch_size": 1})
    alone = step_time(job, device_model(a100, Precision(timed.precision)))
    assert alone.total is not None and timed.step_time_s is not None
    optimizer = alone.parts["optimizer"]
    # checkpointing, the first fix, recomputes the forward: a third of the work more
    assert CHECKPOINTING in plan.fixes
    forward = sum(v for k, v in alone.parts.items() if k in RECOMPUTED) / TRAIN_FORWARDS
    assert timed.step_time_s == pytest.approx(alone.total - optimizer * 15 / 16 + forward)
    assert any("gradient accumulation over 16 micro-steps" in n for n in timed.notes)
