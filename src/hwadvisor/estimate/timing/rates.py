"""What a device can do, as the time model needs it: rates by operator class and size.

Three sources, each stated in the estimate's assumptions:

- ``here`` with bench figures, or without them (:mod:`hwadvisor.estimate.timing.cpu`);
- a catalog device: its dtype peak times the catalog's achieved fraction (below).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.catalog.schema import DeviceEntry, DeviceKind
from hwadvisor.estimate.timing.cpu_catalog import catalog_levels, sustained_scale
from hwadvisor.estimate.timing.gpu import PLAIN_FAMILY, Roofline, op_host_s, roofline, tf32_text
from hwadvisor.estimate.timing.levels import MemoryLevels, log_interp, without_call
from hwadvisor.models.workload import Precision

#: Per-operator cost of eager PyTorch on a CPU when the bench did not measure it (its
#: ``dispatch`` figure): ~7 µs per Python-level operator with autograd recording, as
#: measured in pytorch/pytorch issue #41383 (2020), rounded up for module call overhead.
CPU_OP_OVERHEAD_S = 10e-6
#: A catalog GPU's ``op_overhead_s``: a plain eager operator's launch inside a model, from
#: ``gpu_time.op_host_s``; a GPU step's host cost is ``gpu_time.eager_host_s``, per
#: operator group, whichever path prices the step (constants: catalog/data/gpu_time.yaml).
GPU_OP_OVERHEAD_S = op_host_s(PLAIN_FAMILY, backward=False, train=False)
#: Workload classes with an achieved fraction in the catalog (a missing
#: ``transformer_infer`` falls back to the device's ``inference`` fraction).
CLASSES = ("gemm", "cnn_train", "transformer_train", "inference", "transformer_infer")
#: Product sizes a catalog device's matmul curve is given at.
GEMM_SIZES = (64.0, 128.0, 256.0, 512.0, 1024.0, 2048.0, 4096.0, 8192.0, 16384.0)
#: A catalog CPU's convolutions run at its matmul curve's rate at this size: the effective
#: size of the bench's conv2d ([8, 64, 56, 56] -> 64, 3x3: M = 8 x 56 x 56, N = 64,
#: K = 576), as "here" takes the measured conv2d figure for every convolution.
CONV_SIZE = (8 * 56 * 56 * 64 * 576) ** (1.0 / 3.0)
#: Below the smallest measured matmul, the rate is taken as flat down to this size.
FLAT_DOWN_TO = 64.0
#: The least share of a measured square's time taken as its kernel's, the rest its call.
MIN_KERNEL_SHARE = 0.5


@dataclass
class Rates:
    """Rates of one device at one precision; FLOP/s and bytes/s."""

    device: str
    name: str | None
    gemm_points: list[tuple[float, float]]  # (size, FLOP/s), ascending size
    conv: float | None
    bandwidth: float | None
    op_overhead_s: float
    class_rate: dict[str, float] = field(default_factory=dict)  # catalog: peak x class fraction
    gpu: bool = False
    memory_bytes: int | None = None
    link_gb_s: float | None = None
    link_kind: str | None = None
    #: The network between nodes per GPU (GB/s) and its source (multi-node scaling).
    network_gb_s: float | None = None
    network_source: str | None = None
    assumptions: list[str] = field(default_factory=list)
    basis: str = ""

    conv_size: float | None = None  # effective size of the measured convolution
    #: The measured convolution backward's rate and the effective size it was measured at
    #: (None: the backward at the forward's rate).
    conv_backward: float | None = None
    conv_backward_size: float | None = None
    #: Memory-bound operators by family and working set (the bench's memory sweep).
    levels: MemoryLevels | None = None
    #: A catalog GPU's roofs for counted models (``estimate.gpu_time``).
    roofline: Roofline | None = None
    #: CPU threads the job runs with: the bench's for "here" (else the usable cores), a
    #: catalog CPU's cores; it decides PyTorch's convolution path (``timing``).
    threads: int | None = None
    #: (rows, FLOP/s) of the bench's ``matmul_rows`` figures: products of few rows by a
    #: square weight, ascending rows (empty: not measured).
    rows_points: list[tuple[float, float]] = field(default_factory=list)
    #: (rows, factor): what a product of few rows runs at with its weight from DRAM, as a
    #: share of its rate with the weight in cache; the bench's ``matmul_rows_cold``
    #: figures over its ``matmul_rows`` ones (``here._cold_factors``), what a model whose
    #: weights are larger than :attr:`cache_bytes` runs such products at (empty: not
    #: measured).
    cold_factors: list[tuple[float, float]] = field(default_factory=list)
    #: (seconds a call, seconds a weight element, least elements) of a one-row product
    #: with its weight from DRAM, from the bench's one-row ``matmul_rows_cold`` figures by
    #: two weight widths, for weights at least the narrower one (``here._cold_row_line``);
    #: None: priced by :attr:`cold_factors` alone.
    cold_row_line: tuple[float, float, float] | None = None
    #: The last-level cache the job's threads reach (``bench.sweep.reachable_l3``; None:
    #: not known).
    cache_bytes: float | None = None
    #: (size, FLOP/s) of square products at ONE thread (the bench's one-thread
    #: ``matmul_small`` figures), where the job runs on more (empty: not measured).
    single_points: list[tuple[float, float]] = field(default_factory=list)
    #: Measured backward rate of stride-2 convolutions over the unstrided price of the
    #: same shape, by kernel side (1: 1x1, 3: 3x3); the bench's ``conv2d_backward_strided``
    #: figures (empty: not measured, priced as unstrided).
    strided_backward: dict[int, float] = field(default_factory=dict)
    #: Measured rate of NCHW convolutions over the price of the same shape at the
    #: channels-last figure, reorders taken out: (channels, factor) ascending, forward
    #: (False) and backward (True); the bench's ``conv2d_nchw`` figures (empty: not
    #: measured, NCHW priced as channels-last plus its reorders).
    nchw: dict[bool, list[tuple[float, float]]] = field(default_factory=dict)

    def nchw_factor(self, channels: float, *, backward: bool = False) -> float:
        """What an NCHW convolution of ``channels`` runs at, as a share of its
        channels-last price: the measured factors read log-linearly by channels, held
        at the ends (1.0 where none was measured)."""
        pts = self.nchw.get(backward) or []
        if not pts:
            return 1.0
        return log_interp(pts, channels)

    def product(
        self, size: float, rows: float | None = None, work: float | None = None, *,
        cold: bool = False,
    ) -> float | None:  # fmt: skip
        """FLOP/s of products of effective size ``size``. Products with fewer rows (their
        smaller output side) than the bench's rows figures reach are priced by those
        figures instead: the lower of the rows curve at ``rows`` and the square curve at
        ``work``, the side of the square of the same work. ``cold``: their weights come
        from DRAM (a model past the cache): a product priced by the rows curve is priced
        at that times the measured cold factor at ``rows`` (:attr:`cold_factors`); one
        row by a weight at least the bench's narrower one, where it measured two widths, at
        a call's fixed cost plus its weight streamed (:attr:`cold_row_line`), never faster
        than in cache.

        The harmonic-mean size prices a product of few rows as a small square, whose time
        is per-call cost. A 16-row product by a 1,024-wide weight does the work of a
        256-wide square, and what limits it is its rows: the weight is streamed and packed
        for few rows each call. The bench measures exactly that (docs/estimates.md
        section 3). From the top measured rows on, the harmonic-mean rule holds.
        """
        hot = self._hot_product(size, rows, work)
        if not cold or hot is None or rows is None or not self.cold_factors:
            return hot
        if not self.rows_points or rows >= self.rows_points[-1][0]:
            return hot
        # One row: the call's fixed cost and the other operand (work³ / rows elements:
        # the weight where the one row is the batch's) streamed, two FLOPs an element, as
        # the bench's two widths measured them.
        elements = work**3 / rows if work and 0 < rows <= 1 else 0.0
        if self.cold_row_line and elements >= self.cold_row_line[2] > 0:
            fixed, per_element, _ = self.cold_row_line
            return min(hot, 2.0 * elements / (fixed + elements * per_element))
        return hot * log_interp(self.cold_factors, rows)

    def _hot_product(self, size: float, rows: float | None, work: float | None) -> float | None:
        """:meth:`product` with the weight in cache."""
        if rows is None or work is None or not self.rows_points:
            return self.gemm(size)
        if rows >= self.rows_points[-1][0]:
            return self.gemm(size)
        square = self.gemm(work)
        return None if square is None else min(square, log_interp(self.rows_points, rows))

    def conv_at(self, size: float, *, backward: bool = False) -> float | None:
        """Convolution FLOP/s at ``size``: the measured conv rate (``backward``: the
        measured backward's, where there is one), lowered along the matmul curve (one
        thread's, where measured: :attr:`single_points`; each square's per-call cost
        taken out, :meth:`without_calls`) for a product smaller (skinnier) than the
        measured convolution's.

        Never raised above the measured rate: the square products' curve climbs past the
        measured convolution's effective size (172 for the bench's 64-channel 3x3) because
        a small square's per-call and threading costs amortise, and the measured
        convolution, 3.7 GFLOP a call, has already amortised its own (at two threads this
        climb was 16%, and the step's convolutions ran 25% under the measured rate).
        """
        rate, measured_at = self.conv, self.conv_size
        if backward and self.conv_backward:
            rate, measured_at = self.conv_backward, self.conv_backward_size
        if rate is None:
            return None
        # The lowering is a small product's loss of reuse. On several threads the curve
        # also carries the cost of splitting a small product's little work between them,
        # which a convolution of few channels over many positions does not pay: the curve
        # of one thread, where measured, gives the loss alone.
        pts = self.single_points if len(self.single_points) >= 2 else self.gemm_points
        pts = self.without_calls(pts)
        ref = curve_at(pts, measured_at) if measured_at else None
        at = curve_at(pts, size)
        if ref is None or at is None or ref <= 0:
            return rate
        return rate * min(1.0, at / ref)

    def without_calls(self, pts: list[tuple[float, float]]) -> list[tuple[float, float]]:
        """Square products' (size, FLOP/s) with each one's per-call cost taken out.

        A measured square's time includes what eager PyTorch pays to call it (the bench's
        ``dispatch`` figure); a 64-wide square at one thread is 2 x 64³ FLOPs in about
        15 us, of which 3-5 us is that call. The step pays it once per operator anyway
        (the ``overhead`` part), and a convolution is one call over all its positions:
        its loss of reuse is the kernel's, not the call's. The call is never taken as more
        than half a square's time (:data:`MIN_KERNEL_SHARE`). Without a measured
        dispatch figure the points are left as they are (the assumed per-operator cost is
        no measurement of this machine's calls).
        """
        call = self.levels.dispatch_s if self.levels is not None else None
        if not call:
            return list(pts)
        return [
            (size, 2.0 * size**3 / without_call(2.0 * size**3 / rate, call, MIN_KERNEL_SHARE))
            for size, rate in pts
        ]

    def gemm(self, size: float) -> float | None:
        """Matmul FLOP/s at ``size`` (cube root of M·N·K), interpolated in log size
        (:func:`curve_at`)."""
        return curve_at(self.gemm_points, size)


def curve_at(pts: list[tuple[float, float]], size: float) -> float | None:
    """A matmul curve's FLOP/s at ``size``, interpolated in log size (None: no points).

    Below the smallest measured size the rate falls in proportion to the size: small
    products are limited by loads and per-call costs, not by the FMA units.
    """
    if not pts:
        return None
    if size <= pts[0][0]:
        # Flat down to FLAT_DOWN_TO (one-thread rates here were flat from 1024 to 64),
        # then in proportion to the size.
        knee = min(pts[0][0], FLAT_DOWN_TO)
        return pts[0][1] * max(min(1.0, size / knee), 0.02)
    return log_interp(pts, size)


def _peak_for(
    entry: DeviceEntry, precision: Precision, notes: list[str]
) -> tuple[float | None, bool]:
    """The peak TFLOP/s used at ``precision`` and whether it is a 16-bit/int8 matrix-unit peak."""
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
        if value is not None:
            notes.append(f"{entry.id}: no {want}: {other} mixed precision assumed")
        else:
            notes.append(f"{entry.id}: no native 16-bit matrix rate: the fp32 rate is used")
            return p.fp32, False
    return value, True


def _curve_rate(pts: list[tuple[float, float]], size: float) -> float:
    """The rate of a catalog curve at ``size`` (:func:`curve_at`)."""
    rate = curve_at(pts, size)
    return rate if rate is not None else pts[-1][1]


def _class_fractions(
    entry: DeviceEntry, precision: Precision, peak: float, tensor: bool, notes: list[str]
) -> dict[str, float]:
    """The achieved fraction of the peak for each class (GPU class rates; a CPU's ``gemm``)."""
    a = entry.achieved
    gpu = entry.kind is not DeviceKind.CPU
    if gpu and not tensor:
        # Without tensor cores every class runs on the FMA units at about the fp32 fraction.
        fracs = dict.fromkeys(CLASSES, a.fp32)
        notes.append(
            f"{entry.id}: fp32 without tensor cores: {a.fp32:.0%} of the fp32 peak for products"
        )
        if precision is Precision.FP32 and entry.peaks_tflops.tf32:
            # PyTorch lets cuDNN use TF32 for convolutions by default (allow_tf32), not matmuls.
            tf32 = entry.peaks_tflops.tf32 / peak
            fracs["cnn_train"] = a.cnn_train * tf32
            fracs["inference"] = max(a.inference * tf32, a.fp32)
            notes.append(f"{entry.id}: fp32 convolutions run as TF32 (cuDNN default in PyTorch)")
        return fracs
    scale = (a.tensor_gemm / a.gemm) if (tensor and a.tensor_gemm and not gpu) else 1.0
    return {k: (getattr(a, k) or a.inference) * scale for k in CLASSES}


def catalog_rates(entry: DeviceEntry, precision: Precision) -> Rates:
    """Rates of a catalog device: dtype peak × the achieved fraction of each class."""
    notes: list[str] = []
    peak, tensor = _peak_for(entry, precision, notes)
    gpu = entry.kind is not DeviceKind.CPU
    if peak is None:
        return Rates(
            entry.id,
            entry.name,
            [],
            None,
            None,
            GPU_OP_OVERHEAD_S,
            gpu=gpu,
            assumptions=[f"{entry.id}: no peak for {precision.value}: time unknown"],
            basis="unknown",
        )
    flops = peak * 1e12
    if not gpu:
        scale, clock = sustained_scale(entry)
        flops *= scale
        notes.extend([clock] if clock else [])
    fracs = _class_fractions(entry, precision, peak, tensor, notes)
    class_rate = {k: flops * v for k, v in fracs.items()}
    # Products below ~1k wide reach a smaller share of a big device's peak. A CPU splits a
    # product over its cores: each core's block is the product over the core count, so
    # the size that sets a core's rate is the effective size over its cube root.
    half = 256.0 if gpu else 64.0
    split = 1.0 if gpu else float(max(1, entry.cores or 1)) ** (1.0 / 3.0)
    pts = [
        (s, class_rate["gemm"] * (s / split) ** 2 / ((s / split) ** 2 + half * half))
        for s in GEMM_SIZES
    ]
    roof = roofline(entry, precision, peak, tensor) if gpu else None
    bandwidth = entry.streaming_bytes_s
    levels, overhead = None, GPU_OP_OVERHEAD_S
    if not gpu:
        # Priced per operator (estimate.cpu_catalog): convolutions at the GEMM fraction,
        # memory-bound operators at a recorded core's rates over the share's cores.
        levels, note = catalog_levels(entry, bandwidth)
        notes.append(note)
        overhead = (levels.dispatch_s if levels else None) or CPU_OP_OVERHEAD_S
    return Rates(
        entry.id,
        entry.name,
        pts,
        class_rate["cnn_train"] if gpu else _curve_rate(pts, CONV_SIZE),
        bandwidth,
        overhead,
        levels=levels,
        roofline=roof,
        class_rate=class_rate,
        gpu=gpu,
        threads=None if gpu else entry.cores,
        memory_bytes=entry.memory_bytes,
        link_gb_s=entry.interconnect.gb_s_per_direction,
        link_kind=entry.interconnect.kind,
        network_gb_s=entry.interconnect.network_gb_s_per_gpu,
        network_source=entry.interconnect.network_source,
        assumptions=notes,
        basis=f"catalog peak {peak:g} TFLOP/s{tf32_text(roof)} x achieved fraction ({entry.source})",
    )
