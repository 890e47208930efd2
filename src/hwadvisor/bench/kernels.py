"""The kernels measured on each device, in the order a short budget keeps them.

The estimator reads these figures and little else: ``matmul`` per dtype (fp32 as a ladder
of square sizes, so it can read the rate at a layer's size between them; the other
dtypes at fewer sizes), the ResNet-like 3×3 ``conv2d`` (fp32 and bf16) and its fp32
backward ``conv2d_backward``, memory bandwidth (``copy`` and ``triad``), the per-operator
cost of eager PyTorch (``dispatch``, CPU), and on CUDA the host link (``h2d``, ``d2h``).

Work is counted honestly: a matmul of (M,K)x(K,N) is 2·M·N·K FLOPs (ops for int8); a
3×3 convolution is 2·N·C_out·H·W·C_in·9; a copy moves 2× the buffer (read + write) and
a triad ``a = b + s·c`` moves 3× (two reads, one write); write-allocate traffic is not
counted, so the figures are what a program gets, not what the wires carry.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from typing import Any

from hwadvisor.bench.devices import Target
from hwadvisor.bench.sizing import Shape
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import DTYPE_BYTES

MIB = 1024 * 1024
#: Every kernel this version measures (a report from an older one may hold others).
KERNELS = frozenset(
    {"matmul", "conv2d", "conv2d_backward", "copy", "triad", "dispatch", "h2d", "d2h"}
)
#: Square fp32 matmul sizes, measured in this order: the middle of the ladder first (the
#: sizes real layers run at, and what a short budget keeps), then its ends.
CPU_FP32 = (256, 512, 1024, 64, 128, 2048)
GPU_FP32 = (1024, 2048, 4096, 256, 512, 8192)
#: ... and the other dtypes, fewer sizes (a CPU without native bf16 or fp16 runs them at
#: a few GFLOP/s, so the larger size is kept only where the smaller one says it fits).
CPU_OTHERS = (256, 1024)
GPU_OTHERS = (1024, 4096, 8192)
#: The ResNet-like 3×3 layer, channels-last, C_in = C_out: [N, C, H, W], the preferred
#: shape last; a short budget takes the one before it. A CPU's is a stage-1 layer at a
#: small batch; a GPU's a stage-2 one at a training batch, large enough to fill it.
CPU_CONV = ((1, 64, 56, 56), (4, 64, 56, 56))
GPU_CONV = ((8, 128, 56, 56), (32, 128, 56, 56))
#: The dispatch figure's work per call, in the runner's units (work / s / 1e9), so that
#: it reads in millions of operators per second.
DISPATCH_WORK = 1000.0
#: GPU last-level caches are at most ~100 MiB today; 1 GiB buffers stream from HBM.
GPU_STREAM_BYTES = 1024 * MIB
HOST_COPY_BYTES = 256 * MIB
#: Bytes a second inputs are assumed to be made at: drawn at random (randn), or filled
#: (ones, empty), each page faulted in once: about half of what two threads reach with
#: other work running, so that a slower machine still keeps its budget.
RANDN_RATE = 0.4e9
FILL_RATE = 1.5e9
#: A figure's call time before it has a rate of its own is foretold at this share of the
#: rate of a kernel it resembles (a convolution at a quarter of the matmul rate, bf16 at
#: a quarter of fp32's), or at half the rate of its own kind in another form (a backward
#: at half its forward's, triad at half copy's): pessimistic, so that a figure is not
#: started where it cannot end.
GUESS_SHARE = 0.25
KIN_SHARE = 0.5
#: Cache sizes assumed when the probe could not read them (total L3).
DEFAULT_L3 = 32 * MIB
#: The most last-level cache a core of a shipping x86 server part has to itself: AMD's
#: EPYC 9184X (Genoa-X), 768 MB of L3 over 16 cores, 48 MB a core (AMD's EPYC 9004
#: product pages). A virtual machine's sysfs shows its host's whole L3, which every other
#: tenant of the host shares, so the L3 counted on is at most this much a thread.
L3_PER_CORE_MAX = 48 * 10**6


@dataclass(frozen=True)
class KernelCase:
    """One figure to measure: a kernel at one dtype on one device, and its shape.

    ``ladder`` holds the shapes it may take, smallest first; ``start`` is the one wanted.
    The runner takes a smaller one when the wanted one does not fit the time left, or
    the device's memory.
    """

    target: Target
    kernel: str
    dtype: str
    unit: str
    ladder: tuple[Shape, ...]
    work: Callable[[Shape], float]
    build: Callable[[Shape], Callable[[], object]]
    start: int = 0
    #: Share of the budget this figure may take, against the others' weights.
    weight: float = 1.0
    flags: Callable[[], AbstractContextManager[object]] | None = None
    after: Callable[[], None] | None = None
    #: Bytes its inputs take at a shape, and how fast they are made (bytes a second):
    #: making them is part of its cost.
    input_bytes: Callable[[Shape], float] | None = None
    fill_rate: float = RANDN_RATE
    #: Measured once more when its spread is high and the budget allows (bandwidth).
    retry: bool = False
    #: (kernel, dtype, share): this one's call time, before it has a rate of its own, is
    #: foretold at ``share`` x that figure's best rate (the slowest such foretelling).
    basis: tuple[tuple[str, str, float], ...] = ()
    #: Its place in the order of need: every device's tier 0 is measured before any tier 1.
    tier: int = 0


def torch_dtype(torch: Any, name: str) -> Any:
    """The torch dtype behind a report dtype name (tf32 is fp32 with TF32 math allowed)."""
    return {
        "fp32": torch.float32,
        "tf32": torch.float32,
        "bf16": torch.bfloat16,
        "fp16": torch.float16,
        "int8": torch.int8,
    }[name]


def conv_work(shape: Shape) -> float:
    """2·N·C_out·H·W·C_in·9 for a 3×3, stride-1, padded convolution with C_in = C_out."""
    n, c, h, w = shape
    return 2.0 * n * c * h * w * c * 9


def conv_backward_work(shape: Shape) -> float:
    """The backward of the same convolution: its input and weight gradients, 2x the forward."""
    return 2.0 * conv_work(shape)


def reachable_l3(facts: Facts | None, threads: int) -> int:
    """The last-level cache the sizing counts on: the probed L3 (else :data:`DEFAULT_L3`),
    at most :data:`L3_PER_CORE_MAX` for each thread used."""
    l3 = facts.cpu.l3_bytes if facts is not None and facts.cpu.l3_bytes else DEFAULT_L3
    return int(min(l3, max(1, threads) * L3_PER_CORE_MAX))


def stream_elements(target: Target, facts: Facts | None, free_bytes: int | None) -> int:
    """fp32 elements per bandwidth buffer: ≥ 4× the last-level cache the threads reach
    (STREAM's rule), 64 MiB at least, ≤ a twelfth of free memory."""
    if target.kind == "cpu":
        want = max(4 * reachable_l3(facts, target.threads), 64 * MIB)
    else:
        want = GPU_STREAM_BYTES
    if free_bytes:
        want = min(want, max(free_bytes // 12, 8 * MIB))
    return int(want // 4)


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


def _conv_builder(
    torch: Any, dev: Any, dtype: str, *, backward: bool = False
) -> Callable[[Shape], Callable[[], object]]:
    """The 3x3 convolution on channels-last tensors, or (``backward``) its backward as
    autograd calls it (``aten.convolution_backward``: input and weight gradients, no bias)."""

    def build(shape: Shape) -> Callable[[], object]:
        n, c, h, w = shape
        dt, cl = torch_dtype(torch, dtype), torch.channels_last
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
    """The bandwidth buffers of one device, shared by copy (two) and triad (a third).

    Filling fresh memory costs more than the measurement (the first touch of each page
    faults), so the buffers are made once per size and dropped with :meth:`clear`.
    """

    def __init__(self, torch: Any, dev: Any) -> None:
        self._torch, self._dev = torch, dev
        self._bufs: list[Any] = []

    def get(self, n: int, count: int) -> list[Any]:
        """``count`` filled fp32 buffers of ``n`` elements."""
        if self._bufs and self._bufs[0].numel() != n:
            self.clear()
        while len(self._bufs) < count:
            self._bufs.append(self._torch.ones(n, dtype=self._torch.float32, device=self._dev))
        return self._bufs[:count]

    def missing_bytes(self, n: int, count: int) -> float:
        """Bytes still to fill before :meth:`get` can hand out ``count`` buffers of ``n``."""
        held = len(self._bufs) if self._bufs and self._bufs[0].numel() == n else 0
        return 4.0 * n * max(0, count - held)

    def clear(self) -> None:
        """Drop the buffers."""
        self._bufs = []


def _stream_builder(
    torch: Any, pool: StreamPool, kernel: str
) -> Callable[[Shape], Callable[[], object]]:
    def build(shape: Shape) -> Callable[[], object]:
        if kernel == "copy":
            a, b = pool.get(shape[0], 2)
            return lambda: a.copy_(b)
        a, b, c = pool.get(shape[0], 3)
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


def dispatch_statement(torch: Any) -> Callable[[], object]:
    """A 64-element add with autograd recording: what eager PyTorch pays per operator
    here (dispatcher, autograd bookkeeping, allocation), beyond the operator's work."""
    x = torch.randn(64, requires_grad=True)
    y = torch.randn(64)
    return lambda: torch.add(x, y)


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


class _Planner:
    """Makes the cases of one target (shared device, buffers and TF32 switch)."""

    def __init__(self, torch: Any, target: Target) -> None:
        self.torch, self.target = torch, target
        self.dev = torch.device(target.device)
        self.pool = StreamPool(torch, self.dev)

    def _flags(self, dtype: str) -> Callable[[], AbstractContextManager[object]] | None:
        if self.target.kind != "cuda" or dtype not in ("fp32", "tf32"):
            return None
        enabled = dtype == "tf32"
        return lambda: _tf32(self.torch, enabled)

    def matmul(self, dtype: str, n: int, weight: float = 1.0) -> KernelCase:
        """One square product of side ``n``."""
        size = DTYPE_BYTES[dtype]
        return KernelCase(
            self.target, "matmul", dtype, "GOP/s" if dtype == "int8" else "GFLOP/s",
            ((n, n, n),), lambda s: 2.0 * s[0] * s[1] * s[2], _matmul_builder(self.torch, self.dev, dtype),
            weight=weight, flags=self._flags(dtype), input_bytes=lambda s: 2.0 * s[0] * s[2] * size,
            basis=(("matmul", "fp32", GUESS_SHARE),),
        )  # fmt: skip

    def conv(self, dtype: str, weight: float, *, backward: bool = False) -> KernelCase:
        """The 3×3 layer (``backward``: its backward)."""
        ladder = GPU_CONV if self.target.accelerator else CPU_CONV
        tensors = 3 if backward else 2
        size = DTYPE_BYTES[dtype]
        return KernelCase(
            self.target, "conv2d_backward" if backward else "conv2d", dtype, "GFLOP/s",
            ladder, conv_backward_work if backward else conv_work,
            _conv_builder(self.torch, self.dev, dtype, backward=backward),
            start=len(ladder) - 1, weight=weight, flags=self._flags(dtype),
            input_bytes=lambda s: tensors * size * s[0] * s[1] * s[2] * s[3],
            basis=(("conv2d", "fp32", KIN_SHARE), ("matmul", dtype, GUESS_SHARE)),
        )  # fmt: skip

    def stream(self, kernel: str, n: int) -> KernelCase:
        """``copy`` or ``triad`` over buffers of ``n`` fp32 elements (or a half or quarter)."""
        moved = 2.0 if kernel == "copy" else 3.0
        pool = self.pool
        return KernelCase(
            self.target, kernel, "fp32", "GB/s", ((n // 4,), (n // 2,), (n,)),
            lambda s: moved * 4 * s[0], _stream_builder(self.torch, pool, kernel),
            start=2, weight=1.0, after=pool.clear if kernel == "triad" else None,
            input_bytes=lambda s: pool.missing_bytes(s[0], 2 if kernel == "copy" else 3),
            retry=True, fill_rate=FILL_RATE, basis=(("copy", "fp32", KIN_SHARE),),
        )  # fmt: skip

    def dispatch(self) -> KernelCase:
        """The per-operator cost of eager PyTorch on this CPU."""
        return KernelCase(
            self.target, "dispatch", "fp32", "Mop/s", ((64,),), lambda _s: DISPATCH_WORK,
            lambda _s: dispatch_statement(self.torch), weight=0.3,
        )  # fmt: skip

    def host(self, kernel: str) -> KernelCase:
        """``h2d`` or ``d2h``: pinned host memory to the device, or back."""
        ladder = ((HOST_COPY_BYTES // 4,), (HOST_COPY_BYTES // 2,), (HOST_COPY_BYTES,))
        return KernelCase(
            self.target, kernel, "uint8", "GB/s", ladder, lambda s: float(s[0]),
            _host_builder(self.torch, self.dev, kernel), start=2, weight=0.5,
            input_bytes=lambda s: 2.0 * s[0], fill_rate=FILL_RATE,
            basis=(("h2d", "uint8", KIN_SHARE),),
        )  # fmt: skip


def plan(
    torch: Any, target: Target, facts: Facts | None, free_bytes: int | None
) -> list[KernelCase]:
    """Every figure for ``target``, in tiers, the ones the estimator leans on most first
    (``KernelCase.tier``): a short budget measures the head of this list and leaves out
    its tail, and the runner takes every device's first tier before any device's next."""
    p = _Planner(torch, target)
    gpu = target.accelerator
    fp32 = GPU_FP32 if gpu else CPU_FP32
    n = stream_elements(target, facts, free_bytes)
    head = [p.matmul("fp32", s, 1.0) for s in fp32[:3]]
    per_call = [p.host("h2d"), p.host("d2h")] if target.kind == "cuda" else [p.dispatch()]
    dtypes = ["tf32", "bf16", "fp16", "int8"] if target.kind == "cuda" else ["bf16", "fp16", "int8"]
    others: list[KernelCase] = []
    for dtype in dtypes:
        others += [p.matmul(dtype, s, 0.5) for s in (GPU_OTHERS if gpu else CPU_OTHERS)]
        others += [p.conv("bf16", 0.5)] if dtype == "bf16" else []
    tiers = [
        [*head[:2], p.stream("copy", n), p.stream("triad", n), head[2]],
        [*per_call, p.conv("fp32", 1.0), p.conv("fp32", 1.0, backward=True)],
        [p.matmul("fp32", s, 0.5) for s in fp32[3:]],
        others,
    ]
    return [replace(c, tier=k) for k, cases in enumerate(tiers) for c in cases]
