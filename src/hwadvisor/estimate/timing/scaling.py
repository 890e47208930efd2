"""Data-parallel scaling over N GPUs: gradient all-reduce over the interconnect.

A ring all-reduce moves 2·(N-1)/N of the gradient bytes over each link per step; about
half of it hides behind the backward pass (buckets are reduced as they are ready). What
does not hide lengthens the step. With NVLink and a ResNet-50-sized gradient this gives
~95-99% at 4 GPUs, near-linear as the documents report (GUIDANCE R2); PCIe links and
large models lose more.
"""

from __future__ import annotations

import math

from hwadvisor.estimate.timing.device import DeviceModel
from hwadvisor.models.workload import Precision, Task, Workload

#: Share of the link rate a ring all-reduce reaches (NCCL bus bandwidth vs wire rate).
LINK_EFFICIENCY = 0.8
#: Share of the all-reduce that overlaps the backward pass.
OVERLAP = 0.5
#: Fixed synchronisation cost per step and GPU beyond the first (launch, barrier).
SYNC_S = 50e-6
#: Links without a figure (Ethernet between CPU servers): 100 Gb/s = 12.5 GB/s assumed.
FALLBACK_LINK_GB_S = 12.5
#: GPUs of one node (an HGX board of 8): past them a ring crosses the network between
#: nodes, at the catalog's per-GPU figure of the vendor's reference node (DGX: 200-400
#: Gb/s per GPU) or, without one, FALLBACK_LINK_GB_S.
NODE_GPUS = 8
#: Bytes moved per step relative to DDP's all-reduce of the gradients: ZeRO-1 and -2 the
#: same, ZeRO-3 / FSDP 1.5x (its parameters are all-gathered in the forward and the
#: backward as well; Rajbhandari et al. 2020, arXiv:1910.02054, section 7).
ZERO3_VOLUME = 1.5


def total_time(wl: Workload, step: float | None, per_step: int) -> float | None:
    """Seconds of the whole job: its data set (``epochs`` passes when training) at
    ``per_step`` samples a step; None without a step time or a data set size."""
    if step is None or wl.dataset_size is None:
        return None
    passes = wl.epochs if wl.task in (Task.TRAIN, Task.FINETUNE) else 1.0
    return math.ceil(wl.dataset_size * passes / per_step) * step


def efficiency(
    wl: Workload, rates: DeviceModel, step_s: float, gpus: int, *, volume: float = 1.0
) -> tuple[float, str]:
    """Fraction of linear speed-up kept at ``gpus`` devices, and how it was found;
    ``volume``: the strategy's bytes per step over DDP's (:data:`ZERO3_VOLUME`)."""
    if gpus <= 1:
        return 1.0, ""
    if wl.params is None:
        return 0.9, f"{gpus} GPUs: parameters unknown, 90% scaling assumed"
    grad_bytes = wl.params * (2 if wl.precision in (Precision.BF16, Precision.FP16) else 4)
    link = rates.links.link_gb_s or FALLBACK_LINK_GB_S
    kind = rates.links.link_kind or "an unknown link"
    if gpus > NODE_GPUS:
        net = rates.links.network_gb_s or FALLBACK_LINK_GB_S
        where = rates.links.network_source or f"{FALLBACK_LINK_GB_S:g} GB/s assumed"
        if net < link:
            link, kind = net, f"the network between nodes of {NODE_GPUS} ({where})"
    comm = volume * 2.0 * (gpus - 1) / gpus * grad_bytes / (link * 1e9 * LINK_EFFICIENCY)
    backward = step_s * 2.0 / 3.0
    exposed = max(comm - OVERLAP * backward, 0.0) + SYNC_S * (gpus - 1)
    eff = step_s / (step_s + exposed)
    text = (
        f"{gpus} GPUs data parallel over {kind} ({link:g} GB/s per direction): "
        f"{'sharded ' if volume != 1.0 else ''}all-reduce {comm * 1e3:.1f} ms per step, "
        f"{eff:.0%} scaling efficiency"
    )
    return eff, text
