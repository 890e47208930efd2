"""Data-parallel scaling over N GPUs: gradient all-reduce over the interconnect.

A ring all-reduce moves 2·(N-1)/N of the gradient bytes over each link per step; about
half of it hides behind the backward pass (buckets are reduced as they are ready). What
does not hide lengthens the step. With NVLink and a ResNet-50-sized gradient this gives
~95-99% at 4 GPUs, near-linear as the documents report (GUIDANCE R2); PCIe links and
large models lose more.
"""

from __future__ import annotations

from hwadvisor.estimate.rates import Rates
from hwadvisor.models.workload import Precision, Workload

#: Share of the link rate a ring all-reduce reaches (NCCL bus bandwidth vs wire rate).
LINK_EFFICIENCY = 0.8
#: Share of the all-reduce that overlaps the backward pass.
OVERLAP = 0.5
#: Fixed synchronisation cost per step and GPU beyond the first (launch, barrier).
SYNC_S = 50e-6
#: Links without a figure (Ethernet between CPU servers): 100 Gb/s = 12.5 GB/s assumed.
FALLBACK_LINK_GB_S = 12.5


def efficiency(wl: Workload, rates: Rates, step_s: float, gpus: int) -> tuple[float, str]:
    """Fraction of linear speed-up kept at ``gpus`` devices, and how it was found."""
    if gpus <= 1:
        return 1.0, ""
    if wl.params is None:
        return 0.9, f"{gpus} GPUs: parameters unknown, 90% scaling assumed"
    grad_bytes = wl.params * (2 if wl.precision in (Precision.BF16, Precision.FP16) else 4)
    link = rates.link_gb_s or FALLBACK_LINK_GB_S
    comm = 2.0 * (gpus - 1) / gpus * grad_bytes / (link * 1e9 * LINK_EFFICIENCY)
    backward = step_s * 2.0 / 3.0
    exposed = max(comm - OVERLAP * backward, 0.0) + SYNC_S * (gpus - 1)
    eff = step_s / (step_s + exposed)
    text = (
        f"{gpus} GPUs data parallel over {rates.link_kind or 'an unknown link'} "
        f"({link:g} GB/s per direction): all-reduce {comm * 1e3:.1f} ms per step, "
        f"{eff:.0%} scaling efficiency"
    )
    return eff, text
