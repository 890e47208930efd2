"""CPUs as device models: this machine from its bench figures, a catalog CPU from its datasheet.

This machine ("here"), with bench figures:

- products along the measured square ``matmul`` ladder at the job's dtype, interpolated in
  log size (:func:`~hwadvisor.estimate.timing.device.curve_at`);
- convolutions at the measured ``conv2d`` forward and ``conv2d_backward`` rates;
- memory-bound operators and the optimizer at the measured ``triad`` (else ``copy``)
  bandwidth;
- each eager operator at the measured ``dispatch`` cost.

Without bench figures ("theoretical", band class ``cpu_theoretical``): the facts'
theoretical peak at the job's precision times an assumed efficiency (:data:`ASSUMED_GEMM`,
:data:`ASSUMED_CONV`), and the memory bandwidth of the catalog's entry for this processor
or of its class's default memory
(:func:`~hwadvisor.estimate.timing.cpu_memory.stated_memory_bandwidth`); without a peak,
the cores at :data:`ASSUMED_GHZ`. Unknown only without the cores. A figure the bench marked
unsteady is still used where no steady one of its kind exists (interference only slows a
run, so it is a floor), and the assumptions say so.

A catalog CPU (``--on xeon-8480``, a CPU instance's share of one): its peak at the clock
the cores sustain under vector load, times the catalog's large-GEMM fraction, along a size
curve; its streaming bandwidth; the default per-operator cost.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.estimate.timing.cpu_memory import stated_memory_bandwidth
from hwadvisor.estimate.timing.device import (
    DeviceModel,
    catalog_peak,
    curve_at,
    size_curve,
)
from hwadvisor.models.workload import Precision

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry
    from hwadvisor.models.bench import BenchReport, BenchResult
    from hwadvisor.models.facts import Facts

#: Without usable bench figures, "here" assumes these fractions of the theoretical peak:
#: oneDNN's large fp32 GEMMs reach 60-80% of an x86 core's FMA peak, and a 3×3
#: convolution through oneDNN about half of that in eager PyTorch (the bench's own
#: conv2d figures, efficiency column, run at 30-45% on AVX2 and AVX-512 parts).
ASSUMED_GEMM = 0.6
ASSUMED_CONV = 0.35
#: Per-operator cost of eager PyTorch on a CPU when the bench did not measure it: ~7 µs
#: per Python-level operator with autograd recording (pytorch/pytorch issue #41383),
#: rounded up for the module call around it.
CPU_OP_OVERHEAD_S = 10e-6
#: A core reaches half its large-product rate at about this size per core (a 64³ block
#: fits the L1/L2 register tiling of oneDNN's GEMM kernels).
CPU_HALF_RATE_SIZE = 64.0
#: The effective size (cube root of M·N·K) of a ResNet-like 3×3 layer at 56×56 with 64
#: channels and batch 8, at which a catalog CPU's convolutions are priced on its curve.
CONV_SIZE = (8 * 56 * 56 * 64 * 576) ** (1.0 / 3.0)
#: The clock taken where the facts state a core count but no peak (no clock found): the
#: base clock of most server and laptop parts lies at 2-3 GHz, so 2 GHz errs slow.
ASSUMED_GHZ = 2.0
#: The basis of every estimate here without bench figures starts with this word.
THEORETICAL = "theoretical"
#: A measured matmul rate under this share of the theoretical peak is a busy machine,
#: not its speed: such a bench is set aside.
IMPLAUSIBLE_FRACTION = 0.02
_ALIASES = {"fp32": ("fp32", "float32"), "bf16": ("bf16", "bfloat16"), "fp16": ("fp16", "float16")}


def _cpu_results(bench: BenchReport, kernel: str, dtype: str) -> list[BenchResult]:
    """The CPU's figures of ``kernel`` at ``dtype``: the steady ones, else all."""
    names = _ALIASES.get(dtype, (dtype,))
    found = [
        r
        for r in bench.results
        if r.device == "cpu" and r.kernel == kernel and r.dtype.lower() in names and r.value > 0
    ]
    steady = [r for r in found if r.reliable is not False]
    return steady or found


def _effective_size(shape: list[int]) -> float | None:
    """The cube root of M·N·K of a matmul figure's shape ([n], [m, k, n] or [m, n]);
    None for a shape that is none of these (a saved report may hold anything)."""
    if len(shape) == 3:
        m, k, n = shape
    elif len(shape) == 2:
        m, k, n = shape[0], shape[1], shape[1]
    elif len(shape) == 1:
        m = k = n = shape[0]
    else:
        return None
    product = float(m) * k * n
    return product ** (1.0 / 3.0) if product > 0 else None


def _curve(bench: BenchReport, dtype: str) -> tuple[tuple[float, float], ...]:
    """(size, FLOP/s) of the measured matmul ladder at ``dtype``, the best figure of
    each size, made non-decreasing in size (a larger product never runs slower per FLOP
    on the same cores; a dip is noise)."""
    best: dict[float, float] = {}
    for r in _cpu_results(bench, "matmul", dtype):
        effective = _effective_size(r.shape)
        if effective is None:
            continue
        size = round(effective, 1)
        best[size] = max(best.get(size, 0.0), r.value * 1e9)
    out: list[tuple[float, float]] = []
    for size in sorted(best):
        out.append((size, max(best[size], out[-1][1] if out else 0.0)))
    return tuple(out)


def _best(
    bench: BenchReport, kernels: tuple[str, ...], *dtypes: str, scale: float = 1e9
) -> float | None:
    """The highest figure of the first of ``kernels`` measured at the first of ``dtypes``
    that has one (× ``scale``)."""
    for dtype in dtypes:
        for kernel in kernels:
            found = _cpu_results(bench, kernel, dtype)
            if found:
                return max(r.value for r in found) * scale
    return None


def _unsteady(bench: BenchReport, kernels: tuple[str, ...]) -> list[str]:
    """The kernels among ``kernels`` priced from figures the bench marked unsteady."""
    out = []
    for k in kernels:
        rs = [r for r in bench.results if r.device == "cpu" and r.kernel == k]
        if rs and all(r.reliable is False for r in rs):
            out.append(k)
    return out


def _threads(bench: BenchReport | None, facts: Facts | None) -> int | None:
    """Threads the bench's CPU figures ran at, else the usable cores."""
    if bench is not None:
        for r in bench.results:
            if r.device == "cpu" and r.threads:
                return r.threads
    return facts.cpu.usable_cores if facts is not None else None


def _peak(facts: Facts | None, dtype: str, notes: list[str]) -> float | None:
    """The facts' theoretical peak (FLOP/s) at the job's dtype: bf16 where the CPU has a
    native bf16 dot product (its bf16 peak above its fp32 one), else fp32; without a peak
    in the facts, :func:`assumed_peak`."""
    if facts is None:
        return None
    peaks = facts.cpu.peak_gflops
    if dtype == "bf16" and peaks.bf16 and peaks.fp32 and peaks.bf16 > peaks.fp32:
        return peaks.bf16 * 1e9
    if dtype != "fp32":
        notes.append(f"no native {dtype} dot product known here: the fp32 peak is used")
    return peaks.fp32 * 1e9 if peaks.fp32 else assumed_peak(facts, notes)


def assumed_peak(facts: Facts, notes: list[str]) -> float | None:
    """An fp32 peak for a CPU whose facts give cores but no peak (its clock was not found):
    the cores at :data:`ASSUMED_GHZ`, 32 FLOPs a cycle with AVX2 and FMA, else 8 (SSE or
    NEON, one 128-bit unit). None without the cores."""
    cores = facts.cpu.usable_cores
    if facts.cpu.physical_cores and cores:
        cores = min(cores, facts.cpu.physical_cores)
    if not cores:
        return None
    f = facts.cpu.features
    per_cycle = 32 if (f.avx2 and f.fma) else 8
    peak = cores * ASSUMED_GHZ * 1e9 * per_cycle
    notes.append(
        f"no theoretical peak in the facts (no clock found): {cores} cores x {ASSUMED_GHZ:g} GHz "
        f"x {per_cycle} FLOPs a cycle = {peak / 1e9:.0f} GFLOP/s assumed"
    )
    return peak


def _plausible(
    bench: BenchReport | None, facts: Facts | None, notes: list[str]
) -> BenchReport | None:
    """``bench``, or None where its best fp32 matmul is implausibly far below the peak."""
    if bench is None:
        return None
    peak = facts.cpu.peak_gflops.fp32 if facts is not None else None
    best = _best(bench, ("matmul",), "fp32", scale=1.0)
    if peak and best is not None and best < IMPLAUSIBLE_FRACTION * peak:
        notes.append(
            f"the bench's best fp32 matmul ({best:.1f} GFLOP/s) is under "
            f"{IMPLAUSIBLE_FRACTION:.0%} of the theoretical peak: the machine was probably busy, "
            "so the bench is set aside; repeat hwadvisor bench when idle"
        )
        return None
    return bench


def here_model(facts: Facts | None, bench: BenchReport | None, precision: Precision) -> DeviceModel:
    """This machine's CPU at ``precision``: from the bench's figures, else the facts' peak."""
    notes: list[str] = []
    dtype = precision.dtype
    memory = (facts.memory.cgroup_limit_bytes or facts.memory.total_bytes) if facts else None
    threads = _threads(bench, facts)
    name = facts.cpu.model if facts is not None else None
    bench = _plausible(bench, facts, notes)
    pts = _curve(bench, dtype) if bench is not None else ()
    if bench is not None and not pts and dtype != "fp32":
        pts = _curve(bench, "fp32")
        if pts:
            notes.append(f"no {dtype} matmul figure: the fp32 figures price the {dtype} products")
    if bench is not None and pts:
        return _measured(bench, dtype, pts, name, notes, memory, threads, facts)
    peak = _peak(facts, dtype, notes)
    if peak is None:
        notes.append("no bench figures and the cores are unknown: time here is unknown")
        return DeviceModel("here", name, (), None, None, None, CPU_OP_OVERHEAD_S,
                           assumptions=tuple(notes), basis="unknown", memory_bytes=memory, threads=threads)  # fmt: skip
    peak *= _avx512_clock(facts, notes)
    measured = _best(bench, ("triad", "copy"), "fp32") if bench is not None else None
    bandwidth = measured or stated_bandwidth(facts, threads, notes)
    notes.append(
        f"no usable bench figures: {ASSUMED_GEMM:.0%} of the theoretical {dtype} peak "
        f"({peak / 1e9:.0f} GFLOP/s) assumed for products, {ASSUMED_CONV:.0%} for convolutions"
        + ("" if bandwidth else "; memory bandwidth unknown")
    )
    basis = (
        f"{THEORETICAL}: {ASSUMED_GEMM:.0%} of the {peak / 1e9:.0f} GFLOP/s {dtype} peak assumed"
        + (f", {bandwidth / 1e9:.1f} GB/s" if bandwidth else "")
        + (" measured" if measured else " stated" if bandwidth else "")
        + " (no bench)"
    )
    # A product is split over the cores, as a catalog CPU's is (catalog_cpu_model).
    split = float(max(1, threads or 1)) ** (1.0 / 3.0)
    pts = size_curve(peak * ASSUMED_GEMM, CPU_HALF_RATE_SIZE, split)
    return DeviceModel(
        "here", name, pts, peak * ASSUMED_CONV, None, bandwidth,
        CPU_OP_OVERHEAD_S, conv_size=CONV_SIZE, cost_weighted=True, assumptions=tuple(notes),
        basis=basis, memory_bytes=memory, threads=threads,
    )  # fmt: skip


def _avx512_clock(facts: Facts | None, notes: list[str]) -> float:
    """The factor from a peak at an Intel part's maximum turbo to its base clock where it
    runs AVX-512: Intel lowers the clock under AVX-512 to licence frequencies near the base
    (its specification updates list them per SKU; the catalog keeps Intel parts at the
    base clock for the same reason: :func:`sustained_scale`). 1 elsewhere."""
    if facts is None:
        return 1.0
    cpu = facts.cpu
    at_max = "(max)" in (cpu.peak_gflops.basis or "")
    intel = (cpu.vendor or "").lower().startswith("intel")
    if not (intel and cpu.features.avx512f and at_max and cpu.base_mhz and cpu.max_mhz):
        return 1.0
    scale = min(1.0, cpu.base_mhz / cpu.max_mhz)
    if scale < 1.0:
        notes.append(
            f"AVX-512 on an Intel part runs near its base clock: the peak at "
            f"{cpu.base_mhz / 1e3:.2f} GHz, not the {cpu.max_mhz / 1e3:.2f} GHz turbo ({scale:.2f}x)"
        )
    return scale


def _measured(
    bench: BenchReport,
    dtype: str,
    pts: tuple[tuple[float, float], ...],
    name: str | None,
    notes: list[str],
    memory: int | None,
    threads: int | None,
    facts: Facts | None,
) -> DeviceModel:
    """The model from the bench's figures (``pts``: the matmul curve at the job's dtype)."""
    conv = _best(bench, ("conv2d",), dtype, "fp32")
    backward = _best(bench, ("conv2d_backward",), dtype, "fp32")
    if conv is None:
        conv = curve_at(pts, CONV_SIZE)
        notes.append("no conv2d figure: convolutions at the matmul curve's rate")
    bandwidth = _best(bench, ("triad", "copy"), "fp32") or stated_bandwidth(facts, threads, notes)
    dispatch = _best(bench, ("dispatch",), "fp32", scale=1e6)  # operators per second
    overhead = 1.0 / dispatch if dispatch else CPU_OP_OVERHEAD_S
    if not dispatch:
        notes.append(f"no dispatch figure: {CPU_OP_OVERHEAD_S * 1e6:.0f} µs an operator assumed")
    unsteady = _unsteady(
        bench, ("matmul", "conv2d", "conv2d_backward", "triad", "copy", "dispatch")
    )
    if unsteady:
        notes.append(
            f"here: {', '.join(unsteady)} priced from figures the bench marked unsteady (a busy "
            "machine runs slower, so the time is an upper estimate); repeat hwadvisor bench when idle"
        )
    sizes = ", ".join(f"{s:.0f}" for s, _ in pts)
    basis = (
        f"measured here: {dtype} matmul at sizes {sizes} (up to {pts[-1][1] / 1e9:.0f} GFLOP/s)"
        + (f", conv2d {conv / 1e9:.0f} GFLOP/s" if conv else "")
        + (f", {bandwidth / 1e9:.1f} GB/s" if bandwidth else "")
        + f", {overhead * 1e6:.1f} µs an operator"
    )
    return DeviceModel(
        "here", name, pts, conv, backward, bandwidth, overhead, conv_size=_conv_size(bench),
        cost_weighted=True,
        assumptions=tuple(notes), basis=basis, memory_bytes=memory, threads=threads,
    )  # fmt: skip


def _conv_size(bench: BenchReport) -> float:
    """The effective size of the bench's convolution ([N, C, H, W], 3×3, C in = C out:
    M = N·H·W, N = C, K = 9·C), else the catalog's reference layer's."""
    for r in _cpu_results(bench, "conv2d", "fp32"):
        if len(r.shape) == 4 and min(r.shape) > 0:
            n, c, h, w = r.shape
            return float(n * h * w * c * 9 * c) ** (1.0 / 3.0)
    return CONV_SIZE


def stated_bandwidth(facts: Facts | None, threads: int | None, notes: list[str]) -> float | None:
    """This CPU's streaming bandwidth where the bench measured none, on ``threads`` cores:
    the catalog's or the CPU class's memory at the streaming share, at most what the
    cores draw (:func:`~hwadvisor.estimate.timing.cpu_memory.stated_memory_bandwidth`);
    None without the facts' cores."""
    found = stated_memory_bandwidth(facts, threads) if facts is not None else None
    if found is None:
        return None
    notes.append(f"no bandwidth figure: {found.text}; hwadvisor bench measures it")
    return found.bytes_s


def sustained_scale(entry: DeviceEntry) -> tuple[float, str | None]:
    """The factor from the catalog's base-clock peak to the clock sustained under vector load.

    AMD states an all-core boost clock that holds for AVX-512 and AVX2 work alike (Zen 4
    executes AVX-512 on its 256-bit units without a frequency offset); Intel lowers the
    clock under AVX-512 to per-SKU licence frequencies its specification updates list, which
    the catalog does not carry, so an Intel part keeps its base clock.
    """
    if entry.vendor.lower() != "amd" or not entry.all_core_ghz or not entry.base_ghz:
        return 1.0, None
    scale = entry.all_core_ghz / entry.base_ghz
    if scale <= 1.0:
        return 1.0, None
    return scale, (
        f"{entry.id}: peak at the {entry.all_core_ghz:g} GHz all-core boost AMD states, not "
        f"the {entry.base_ghz:g} GHz base ({scale:.2f}x): AMD's clocks hold under vector load"
    )


def catalog_cpu_model(entry: DeviceEntry, precision: Precision) -> DeviceModel:
    """A catalog CPU: its peak at the sustained clock times the catalog's GEMM fraction."""
    notes: list[str] = []
    peak, matrix = catalog_peak(entry, precision, notes)
    if peak is None:
        return DeviceModel(entry.id, entry.name, (), None, None, None, CPU_OP_OVERHEAD_S,
                           assumptions=(f"{entry.id}: no peak for {precision.value}: time unknown",),
                           basis="unknown")  # fmt: skip
    scale, clock = sustained_scale(entry)
    notes.extend([clock] if clock else [])
    a = entry.achieved
    frac = a.tensor_gemm if (matrix and a.tensor_gemm) else a.gemm
    rate = peak * 1e12 * scale * frac
    # A CPU splits a product over its cores: each core's block is the product over the
    # core count, so the size that sets a core's rate is the size over its cube root.
    split = float(max(1, entry.cores or 1)) ** (1.0 / 3.0)
    pts = size_curve(rate, CPU_HALF_RATE_SIZE, split)
    return DeviceModel(
        entry.id,
        entry.name,
        pts,
        curve_at(pts, CONV_SIZE),
        None,
        entry.streaming_bytes_s,
        CPU_OP_OVERHEAD_S,
        memory_bytes=entry.memory_bytes,
        threads=entry.cores,
        conv_size=CONV_SIZE,
        assumptions=tuple(notes),
        basis=f"catalog peak {peak:g} TFLOP/s x achieved fraction {frac:.0%} ({entry.source})",
    )
