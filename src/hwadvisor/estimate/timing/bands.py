"""Error bands: how far each class of time estimate was from measurement, and how to check.

The bands are data (``catalog/data/error_bands.yaml``): for each class of estimate (this
CPU measured here, this CPU without a bench, a catalog GPU, a host-bound GPU step, several
GPUs, LLM decode, ...) the lowest and highest ratio of measured to estimated time that the
project's own validation run found, the run it comes from, and the command that checks an
estimate on the user's machine. A class no run covers takes the widest validated band and says so.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources
from typing import Any

from hwadvisor.estimate.timing.device import DeviceModel
from hwadvisor.io import load_yaml
from hwadvisor.models.band import HERE_CLASSES, TimeBand
from hwadvisor.models.estimate import DeviceEstimate


@dataclass(frozen=True)
class BandSpec:
    """One class's ratios (measured / estimated time) and where they come from."""

    name: str
    low_ratio: float
    high_ratio: float
    validated: bool
    basis: str
    check: str


@functools.cache
def load_bands() -> dict[str, BandSpec]:
    """Every class of ``error_bands.yaml``; unvalidated ones get the widest validated band."""
    text = resources.files("hwadvisor.catalog").joinpath("data").joinpath("error_bands.yaml")
    raw: dict[str, Any] = load_yaml(text.read_text(encoding="utf-8"))["classes"]
    known = [v for v in raw.values() if v.get("validated", True)]
    low = min(float(v["low_ratio"]) for v in known)
    high = max(float(v["high_ratio"]) for v in known)
    out = {}
    for name, v in raw.items():
        ok = bool(v.get("validated", True))
        out[name] = BandSpec(
            name=name,
            low_ratio=float(v["low_ratio"]) if ok else low,
            high_ratio=float(v["high_ratio"]) if ok else high,
            validated=ok,
            basis=str(v["basis"]) + ("" if ok else "; the widest validated band is used"),
            check=str(v["check"]),
        )
    return out


def band_class(rates: DeviceModel, gpus: int, parts: dict[str, float]) -> str:
    """The validation class of an estimate made with ``rates`` on ``gpus`` devices."""
    if rates.device == "here":
        # Measured here: its bench; else the theoretical peak and stated bandwidth.
        return HERE_CLASSES[0] if rates.basis.startswith("measured") else HERE_CLASSES[1]
    if not rates.gpu:
        return "catalog_cpu"
    if gpus > 1:
        return "multi_gpu"
    return "catalog_gpu_host_bound" if parts.get("overhead", 0.0) > 0 else "catalog_gpu"


def band(value: float | None, name: str, *, inverse: bool = False) -> TimeBand | None:
    """The band of ``value`` (a time; ``inverse`` for a throughput) for class ``name``."""
    spec = load_bands().get(name)
    if value is None or spec is None:
        return None
    lo, hi = min(spec.low_ratio, 1.0), max(spec.high_ratio, 1.0)
    low, high = (value / hi, value / lo) if inverse else (value * lo, value * hi)
    return TimeBand(
        low=low,
        high=high,
        band_class=name,
        validated=spec.validated,
        basis=spec.basis,
        check=spec.check,
    )


def with_bands(est: DeviceEstimate, name: str) -> DeviceEstimate:
    """``est`` with the bands of class ``name`` on its step, total and throughput."""
    if est.measured:
        return est
    return est.model_copy(
        update={
            "time_band_s": band(est.step_time_s, name),
            "total_time_band_s": band(est.total_time_s, name),
            "throughput_band": band(est.throughput_samples_s, name, inverse=True),
        }
    )
