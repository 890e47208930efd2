"""When a job does not fit one device: the fixes in order, each with its effect.

The same cumulative fixes as a multi-GPU plan (:func:`.plan.fix_levels`: activation
checkpointing, a smaller micro-batch with gradient accumulation, mixed precision for an
fp32 job, an 8-bit optimizer, then sharding over the row's GPUs before the optimizer's
offload), stopping at the first that fits. Only fixes that can apply are offered: on a
CPU there is no sharding across GPUs, no 8-bit optimizer (bitsandbytes' optimizers are
CUDA kernels) and nothing to offload to; sharding needs ``gpus`` > 1. A GPU without
CUDA (an Apple M-series SoC's GPU through MPS) gets neither the 8-bit optimizer nor the
offload (ZeRO-Offload is DeepSpeed's, built for CUDA and ROCm): ``cuda`` false.
"""

from __future__ import annotations

from dataclasses import replace

from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown, decide_fit
from hwadvisor.estimate.memory.plan import fix_levels
from hwadvisor.models.estimate import MemoryFix
from hwadvisor.models.memory import MemoryCounts
from hwadvisor.models.workload import Workload


def fix_steps(
    wl: Workload,
    *,
    gpu: bool,
    gpus: int = 1,
    cuda: bool | None = None,
    counts: MemoryCounts | None = None,
) -> list[tuple[str, MemoryPlan]]:
    """The fixes that can apply on this device, in order, each with the plan it leads to
    (cumulative: each plan holds the fixes before it). ``cuda`` (default: ``gpu``): the
    device runs CUDA (or ROCm) kernels, which the 8-bit optimizer and the offload need.
    With ``gpus`` > 1 sharding across them comes before the offload, which then offloads
    the sharded job (ZeRO-3 with ZeRO-Offload)."""
    cuda = gpu if cuda is None else cuda and gpu
    levels = fix_levels(wl, cuda=cuda, gpu=gpu, counts=counts)[1:]
    steps = [(fixes[-1], plan) for fixes, plan in levels if not plan.offload]
    later = [(fixes[-1], plan) for fixes, plan in levels if plan.offload]
    if gpu and gpus > 1 and steps:
        last = steps[-1][1]
        steps.append(
            (f"FSDP (ZeRO-3) across {gpus} GPUs", replace(last, zero_stage=3, shards=gpus))
        )
        later = [(text, replace(plan, zero_stage=3, shards=gpus)) for text, plan in later]
    return steps + later


def memory_fixes(
    wl: Workload,
    device_bytes: int,
    *,
    gpu: bool,
    gpus: int = 1,
    counts: MemoryCounts | None = None,
    cuda: bool | None = None,
) -> list[MemoryFix]:
    """Cumulative fixes, stopping at the first that fits; empty when params are unknown.

    ``gpus`` > 1 (GPUs only) adds full sharding across them after the 8-bit optimizer and
    before the offload; ``cuda`` false (a GPU without CUDA) leaves out the 8-bit optimizer
    and the offload.
    """
    out: list[MemoryFix] = []
    for text, plan in fix_steps(wl, gpu=gpu, gpus=gpus, cuda=cuda, counts=counts):
        mb = breakdown(wl, plan, gpu=gpu, counts=counts)
        if mb is None or mb.total_bytes is None:
            break
        ok = decide_fit(mb, device_bytes).fits is True
        out.append(MemoryFix(fix=text, memory_bytes=mb.total_bytes, fits=ok))
        if ok:
            break
    return out
