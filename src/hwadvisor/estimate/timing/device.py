"""One device as the time model takes it: rates by operator class, and where they came from.

Every device the estimator prices, whatever its kind, is one frozen :class:`DeviceModel`:

- this machine's CPU, from the bench's figures or its theoretical peak
  (:func:`hwadvisor.estimate.timing.cpu.here_model`);
- a catalog CPU, from its datasheet (:func:`hwadvisor.estimate.timing.cpu.catalog_cpu_model`);
- a catalog GPU, its peaks times the achieved fractions of the catalog
  (:func:`hwadvisor.estimate.timing.gpu.catalog_gpu_model`).

:func:`hwadvisor.estimate.timing.catalog.device_model` picks the one for a catalog
entry. The step model
(:mod:`hwadvisor.estimate.timing.step`) reads the same fields of all three.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.models.workload import Precision

#: Below the smallest measured (or catalog) product size the rate is flat down to this
#: size, then falls in proportion to the size: small products are limited by loads and
#: per-call costs, not by the FMA units.
FLAT_DOWN_TO = 64.0
#: The least share of the smallest point's rate a tiny product is priced at.
FLOOR_SHARE = 0.02


@dataclass(frozen=True)
class Roofline:
    """A GPU's roofs for one job: products (FLOP/s, bytes per element) and bandwidth."""

    conv_flops_s: float
    gemm_flops_s: float
    conv_elem_bytes: float
    gemm_elem_bytes: float
    bandwidth: float  # bytes/s reached by streaming
    conv_tensor_cores: bool = False  # convolutions on tensor cores (fp16/bf16/int8, TF32)

    def rate(self, size: float, conv: bool) -> float:
        """FLOP/s of a product of effective size ``size``: min(compute roof, memory roof)."""
        roof = self.conv_flops_s if conv else self.gemm_flops_s
        b = self.conv_elem_bytes if conv else self.gemm_elem_bytes
        intensity = 2.0 * max(size, 1.0) / (3.0 * b)
        return min(roof, intensity * self.bandwidth)


@dataclass(frozen=True)
class Links:
    """How a device's GPUs talk: within a node and, past it, between nodes (GB/s per
    direction per GPU; None: not known), and the PCIe generation to the host."""

    link_gb_s: float | None = None
    link_kind: str | None = None
    network_gb_s: float | None = None
    network_source: str | None = None
    host_kind: str | None = None


@dataclass(frozen=True)
class DeviceModel:
    """What one device does per second at one precision; FLOP/s and bytes/s.

    ``gemm_points`` is the matrix-product rate by effective size (the cube root of
    M·N·K), ascending; ``conv`` and ``conv_backward`` the convolution rates (None: priced
    as products); ``bandwidth`` what memory-bound operators stream at; ``op_overhead_s``
    the host's cost of one eager operator. ``class_rate`` (catalog GPUs) is the peak times
    the published end-to-end fraction of each workload class; ``roofline`` prices a counted
    model per operator on a GPU.
    """

    device: str
    name: str | None
    gemm_points: tuple[tuple[float, float], ...]
    conv: float | None
    conv_backward: float | None
    bandwidth: float | None
    op_overhead_s: float
    gpu: bool = False
    #: The effective size of the product behind the measured (or assumed) convolution rate.
    conv_size: float | None = None
    #: Memory-bound operators at their per-element cost weights: the bandwidth is a triad's
    #: on this machine's cores, the measure the weights are relative to (a catalog CPU's
    #: datasheet bandwidth is not, and streams the counted bytes).
    cost_weighted: bool = False
    memory_bytes: int | None = None
    threads: int | None = None
    class_rate: dict[str, float] = field(default_factory=dict)
    roofline: Roofline | None = None
    links: Links = field(default_factory=Links)
    assumptions: tuple[str, ...] = ()
    basis: str = ""

    @property
    def known(self) -> bool:
        """Whether the device prices anything at all."""
        return bool(self.gemm_points or self.class_rate)

    def gemm(self, size: float) -> float | None:
        """Matrix-product FLOP/s at effective ``size`` (:func:`curve_at`)."""
        return curve_at(self.gemm_points, size)

    def conv_rate(self, *, backward: bool = False) -> float | None:
        """Convolution FLOP/s (the backward's where known, else the forward's)."""
        if backward and self.conv_backward:
            return self.conv_backward
        return self.conv

    def noted(self, *notes: str) -> DeviceModel:
        """The same model with ``notes`` added to its assumptions."""
        return replace(self, assumptions=(*self.assumptions, *notes))


def curve_at(
    pts: tuple[tuple[float, float], ...] | list[tuple[float, float]], size: float
) -> float | None:
    """A product curve's FLOP/s at ``size``, interpolated in log size (None: no points).

    Above the largest point the rate holds; below the smallest it is flat down to
    :data:`FLAT_DOWN_TO`, then falls in proportion to the size.
    """
    if not pts:
        return None
    if size <= pts[0][0]:
        knee = min(pts[0][0], FLAT_DOWN_TO)
        return pts[0][1] * max(min(1.0, size / knee), FLOOR_SHARE)
    return log_interp(list(pts), size)


def log_interp(pts: list[tuple[float, float]], x: float) -> float:
    """``y`` at ``x`` on the polyline ``pts`` (ascending ``x``), linear in log ``x``,
    held at the ends."""
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x <= x1:
            t = math.log(x / x0) / math.log(x1 / x0) if x1 > x0 else 1.0
            return y0 + t * (y1 - y0)
    return pts[-1][1]


def catalog_peak(
    entry: DeviceEntry, precision: Precision, notes: list[str]
) -> tuple[float | None, bool]:
    """A catalog entry's peak TFLOP/s at ``precision``, and whether it is a 16-bit or int8
    matrix-unit peak (tensor cores, AMX); a missing peak falls back to fp32, said in ``notes``."""
    from hwadvisor.models.workload import Precision

    p = entry.peaks_tflops
    if precision is Precision.FP32:
        return p.fp32, False
    if precision is Precision.INT8:
        if p.int8 is None:
            notes.append(f"{entry.id}: no int8 peak: the fp32 rate is used")
            return p.fp32, False
        return p.int8, True
    want = "fp16" if precision is Precision.FP16 else "bf16"
    value = getattr(p, want)
    if value is None:
        other = "fp16" if want == "bf16" else "bf16"
        value = getattr(p, other)
        if value is None:
            notes.append(f"{entry.id}: no native 16-bit matrix rate: the fp32 rate is used")
            return p.fp32, False
        notes.append(f"{entry.id}: no {want}: {other} mixed precision assumed")
    return value, True


def size_curve(rate: float, half: float, split: float = 1.0) -> tuple[tuple[float, float], ...]:
    """A catalog device's product curve: ``rate`` (its large-product rate) reached as the
    size grows, half of it at ``half`` (a product of size s keeps s² / (s² + half²) of the
    rate); ``split``: the size that sets one core's share is the size over it."""
    return tuple(
        (s, rate * (s / split) ** 2 / ((s / split) ** 2 + half * half)) for s in CURVE_SIZES
    )


#: Product sizes a catalog device's curve is given at.
CURVE_SIZES = (64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0)
