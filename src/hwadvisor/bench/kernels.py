"""The kernels measured on each device, their size ladders, and the work each call does.

Work is counted honestly: a matmul of (M,K)x(K,N) is 2·M·N·K FLOPs (ops for int8); a
3×3 convolution is 2·N·C_out·H·W·C_in·9; a copy moves 2× the buffer (read + write) and
a triad ``a = b + s·c`` moves 3× (two reads, one write); write-allocate traffic is not
counted, so the figures are what a program gets, not what the wires carry.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from hwadvisor.bench.case import KernelCase
from hwadvisor.bench.devices import Target
from hwadvisor.bench.sizing import Shape
from hwadvisor.bench.sweep import reachable_l3, sweep_cases

if TYPE_CHECKING:
    from hwadvisor.models.facts import Facts

MIB = 1024 * 1024
#: Bytes an element of each report dtype takes (tf32 is fp32 with TF32 math allowed).
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "bf16": 2, "fp16": 2, "int8": 1}
#: Square matmul sizes, smallest first; the CPU stops lower (a 4096³ fp32 call is ~1 s).
CPU_MATMUL = (128, 256, 512, 1024, 2048, 4096)
GPU_MATMUL = (256, 512, 1024, 2048, 4096, 8192, 16384)
#: Products of few rows by a ROWS_WIDTH-square weight (the CPU's ``matmul_rows`` figures):
#: a batch's rows against a layer's weight, where the square curve does not say the rate.
CPU_ROWS = (1, 4, 16, 64)
ROWS_WIDTH = 1024
#: The same products with another weight each call (the CPU's ``matmul_rows_cold``
#: figures), from a pool of distinct weights this many times the last-level cache the
#: threads reach: a model whose weights do not fit that cache reads each layer's weight
#: from DRAM at every forward pass, and a product of few rows does too little work per
#: weight byte to hide it (the roofline model: Williams, Waterman and Patterson,
#: "Roofline", CACM 52(4), 2009). On an Ice Lake Xeon guest at two threads a one-row
#: product by a 4096-square weight streamed it at 20.6 GB/s, a third of its hot rate.
COLD_POOL_FACTOR = 2
#: ... and at most this share of free memory.
COLD_POOL_FREE_SHARE = 8
#: One cold product more, one row by a wider weight (64 MiB in fp32): with the
#: 1024-square one, two points of what a one-row product from DRAM costs, a fixed cost
#: per call and its weight at a streaming rate (estimate.here._cold_row_line). On a Zen 3
#: EPYC guest at two threads a one-row product streamed a 4 MiB weight at 18-21 GB/s and
#: 16-64 MiB ones at 23-25: about 38 µs a call plus 25 GB/s.
COLD_WIDE_WIDTH = 4096
#: Square products below the matmul floor (the CPU's ``matmul_small`` figures): what a
#: small layer's product runs at, per-call costs included, one size each.
CPU_SMALL = (64, 128, 256)
#: Their least allotment: calls of 7 µs to 0.2 ms, which a few 10 ms blocks settle.
SMALL_MIN_ALLOT_S = 0.06
#: ResNet-like 3×3 layer at 56×56, channels-last: (batch, channels) grow together.
CONV_STEPS = ((1, 64), (4, 64), (8, 128), (16, 128), (16, 256), (32, 256), (64, 256))
CONV_HW = 56
#: GPU last-level caches are at most ~100 MiB today; 1 GiB buffers stream from HBM.
GPU_STREAM_BYTES = 1024 * MIB
HOST_COPY_BYTES = 256 * MIB


def torch_dtype(torch: Any, name: str) -> Any:
    """The torch dtype behind a report dtype name (tf32 is fp32 with TF32 math allowed)."""
    return {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "int8": torch.int8,
    }[name]


def matmul_work(shape: Shape) -> float:
    """2·M·N·K for a (M,K)x(K,N) product."""
    m, n, k = shape
    return 2.0 * m * n * k


def conv_work(shape: Shape) -> float:
    """2·N·C_out·H·W·C_in·9 for a 3×3, stride-1, padded convolution with C_in = C_out."""
    n, c, h, w = shape
    return 2.0 * n * c * h * w * c * 9


def conv_backward_work(shape: Shape) -> float:
    """The backward of the same convolution: its input and weight gradients, 2x the forward."""
    return 2.0 * conv_work(shape)


#: The strided convolutions whose backward the CPU bench times (``conv2d_backward_strided``):
#: [N, C_in, H, W, C_out, kh, kw] of the input, stride 2, in the NCHW layout models run in:
#: a downsampling 1x1 and a stride-2 3x3 of a middle stage of a ResNet (256 channels in,
#: 28 x 28 to 14 x 14, batch 4). oneDNN runs their input gradient on its own strided kernel
#: (``brgconv_strided`` backward_data, with ``ONEDNN_VERBOSE=1``), and each call reorders
#: tensors four times the output's size between NCHW and its blocked layout: in ResNet-50
#: at batch 4 their backward took 1.35-3.5x the price of an unstrided one on a Xeon guest
#: and 1.35-2.1x on a Zen 3 one (benchmarks/conv_shapes.py, docs/estimates.md 4). The
#: ratio moves with the shape (a 64-to-128 1x1 at 56 x 56 ran at a tenth of the price), so
#: one middle shape stands for all.
STRIDED_BACKWARD = ((4, 256, 28, 28, 512, 1, 1), (4, 256, 28, 28, 256, 3, 3))
STRIDE = 2
#: The NCHW convolutions the CPU bench times (``conv2d_nchw`` and ``conv2d_nchw_backward``):
#: [N, C, H, W] of a 3x3, stride-1 convolution of C channels in and out, in the plain
#: layout a model runs in unless it asks for channels-last. oneDNN does not run an NCHW
#: call on the kernel it runs a channels-last one on: it reorders the tensors into a
#: blocked layout and runs its direct kernel there (``ONEDNN_VERBOSE=1`` on an Ice Lake
#: Xeon guest: 64 channels at 56 x 56, batch 16, ``jit:avx512_core`` in 25.9 ms between
#: reorders of 4.5 and 1.4 ms, where channels-last ran ``brg_conv_fwd`` in 15.4 ms; the
#: backward 2.6x slower). How much slower moves with the channels (1.2-3.2x across a
#: small ResNet's shapes there), so the bench times a narrow, wide-image layer and a wide,
#: small-image one, and the estimate reads between them by channel count.
NCHW_CONVS = ((4, 32, 56, 56), (4, 256, 14, 14))


def strided_backward_work(shape: Shape) -> float:
    """Twice the forward FLOPs of the stride-2 convolution ``shape``, as a backward is priced."""
    n, c, h, w, cout, kh, kw = shape
    return 2.0 * 2.0 * n * cout * (h // STRIDE) * (w // STRIDE) * c * kh * kw


def _strided_backward_builder(torch: Any, dev: Any) -> Callable[[Shape], Callable[[], object]]:
    """``aten.convolution_backward`` of a stride-2 fp32 convolution (input and weight
    gradients, no bias), NCHW."""

    def build(shape: Shape) -> Callable[[], object]:
        n, c, h, w, cout, kh, kw = shape
        pad = kh // 2
        x = torch.randn(n, c, h, w, device=dev)
        wt = torch.randn(cout, c, kh, kw, device=dev)
        out = torch.nn.functional.conv2d(x, wt, stride=STRIDE, padding=pad)
        grad = torch.randn_like(out)
        back = torch.ops.aten.convolution_backward
        args = ([STRIDE] * 2, [pad] * 2, [1, 1], False, [0, 0], 1, [True, True, False])
        return lambda: back(grad, x, wt, None, *args)

    return build


def _matmul_builder(torch: Any, dev: Any, dtype: str) -> Callable[[Shape], Callable[[], object]]:
    def build(shape: Shape) -> Callable[[], object]:
        m, n, k = shape
        if dtype == "int8":
            # torch._int_mm is torch's real int8 GEMM (int32 accumulate): CPU, CUDA sm75+.
            a = torch.randint(-8, 8, (m, k), dtype=torch.int8, device=dev)
            b = torch.randint(-8, 8, (k, n), dtype=torch.int8, device=dev)
            return lambda: torch._int_mm(a, b)
        dt = torch_dtype(torch, dtype)
        a = torch.randn(m, k, dtype=dt, device=dev)
        b = torch.randn(k, n, dtype=dt, device=dev)
        return lambda: torch.mm(a, b)

    return build


class ColdWeights:
    """The pool of distinct weights (of one dtype) the cold rows products rotate through, made once
    for all their row counts (each weight is written once, so its pages are mapped) and
    dropped with :meth:`clear`."""

    def __init__(self, torch: Any, dev: Any, pool_bytes: int, dtype: str = "fp32") -> None:
        self._torch, self._dev, self.pool_bytes = torch, dev, pool_bytes
        self._dtype = torch_dtype(torch, dtype)
        self._weights: list[Any] = []

    def get(self, k: int, n: int) -> list[Any]:
        """Weights of [k, n] totalling at least the pool's bytes (two at least)."""
        size = self._torch.empty((), dtype=self._dtype).element_size()
        count = max(2, math.ceil(self.pool_bytes / (size * k * n)))
        if len(self._weights) != count or tuple(self._weights[0].shape) != (k, n):
            self.clear()
            full, dt = self._torch.full, self._dtype
            self._weights = [full((k, n), 0.5, dtype=dt, device=self._dev) for _ in range(count)]
        return self._weights

    def clear(self) -> None:
        """Drop the weights."""
        self._weights = []


def _cold_rows_builder(torch: Any, pool: ColdWeights) -> Callable[[Shape], Callable[[], object]]:
    """[m, k] x [k, n] with the next weight of the pool each call: its weight comes from
    DRAM, as a layer's does in a forward pass over weights larger than the cache."""

    def build(shape: Shape) -> Callable[[], object]:
        m, n, k = shape
        weights = pool.get(k, n)
        a = torch.randn(m, k, dtype=weights[0].dtype, device=weights[0].device)
        following = itertools.cycle(weights).__next__
        return lambda: torch.mm(a, following())

    return build


def native_bf16(facts: Facts | None) -> bool | None:
    """Whether this CPU has a native bf16 dot product (its bf16 peak above its fp32 one;
    the probe writes the fp32 rate where it has none); None where the facts do not say."""
    peaks = facts.cpu.peak_gflops if facts is not None else None
    if peaks is None or not peaks.bf16 or not peaks.fp32:
        return None
    return peaks.bf16 > peaks.fp32


def _holds_two(shape: Shape, dtype: str, free_bytes: int | None) -> bool:
    """Whether two weights of ``shape`` fit in 1/:data:`COLD_POOL_FREE_SHARE` of free memory
    (unknown free memory, None or 0 as :func:`cold_pool_bytes` takes it: they are taken to)."""
    _, k, n = shape
    weight = k * n * DTYPE_BYTES[dtype]
    return not free_bytes or 2 * weight <= free_bytes // COLD_POOL_FREE_SHARE


def cold_pool_bytes(facts: Facts | None, threads: int, free_bytes: int | None) -> int:
    """Bytes of distinct weights the cold rows products rotate through:
    :data:`COLD_POOL_FACTOR` x the last-level cache the threads reach
    (``sweep.reachable_l3``), at most 1/:data:`COLD_POOL_FREE_SHARE` of free memory."""
    want = COLD_POOL_FACTOR * reachable_l3(facts, threads)
    if free_bytes:
        want = min(want, max(free_bytes // COLD_POOL_FREE_SHARE, 16 * MIB))
    return int(want)


def _conv_builder(
    torch: Any, dev: Any, dtype: str, *, backward: bool = False, nchw: bool = False
) -> Callable[[Shape], Callable[[], object]]:
    """The 3x3 convolution, or (``backward``) its backward as autograd calls it
    (``aten.convolution_backward``: the input and weight gradients, no bias), on
    channels-last tensors (``nchw``: plain contiguous ones)."""

    def build(shape: Shape) -> Callable[[], object]:
        n, c, h, w = shape
        dt = torch_dtype(torch, dtype)
        cl = torch.contiguous_format if nchw else torch.channels_last
        x = torch.randn(n, c, h, w, dtype=dt, device=dev).contiguous(memory_format=cl)
        wt = torch.randn(c, c, 3, 3, dtype=dt, device=dev).contiguous(memory_format=cl)
        if not backward:
            conv = torch.nn.functional.conv2d
            return lambda: conv(x, wt, padding=1)
        grad = torch.randn(n, c, h, w, dtype=dt, device=dev).contiguous(memory_format=cl)
        back = torch.ops.aten.convolution_backward
        mask = [True, True, False]
        return lambda: back(grad, x, wt, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, mask)

    return build


class StreamPool:
    """The three bandwidth buffers of one device, shared by copy and triad.

    Filling fresh memory costs more than the measurement (the first touch of each page
    faults), so the buffers are made once per size and dropped with :meth:`clear`.
    """

    def __init__(self, torch: Any, dev: Any) -> None:
        self._torch, self._dev = torch, dev
        self._bufs: list[Any] = []

    def get(self, n: int) -> list[Any]:
        """Three filled fp32 buffers of ``n`` elements."""
        if not self._bufs or self._bufs[0].numel() != n:
            self.clear()
            self._bufs = [
                self._torch.ones(n, dtype=self._torch.float32, device=self._dev) for _ in range(3)
            ]
        return self._bufs

    def clear(self) -> None:
        """Drop the buffers."""
        self._bufs = []


def _stream_builder(
    torch: Any, pool: StreamPool, kernel: str
) -> Callable[[Shape], Callable[[], object]]:
    def build(shape: Shape) -> Callable[[], object]:
        a, b, c = pool.get(shape[0])
        if kernel == "copy":
            return lambda: a.copy_(b)
        return lambda: torch.add(b, c, alpha=3.0, out=a)

    return build


def _host_builder(torch: Any, dev: Any, kernel: str) -> Callable[[Shape], Callable[[], object]]:
    def build(shape: Shape) -> Callable[[], object]:
        (n,) = shape
        host = torch.empty(n, dtype=torch.uint8, pin_memory=True)
        on_dev = torch.empty(n, dtype=torch.uint8, device=dev)
        if kernel == "h2d":
            return lambda: on_dev.copy_(host, non_blocking=True)
        return lambda: host.copy_(on_dev, non_blocking=True)

    return build


@contextmanager
def _tf32(torch: Any, enabled: bool) -> Iterator[None]:
    """Allow (tf32) or forbid (fp32) TF32 tensor-core math for the duration, then restore."""
    matmul, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = (matmul.allow_tf32, cudnn.allow_tf32)
    matmul.allow_tf32 = cudnn.allow_tf32 = enabled
    try:
        yield
    finally:
        matmul.allow_tf32, cudnn.allow_tf32 = saved


def stream_elements(target: Target, facts: Facts | None, free_bytes: int | None) -> int:
    """fp32 elements per buffer: ≥ 4× the last-level cache (STREAM's rule; the cache the
    threads can reach, ``sweep.reachable_l3``), ≤ a quarter of free memory / 3."""
    if target.kind == "cpu":
        want = max(4 * reachable_l3(facts, target.threads), 64 * MIB)
    else:
        want = GPU_STREAM_BYTES
    if free_bytes:
        want = min(want, max(free_bytes // 12, 8 * MIB))
    return int(want // 4)


def plan(
    torch: Any, target: Target, facts: Facts | None, free_bytes: int | None
) -> list[KernelCase]:
    """Every kernel for ``target``, most useful first (a short budget still gets those)."""
    dev = torch.device(target.device)
    gpu = target.accelerator
    sizes = GPU_MATMUL if gpu else CPU_MATMUL
    mm_ladder = tuple((n, n, n) for n in sizes)
    conv_ladder = tuple((n, c, CONV_HW, CONV_HW) for n, c in CONV_STEPS)
    n = stream_elements(target, facts, free_bytes)
    stream_ladder = ((n // 2,), (n,))
    pool = StreamPool(torch, dev)

    def mm(dtype: str, weight: float = 1.0) -> KernelCase:
        unit = "GOP/s" if dtype == "int8" else "GFLOP/s"
        flags = None
        if target.kind == "cuda" and dtype in ("fp32", "tf32"):
            enabled = dtype == "tf32"
            flags = lambda: _tf32(torch, enabled)  # noqa: E731 - a small factory
        return KernelCase(
            target,
            "matmul",
            dtype,
            unit,
            mm_ladder,
            matmul_work,
            _matmul_builder(torch, dev, dtype),
            weight=weight,
            flags=flags,
        )

    def conv(dtype: str, weight: float = 1.0, *, backward: bool = False) -> KernelCase:
        flags = (lambda: _tf32(torch, False)) if target.kind == "cuda" and dtype == "fp32" else None
        return KernelCase(
            target,
            "conv2d_backward" if backward else "conv2d",
            dtype,
            "GFLOP/s",
            conv_ladder,
            conv_backward_work if backward else conv_work,
            _conv_builder(torch, dev, dtype, backward=backward),
            weight=weight,
            flags=flags,
        )

    def fixed(
        kernel: str,
        shape: Shape,
        weight: float,
        min_allot_s: float | None = None,
        *,
        on: Target = target,
        dtype: str = "fp32",
    ) -> KernelCase:
        """A product of one shape, not sized (``on``: the target it is timed on)."""
        build = _matmul_builder(torch, dev, dtype)
        return KernelCase(
            on, kernel, dtype, "GFLOP/s", (shape,), matmul_work, build,
            weight=weight, min_allot_s=min_allot_s,
        )  # fmt: skip

    def stream(kernel: str) -> KernelCase:
        moved = 2.0 if kernel == "copy" else 3.0
        return KernelCase(
            target,
            kernel,
            "fp32",
            "GB/s",
            stream_ladder,
            lambda s: moved * 4 * s[0],
            _stream_builder(torch, pool, kernel),
            start=1,
            weight=0.6,
            after=pool.clear if kernel == "triad" else None,  # triad runs last of the two
        )

    # Weights share the budget: the figures the advice leans on most get more time.
    cases = [mm("fp32", 2.0), stream("copy"), stream("triad"), conv("fp32", 1.5)]
    # The backward of the same convolution: training's convolutions are two-thirds backward.
    cases.append(conv("fp32", 0.8, backward=True))
    if target.kind != "cpu":
        cases[1:1] = [mm("tf32"), mm("bf16")] if target.kind == "cuda" else [mm("bf16")]
        cases += [mm("fp16"), mm("int8"), conv("bf16", 0.8)]
    else:
        # On a CPU the fp32 figures every estimate "here" is priced from come first, and
        # the other dtypes last, with less weight: a CPU without native bf16 / fp16 runs
        # a 512-square product of them for 0.1-0.2 s a call (Zen 3), and when they came
        # second the memory sweep got none of the budget.
        others = [mm("bf16", 0.6), mm("fp16", 0.3), mm("int8", 0.3), conv("bf16", 0.4)]
        # Products of few rows: one size each, [rows, width] x [width, width], and the same
        # with a weight from DRAM each call (a model past the cache); in bf16 too where
        # this CPU has a bf16 dot product (elsewhere bf16 goes at its ratio to fp32).
        cold_bytes = cold_pool_bytes(facts, target.threads, free_bytes)
        for dtype in ("fp32", "bf16") if native_bf16(facts) else ("fp32",):
            shapes = [(m, ROWS_WIDTH, ROWS_WIDTH) for m in CPU_ROWS]
            cases += [fixed("matmul_rows", s, 0.15, SMALL_MIN_ALLOT_S, dtype=dtype) for s in shapes]
            cold = ColdWeights(torch, dev, cold_bytes, dtype)
            wide = (1, COLD_WIDE_WIDTH, COLD_WIDE_WIDTH)
            if _holds_two(wide, dtype, free_bytes):
                shapes = [*shapes, wide]
            for s in shapes:  # the pool is dropped once the last of them has run
                case = KernelCase(
                    target, "matmul_rows_cold", dtype, "GFLOP/s", (s,), matmul_work,
                    _cold_rows_builder(torch, cold), weight=0.15, min_allot_s=SMALL_MIN_ALLOT_S,
                    after=cold.clear if s == shapes[-1] else None,
                )  # fmt: skip
                cases.append(case)
        # Small squares, below the floor the sized matmul starts from: a small layer's rate.
        cases += [fixed("matmul_small", (n, n, n), 0.12, SMALL_MIN_ALLOT_S) for n in CPU_SMALL]
        if target.threads > 1:
            # ... and at one thread: a small product's loss of reuse without the cost of
            # splitting its little work between threads (what a convolution of few channels
            # but much work shares with it, estimate.rates.Rates.conv_at).
            single = replace(target, threads=1)
            cases += [
                fixed("matmul_small", (n, n, n), 0.08, SMALL_MIN_ALLOT_S, on=single)
                for n in CPU_SMALL
            ]
        # The backward of strided convolutions: one shape each, not sized.
        build = _strided_backward_builder(torch, dev)
        for shape in STRIDED_BACKWARD:
            case = KernelCase(
                target, "conv2d_backward_strided", "fp32", "GFLOP/s", (shape,),
                strided_backward_work, build, weight=0.1, min_allot_s=SMALL_MIN_ALLOT_S,
            )  # fmt: skip
            cases.append(case)
        # Convolutions in NCHW, forward and backward: one shape each, not sized.
        for square in NCHW_CONVS:
            for backward in (False, True):
                case = KernelCase(
                    target, "conv2d_nchw_backward" if backward else "conv2d_nchw", "fp32",
                    "GFLOP/s", (square,), conv_backward_work if backward else conv_work,
                    _conv_builder(torch, dev, "fp32", backward=backward, nchw=True),
                    weight=0.1, min_allot_s=SMALL_MIN_ALLOT_S,
                )  # fmt: skip
                cases.append(case)
        # Memory-bound operator families per cache level, and the per-operator cost.
        cases += sweep_cases(torch, target, facts)
        cases += others
    if target.kind == "cuda":
        host_ladder = ((HOST_COPY_BYTES // 4,), (HOST_COPY_BYTES // 2,), (HOST_COPY_BYTES,))
        for kernel in ("h2d", "d2h"):
            cases.append(
                KernelCase(
                    target,
                    kernel,
                    "uint8",
                    "GB/s",
                    host_ladder,
                    lambda s: float(s[0]),
                    _host_builder(torch, dev, kernel),
                    start=2,
                    weight=0.5,
                )
            )
    return cases
