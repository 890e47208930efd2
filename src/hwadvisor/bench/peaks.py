"""Theoretical peaks, so each figure can say what fraction of the hardware it reached.

CPU peaks come from the probe (``facts.cpu.peak_gflops``: ISA FLOPs/cycle × cores × clock).
GPU peaks come from the device catalog (``catalog/data/devices.yaml``: dense figures from
the vendor datasheets, each entry with its source), matched by the name torch reports.
"""

from __future__ import annotations

from hwadvisor.bench.devices import Target
from hwadvisor.catalog import load_devices
from hwadvisor.catalog.match import match_gpu
from hwadvisor.catalog.schema import DeviceEntry
from hwadvisor.models.facts import Facts

#: The dtypes a figure can be measured in (a peak's other fields are not rates of them).
_DTYPES = frozenset({"fp32", "tf32", "bf16", "fp16", "int8"})


def gpu_peak(name: str | None) -> DeviceEntry | None:
    """The device catalog's entry for the GPU torch calls ``name``, or None."""
    ident = match_gpu(name)
    return load_devices()[ident] if ident else None


def _gpu_peak(kernel: str, dtype: str, entry: DeviceEntry | None) -> float | None:
    if entry is None:
        return None
    if kernel in ("copy", "triad"):
        return entry.bandwidth_gb_s
    if kernel not in ("matmul", "conv2d"):
        return None  # host<->device: the PCIe/NVLink-C2C link is not in the table
    tflops = getattr(entry.peaks_tflops, dtype, None) if dtype in _DTYPES else None
    return tflops * 1000.0 if tflops is not None else None


def peak_for(target: Target, kernel: str, dtype: str, facts: Facts | None) -> float | None:
    """The peak for this figure in its own unit (GFLOP/s, GOP/s, GB/s), or None if unknown."""
    if target.kind != "cpu":
        return _gpu_peak(kernel, dtype, gpu_peak(target.name))
    if facts is None or kernel not in ("matmul", "conv2d") or dtype not in _DTYPES:
        return None  # no bandwidth peak is probed
    return getattr(facts.cpu.peak_gflops, dtype, None)
