"""Theoretical peaks, so each figure can say what fraction of the hardware it reached.

CPU peaks come from the probe (``facts.cpu.peak_gflops``: ISA FLOPs/cycle × cores × clock).
GPU peaks come from the small table below, matched by the name torch reports. Figures are
dense (no sparsity), from the vendor datasheets as collected in the project's shared
REFERENCE.md accelerator table; the device catalog carries the full entries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwadvisor.bench.devices import Target
    from hwadvisor.models.facts import Facts

SOURCE = "vendor datasheets, dense figures, as tabled in the shared REFERENCE.md (2026-11)"


@dataclass(frozen=True)
class GpuPeak:
    """Peak TFLOP/s (TOPS for int8) per dtype and memory bandwidth of one GPU model."""

    pattern: str
    name: str
    fp32: float
    tf32: float | None
    bf16: float | None
    fp16: float | None
    int8: float | None
    bandwidth_gb_s: float


#: Most specific first: "H100 PCIe" before "H100", "A100 80GB" before "A100".
GPU_PEAKS: tuple[GpuPeak, ...] = (
    GpuPeak(r"\bT4\b", "NVIDIA T4", 8.1, None, None, 65, 130, 320),
    GpuPeak(r"\bL4\b", "NVIDIA L4", 30.3, 60, 121, 121, 242, 300),
    GpuPeak(r"\bA10\b", "NVIDIA A10", 31.2, 62.5, 125, 125, 250, 600),
    GpuPeak(r"\bV100\b", "NVIDIA V100 SXM2", 15.7, None, None, 125, None, 900),
    GpuPeak(r"\bA100\b.*80\s*GB", "NVIDIA A100 80GB SXM", 19.5, 156, 312, 312, 624, 2039),
    GpuPeak(r"\bA100\b", "NVIDIA A100 40GB SXM", 19.5, 156, 312, 312, 624, 1555),
    GpuPeak(r"\bH100\b.*PCIe", "NVIDIA H100 PCIe", 51, 378, 756, 756, 1513, 2000),
    GpuPeak(r"\bH100\b", "NVIDIA H100 SXM", 67, 494.5, 989, 989, 1979, 3350),
    GpuPeak(r"\bH200\b", "NVIDIA H200 SXM", 67, 494.5, 989, 989, 1979, 4800),
    GpuPeak(r"\bL40S\b", "NVIDIA L40S", 91.6, 183, 362, 362, 733, 864),
    GpuPeak(r"RTX 3090\b", "NVIDIA RTX 3090 (fp32 accumulate)", 35.6, 35.6, 71, 71, 284, 936),
    GpuPeak(r"RTX 4090\b", "NVIDIA RTX 4090 (fp32 accumulate)", 82.6, 82.6, 165, 165, 661, 1008),
    GpuPeak(r"\bMI300X\b", "AMD MI300X", 163.4, 653.7, 1307, 1307, 2600, 5300),
)


def gpu_peak(name: str | None) -> GpuPeak | None:
    """The table entry whose pattern matches the GPU ``name``, or None."""
    if not name:
        return None
    return next((p for p in GPU_PEAKS if re.search(p.pattern, name, re.IGNORECASE)), None)


def _cpu_peak(kernel: str, dtype: str, facts: Facts | None) -> float | None:
    if facts is None or kernel not in ("matmul", "conv2d"):
        return None  # no DRAM bandwidth peak is probed
    peaks = facts.cpu.peak_gflops
    return {"fp32": peaks.fp32, "bf16": peaks.bf16, "int8": peaks.int8}.get(dtype)


def _gpu_peak(kernel: str, dtype: str, entry: GpuPeak | None) -> float | None:
    if entry is None:
        return None
    if kernel in ("copy", "triad"):
        return entry.bandwidth_gb_s
    if kernel not in ("matmul", "conv2d"):
        return None  # host<->device: the PCIe/NVLink-C2C link is not in the table
    tflops = {
        "fp32": entry.fp32,
        "tf32": entry.tf32,
        "bf16": entry.bf16,
        "fp16": entry.fp16,
        "int8": entry.int8,
    }.get(dtype)
    return tflops * 1000.0 if tflops is not None else None


def peak_for(target: Target, kernel: str, dtype: str, facts: Facts | None) -> float | None:
    """The peak for this figure in its own unit (GFLOP/s, GOP/s, GB/s), or None if unknown."""
    if target.kind == "cpu":
        return _cpu_peak(kernel, dtype, facts)
    return _gpu_peak(kernel, dtype, gpu_peak(target.name))
