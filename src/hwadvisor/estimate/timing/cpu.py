"""The rates of this machine's CPU: from the bench's figures, or, failing that, its peak.

- With usable bench figures: the measured matmul rate interpolated at each product's
  size, the measured conv2d rate, the measured triad (or copy) bandwidth and the memory
  sweep (:mod:`hwadvisor.estimate.timing.levels`).
- Without them: the facts' theoretical peak at the job's precision, raised to the
  fastest figure measured, times an assumed efficiency.
"""

from __future__ import annotations

from hwadvisor.bench.kernels import DTYPE_BYTES, ROWS_WIDTH, native_bf16
from hwadvisor.bench.sweep import reachable_l3
from hwadvisor.estimate.timing.levels import (
    MemoryLevels,
    log_interp,
    machine_note,
    memory_levels,
    unreliable_sweep,
    unsteady_levels,
)
from hwadvisor.estimate.timing.rates import CPU_OP_OVERHEAD_S, Rates, curve_at
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import ConvShape, Precision

_DTYPE_ALIASES = {
    "fp32": ("fp32", "float32"),
    "bf16": ("bf16", "bfloat16"),
    "fp16": ("fp16", "float16"),
    "int8": ("int8",),
    "tf32": ("tf32",),
}

#: Without usable bench figures, "here" assumes these fractions of the theoretical peak.
ASSUMED_HERE_GEMM = 0.6
ASSUMED_HERE_CONV = 0.35
#: A measured matmul rate under this fraction of the theoretical peak is a busy machine
#: (a 128³ matmul measured 0.3 GFLOP/s here at two threads while other jobs ran), not
#: the machine's speed.
IMPLAUSIBLE_FRACTION = 0.02


def _bench_dtype(precision: Precision) -> str:
    return {
        Precision.FP32: "fp32",
        Precision.AMP: "bf16",
        Precision.BF16: "bf16",
        Precision.FP16: "fp16",
        Precision.INT8: "int8",
    }[precision]


def _figures(
    bench: BenchReport,
    kernel: str,
    dtype: str,
    threads: int | None = None,
    *,
    unsteady: bool = False,
) -> list[BenchResult]:
    """The CPU's figures of one kernel in ``dtype`` (its aliases too): the reliable ones,
    or (``unsteady``) only those the bench marked unreliable; ``threads``: only those
    measured at that many threads."""
    return [
        r
        for r in bench.results
        if r.device == "cpu"
        # too unsteady or taken on a busy machine (bench.reliability)
        and (r.reliable is False) == unsteady
        and r.kernel == kernel
        and r.dtype.lower() in _DTYPE_ALIASES.get(dtype, (dtype,))
        and (threads is None or r.threads is None or r.threads == threads)
    ]


def _results(
    bench: BenchReport,
    kernel: str,
    dtype: str,
    threads: int | None = None,
    *,
    unsteady: bool = False,
) -> list[tuple[float, float]]:
    """(size, rate) points of one kernel on the CPU, best rate per size, ascending
    (``threads``: only the figures measured at that many threads; ``unsteady``: only the
    figures the bench marked unreliable, instead of only the others)."""
    from hwadvisor.estimate.workload.counting import effective_size

    pts: dict[float, float] = {}
    for r in _figures(bench, kernel, dtype, threads, unsteady=unsteady):
        size = 0.0
        if kernel in ("matmul", "matmul_small") and len(r.shape) == 3:
            size = float(effective_size(*r.shape))
        elif kernel in ("matmul_rows", "matmul_rows_cold") and r.shape:
            if len(r.shape) == 3 and r.shape[1] != ROWS_WIDTH:
                continue  # not the rows curves' weight (the wide one-row cold figure)
            size = float(r.shape[0])  # its rows
        scale = 1e9  # GFLOP/s, GOP/s and GB/s all carry a 1e9
        pts[size] = max(pts.get(size, 0.0), r.value * scale)
    return sorted(pts.items())


def _conv_size(bench: BenchReport, kernel: str = "conv2d") -> float | None:
    """Effective product size of the measured conv2d, from its shape when it is readable.

    Shapes are [N, C, H, W] (3x3, C in = C out, as ``hwadvisor bench`` runs it) or
    [N, C, H, W, Cout, kh, kw] (stride 1, same padding); anything else is
    taken as unknown and convolutions are then priced at the measured rate as is.
    """
    from hwadvisor.estimate.workload.counting import effective_size

    for r in bench.results:
        if r.device != "cpu" or r.kernel != kernel:
            continue
        if len(r.shape) == 7:
            n, c, h, w, cout, kh, kw = r.shape
            return float(effective_size(n * h * w, cout, c * kh * kw))
        if len(r.shape) == 4:  # hwadvisor bench: [N, C, H, W], 3x3, C in = C out
            n, c, h, w = r.shape
            return float(effective_size(n * h * w, c, c * 9))
    return None


def _bench_threads(bench: BenchReport, facts: Facts | None) -> int | None:
    """Threads the bench's CPU figures ran at (its fp32 matmul's), else the usable cores."""
    for r in bench.results:
        if r.device == "cpu" and r.kernel == "matmul" and r.threads:
            return r.threads
    cpu = next((d.threads for d in bench.devices if d.device == "cpu" and d.threads), None)
    return cpu or (facts.cpu.usable_cores if facts else None)


def _implausible(bench: BenchReport, facts: Facts | None) -> bool:
    """Whether the best fp32 matmul figure is too far below the theoretical peak to trust."""
    peak = facts.cpu.peak_gflops.fp32 if facts else None
    pts = _results(bench, "matmul", "fp32")
    if not peak or not pts:
        return False
    return max(r for _, r in pts) < IMPLAUSIBLE_FRACTION * peak * 1e9


def _unreliable_fp32(bench: BenchReport) -> bool:
    """Whether the bench measured CPU fp32 matmul only in figures it marked unreliable."""
    return any(
        r.device == "cpu" and r.kernel == "matmul" and r.dtype == "fp32" and r.reliable is False
        for r in bench.results
    )


def _usable(bench: BenchReport | None, facts: Facts | None, notes: list[str]) -> BenchReport | None:
    """The bench, or None when its fp32 matmul figure cannot be trusted (said in ``notes``)."""
    if bench is not None and _implausible(bench, facts):
        notes.append(
            f"the measured fp32 matmul rate is under {IMPLAUSIBLE_FRACTION:.0%} of the theoretical "
            "peak (the machine was probably busy during the bench): those figures are not used"
        )
        return None
    if bench is not None and not _results(bench, "matmul", "fp32") and _unreliable_fp32(bench):
        notes.append(
            "the bench's fp32 matmul figure was unreliable (too unsteady, or the machine was "
            "busy): the theoretical peak prices the products it would have"
        )
        return None
    return bench


def _busy_levels(bench: BenchReport, notes: list[str]) -> MemoryLevels | None:
    """The sweep from its unreliable figures, where it has no reliable one and no steady
    bandwidth figure prices the memory-bound operators instead (``levels.unsteady_levels``)."""
    levels = unsteady_levels(bench)
    if levels is not None:
        notes.append(
            "here: no memory figure of the bench was reliable (a busy machine): memory-bound "
            "operators, page faults and the optimizer are priced at its unreliable sweep "
            "figures, which interference only slows (so they err long); repeat hwadvisor "
            "bench when idle"
        )
    return levels


def _level_notes(levels: MemoryLevels | None, notes: list[str], left_out: int = 0) -> float:
    """Say how the memory sweep is used (and which of its figures are left out as
    unreliable); the per-operator cost (measured, else assumed)."""
    unsteady = levels.unsteady_families if levels is not None else []
    if left_out:
        notes.append(
            f"here: {left_out} memory-sweep figure(s) marked unreliable (unsteady, too few "
            "runs, or a busy machine): "
            + (
                "where their family has a reliable figure, what they measured is priced "
                "from the nearest reliable one, or at their own where that is slower"
                if levels is not None
                else "not used; memory-bound operators are priced as without a sweep"
            )
            + (
                f"; {', '.join(unsteady)} had no reliable figure and are priced from their "
                "unreliable ones (interference only slows a run, so these err long)"
                if unsteady
                else ""
            )
            + "; repeat hwadvisor bench when idle"
        )
    if levels is None:
        return CPU_OP_OVERHEAD_S
    cold = (
        f"; element-wise operators past the L2 caches in use ({levels.private_bytes / 2**20:.1f}"
        " MiB) at the DRAM figure: in a step they read what another operator just wrote"
        if levels.private_bytes
        else ""
    )
    notes.append(
        "here: memory-bound operators priced by family and working set from the "
        f"bench's memory sweep ({', '.join(sorted(levels.curves))} at L2, L3 and DRAM sizes)" + cold
    )
    if levels.dispatch_s is None:
        return CPU_OP_OVERHEAD_S
    notes.append(
        f"here: {levels.dispatch_s * 1e6:.1f} µs per operator launch, measured (dispatch figure)"
    )
    if levels.backward_dispatch_s is not None:
        notes.append(
            f"here: {levels.backward_dispatch_s * 1e6:.1f} µs per operator of a backward pass, "
            "measured (dispatch_backward figure: autograd's engine through a chain of small operators)"
        )
    return levels.dispatch_s


def _measured(
    facts: Facts | None,
    bench: BenchReport,
    precision: Precision,
    mem: int | None,
    notes: list[str],
    sized: tuple[float, float] | None = None,
) -> Rates:
    """Rates of this CPU from the bench figures; ``sized``: (size, FLOP/s) standing in for
    an fp32 ``matmul`` figure the bench marked unreliable (:func:`_stand_in`)."""
    dtype = job = _bench_dtype(precision)
    gemm = _results(bench, "matmul", dtype)
    if not gemm and dtype != "fp32":
        notes.append(f"no steady {dtype} matmul figure: the fp32 rate is used")
        dtype = "fp32"
        gemm = _results(bench, "matmul", dtype)
    if not gemm and sized is not None:
        gemm = [sized]
    threads = _bench_threads(bench, facts)
    if gemm and dtype == "fp32":
        small = _results(bench, "matmul_small", dtype, threads)
        gemm = _with_small_squares(gemm, small, notes)
    if gemm:
        gemm = _raised_by_unsteady(gemm, bench, dtype, threads, notes)
    share = (
        _emulated_share(bench, job, dtype, notes, gemm)
        if job != dtype and native_bf16(facts) is False
        else 1.0
    )
    gemm = [(size, rate * share) for size, rate in gemm]
    conv_pts = _results(bench, "conv2d", dtype) or _results(bench, "conv2d", "fp32")
    bw_pts = _results(bench, "triad", "fp32") or _results(bench, "copy", "fp32")
    if gemm:
        notes.append(
            f"here: measured {dtype} matmul rate at {len(gemm)} size(s), interpolated per product size"
        )
    if conv_pts:
        notes.append("here: measured conv2d rate for convolutions")
    back_pts = _results(bench, "conv2d_backward", "fp32")
    back = back_pts[-1][1] if back_pts else None
    if back is not None:
        notes.append(
            f"here: training's backward convolutions at the measured conv2d backward rate "
            f"({back / 1e9:.0f} GFLOP/s, aten.convolution_backward)"
        )
    if bw_pts:
        notes.append(
            "here: measured memory bandwidth for memory-bound operators and the optimizer step"
        )
    conv = (
        conv_pts[-1][1] * share
        if conv_pts
        else (gemm[-1][1] * ASSUMED_HERE_CONV / ASSUMED_HERE_GEMM if gemm else None)
    )
    if gemm and not conv_pts:
        notes.append(
            "no conv2d figure measured: convolutions assumed at 0.58 x the largest matmul rate"
        )
    notes.extend(_kept_note(bench))
    levels = memory_levels(bench) or (None if bw_pts else _busy_levels(bench, notes))
    overhead = _level_notes(levels, notes, unreliable_sweep(bench))
    notes.append(machine_note(facts, bench))
    rates = Rates(
        "here",
        facts.cpu.model if facts else None,
        gemm,
        conv,
        bw_pts[-1][1] if bw_pts else None,
        overhead,
        memory_bytes=mem,
        assumptions=notes,
        basis="measured here (microbenchmark figures)",
        conv_size=_conv_size(bench),
        conv_backward=back,
        conv_backward_size=_conv_size(bench, "conv2d_backward") if back else None,
        levels=levels,
        threads=threads,
        rows_points=[(r, v * share) for r, v in _rows_points(bench, notes, dtype)],
        cache_bytes=float(reachable_l3(facts, threads or 1)) if facts is not None else None,
        single_points=_single_points(bench, threads, notes),
    )
    rates.cold_factors = _cold_factors(bench, rates, notes, dtype)
    # An emulated dtype goes at a share of the fp32 figures; the line is of the figures
    # as measured, so it prices only a dtype measured as itself.
    native = share == 1.0
    rates.cold_row_line = (
        _cold_row_line(bench, notes, dtype) if rates.cold_factors and native else None
    )
    rates.nchw = _nchw_factors(bench, rates, notes)
    rates.strided_backward = _strided_backward(bench, rates, notes)
    return rates


def _unstrided(n: int, c: int, h: int, w: int, cout: int, side: int) -> ConvShape:
    """The padded, unstrided ``side`` x ``side`` convolution of ``c`` to ``cout``
    channels over an ``h`` x ``w`` output, batch ``n``, as the conv counter records it."""
    from hwadvisor.estimate.workload.counting import effective_size

    taps = side * side
    return ConvShape(
        count=1, kernel=[side, side], stride=[1, 1], dilation=[1, 1],
        input_elements=c * h * w, product=[cout, c * taps, h * w],
        flops=2.0 * cout * h * w * c * taps, size=effective_size(n * h * w, cout, c * taps),
    )  # fmt: skip


def _share(
    value: float, work: float, same: ConvShape, n: int, rates: Rates, *, backward: bool,
    nchw: bool = False,
) -> float | None:  # fmt: skip
    """What a convolution figure of ``value`` GFLOP/s for ``work`` FLOPs runs at, as a
    share of the price ``rates`` give ``same`` at batch ``n``. The figure's NCHW call also
    paid its reorders, which the estimate prices on their own
    (``timing.conv_reorder_s``): the share is of what is left of it."""
    from hwadvisor.estimate.timing.rates import MIN_KERNEL_SHARE
    from hwadvisor.estimate.timing.step import conv_reorder_s, onednn_conv_rate

    price = onednn_conv_rate(same, rates, n, backward=backward, nchw=nchw)
    if not price:
        return None
    measured = work / (value * 1e9)
    reorders = conv_reorder_s(rates.levels, same, n, backward=backward)
    return (work / price) / max(measured - reorders, MIN_KERNEL_SHARE * measured)


def _nchw_factors(
    bench: BenchReport, rates: Rates, notes: list[str]
) -> dict[bool, list[tuple[float, float]]]:
    """Forward and backward, (channels, factor) of each reliable ``conv2d_nchw`` figure:
    its share (:func:`_share`) of the price ``rates`` give the same convolution at the
    channels-last figure."""
    from hwadvisor.bench.kernels import conv_backward_work, conv_work

    out: dict[bool, list[tuple[float, float]]] = {}
    for r in bench.results:
        backward = r.kernel == "conv2d_nchw_backward"
        if r.device != "cpu" or r.kernel not in ("conv2d_nchw", "conv2d_nchw_backward"):
            continue
        if r.reliable is False or r.value <= 0 or len(r.shape) != 4 or r.dtype != "fp32":
            continue
        n, c, h, w = r.shape
        work = (conv_backward_work if backward else conv_work)(tuple(r.shape))
        factor = _share(r.value, work, _unstrided(n, c, h, w, c, 3), n, rates, backward=backward)
        if factor is not None:
            out.setdefault(backward, []).append((float(c), factor))
    for pts in out.values():
        pts.sort()
    if out:
        notes.append(
            "here: NCHW convolutions (the layout a model runs in unless it asks for "
            "channels-last) at the measured conv2d_nchw rates, "
            + "; ".join(
                f"{'backward' if back else 'forward'} "
                + ", ".join(f"{c:.0f} channels {f:.2f}x" for c, f in pts)
                for back, pts in sorted(out.items())
            )
            + " the channels-last price of the same shape, read between by channel count"
            " (their reorders priced on their own)"
        )
    return out


def _strided_backward(bench: BenchReport, rates: Rates, notes: list[str]) -> dict[int, float]:
    """By kernel side, each reliable ``conv2d_backward_strided`` figure's share
    (:func:`_share`) of the price ``rates`` give the same convolution unstrided in NCHW,
    the layout the figure ran in (``timing.strided_backward_factor``)."""
    from hwadvisor.bench.kernels import STRIDE, strided_backward_work

    out: dict[int, float] = {}
    for r in bench.results:
        if r.device != "cpu" or r.kernel != "conv2d_backward_strided" or len(r.shape) != 7:
            continue
        n, c, h, w, cout, kh, kw = r.shape
        if r.reliable is False or r.value <= 0 or kh != kw:
            continue
        same = _unstrided(n, c, h // STRIDE, w // STRIDE, cout, kh)
        # the input is the strided call's, twice the output's side
        same = same.model_copy(update={"input_elements": c * h * w})
        work = strided_backward_work(tuple(r.shape))
        share = _share(r.value, work, same, n, rates, backward=True, nchw=True)
        if share is not None:
            out[kh] = share
    if out:
        notes.append(
            "here: the backward of stride-2 convolutions at the measured "
            "conv2d_backward_strided rates, "
            + ", ".join(f"{k}x{k} {v:.2f}x" for k, v in sorted(out.items()))
            + " the unstrided price of the same shape"
        )
    return out


def _single_points(bench: BenchReport, threads: int | None, notes: list[str]) -> list[tuple[float, float]]:  # fmt: skip
    """(size, FLOP/s) of the one-thread small squares, where the job runs on more threads."""
    if not threads or threads <= 1:
        return []
    pts = _results(bench, "matmul_small", "fp32", 1)
    if len(pts) < 2:
        return []
    notes.append(
        "here: convolutions smaller than the measured one lowered along the one-thread curve "
        f"of small squares ({', '.join(f'{s:.0f}' for s, _ in pts)}): a small product's loss "
        "of reuse, without the cost of splitting a small product between threads"
    )
    return pts


def _with_small_squares(
    gemm: list[tuple[float, float]], small: list[tuple[float, float]], notes: list[str]
) -> list[tuple[float, float]]:
    """The matmul curve with the bench's small squares below its smallest sized figure."""
    below = [(size, rate) for size, rate in small if size < gemm[0][0] and rate > 0]
    if not below:
        return gemm
    notes.append(
        f"here: products smaller than {gemm[0][0]:.0f} priced by the measured small squares "
        f"({', '.join(f'{s:.0f}' for s, _ in below)})"
    )
    return below + gemm


def _raised_by_unsteady(
    gemm: list[tuple[float, float]],
    bench: BenchReport,
    dtype: str,
    threads: int | None,
    notes: list[str],
) -> list[tuple[float, float]]:
    """The matmul curve raised to each unreliable matmul figure above it at its size.

    Interference only slows a run, so a figure too unsteady (or of too few runs) to
    price with is still a floor under the rate at its size. Without it the curve is read
    between the steady figures alone, and which of them a quick bench steadied moves the
    estimate: on a 2-vCPU Ice Lake Xeon guest, with the 128 and 256 squares unsteady, the
    256 rate read between 64 and 1024 was 135 GFLOP/s where the unsteady figure ran 225,
    and BERT-base's inference came out at 5.9 samples/s against 8.0 with them."""
    unsteady = [
        *_results(bench, "matmul", dtype, unsteady=True),
        *_results(bench, "matmul_small", dtype, threads, unsteady=True),
    ]
    curve = dict(gemm)
    raised = []
    for size, rate in sorted(unsteady):
        if rate > (curve_at(sorted(curve.items()), size) or 0.0):
            curve[size] = max(curve.get(size, 0.0), rate)
            raised.append(size)
    if raised:
        notes.append(
            "here: the matmul curve raised to the bench's unsteady figures at "
            f"{', '.join(f'{s:.0f}' for s in raised)}, above it there (interference only "
            "slows a run: each is a floor under the rate at its size)"
        )
    return sorted(curve.items())


def _rows_points(
    bench: BenchReport, notes: list[str], dtype: str = "fp32", *, cold: bool = False
) -> list[tuple[float, float]]:
    """(rows, FLOP/s) of the reliable ``matmul_rows`` figures in ``dtype`` (``cold``: the
    ``matmul_rows_cold`` ones, a weight from DRAM each call), ascending rows; the bench
    measures them in fp32, and in bf16 on a CPU with a bf16 dot product."""
    kernel = "matmul_rows_cold" if cold else "matmul_rows"
    pts = [(rows, rate) for rows, rate in _results(bench, kernel, dtype) if rate > 0]
    if len(pts) < 2:
        return []
    if not cold:
        notes.append(
            f"here: {dtype} products of few rows capped by the measured rows curve "
            f"({len(pts)} figures, {pts[0][0]:.0f}-{pts[-1][0]:.0f} rows by a square weight)"
        )
    return pts


def _cold_factors(
    bench: BenchReport, rates: Rates, notes: list[str], dtype: str = "fp32"
) -> list[tuple[float, float]]:
    """(rows, factor) of the reliable ``matmul_rows_cold`` figures in ``dtype``: each
    one's rate over the hot ``matmul_rows`` figures of the same dtype and rows in the
    same bench (their curve read there), at most 1.

    A share, not a rate: the figures' weight is 1,024 square, and a layer's weight is
    wider or narrower. What DRAM adds to a product of few rows is the time to read its
    weight, which grows with the weight as the product's work does at a given number of
    rows, so the share carries over to other widths where a rate would not (on a Zen 4
    guest at two threads, one row by 768- and 1024-square weights from DRAM ran at 0.30
    and 0.36 of the hot rate, 16 rows at 0.55 and 0.66).
    """
    # The hot figures as measured: ``rates.rows_points`` carries an emulated dtype's share.
    hot = _rows_points(bench, [], dtype)
    if len(rates.rows_points) < 2 or len(hot) < 2:
        return []
    factors = [
        (rows, min(1.0, rate / log_interp(hot, rows)))
        for rows, rate in _rows_points(bench, notes, dtype, cold=True)
    ]
    if len(factors) < 2:
        return []
    notes.append(
        "here: with weights past the last-level cache, products of "
        f"{factors[0][0]:.0f}-{factors[-1][0]:.0f} rows run at "
        f"{min(f for _, f in factors):.2f}-{max(f for _, f in factors):.2f} of their rate "
        "in cache (the bench's matmul_rows_cold figures, a weight from DRAM each call)"
    )
    return factors


def _cold_row_line(
    bench: BenchReport, notes: list[str], dtype: str = "fp32"
) -> tuple[float, float, float] | None:
    """(seconds a call, seconds a weight element, the narrower weight's elements) of a
    one-row product with its weight from DRAM: the line through the bench's two reliable
    one-row ``matmul_rows_cold`` figures of ``dtype``, by weights of two widths (None: not
    both measured, or the wider weight not dearer). It prices weights from the narrower
    one up; below it the line's fixed part, an extrapolation, is not a measurement.

    A one-row product does two FLOPs a weight element: what it costs is a fixed part
    (the call, the threads' start) and the weight streamed from DRAM. A share of the
    1,024-square weight's hot rate (:func:`_cold_factors`) charges a wider weight as
    if its elements came as slowly, and a wide model's batch-1 pass came out long: on a
    Zen 3 EPYC guest at two threads, a one-row product streamed a 4 MiB weight at 18-21
    GB/s and 16-64 MiB ones at 23-25 GB/s.
    """
    one: dict[int, float] = {}
    for r in _figures(bench, "matmul_rows_cold", dtype):
        if len(r.shape) == 3 and r.shape[0] == 1 and r.value > 0:
            elements = r.shape[1] * r.shape[2]
            seconds = 2.0 * elements / (r.value * 1e9)  # a call
            one[elements] = min(seconds, one.get(elements, seconds))
    if len(one) < 2:
        return None
    (e1, t1), (e2, t2) = min(one.items()), max(one.items())
    per_element = (t2 - t1) / (e2 - e1)
    if per_element <= 0:
        return None
    fixed = max(0.0, t1 - per_element * e1)
    size = DTYPE_BYTES[dtype]
    notes.append(
        f"here: a one-row {dtype} product with its weight from DRAM at {fixed * 1e6:.0f} µs a "
        f"call plus the weight at {size / per_element / 1e9:.1f} GB/s (the bench's one-row "
        f"matmul_rows_cold figures, {e1 * size / 2**20:.0f} and {e2 * size / 2**20:.0f} MiB "
        "weights; narrower ones at the share below)"
    )
    return fixed, per_element, float(e1)


def _kept_note(bench: BenchReport) -> list[str]:
    """What the estimate says of figures kept from this machine's earlier runs."""
    cpu = [r for r in bench.results if r.device == "cpu"]
    stamps = sorted({r.measured_at for r in cpu if r.measured_at})
    if not stamps:
        return []
    when = stamps[0] if len(stamps) == 1 else f"{stamps[0]} to {stamps[-1]}"
    if all(r.measured_at for r in cpu):
        return [
            f"here: the CPU figures of this machine's last steady benches ({when}), not this "
            "run's: this run's were not steady (a busy machine)"
        ]
    kept = sum(1 for r in cpu if r.measured_at)
    return [
        f"here: {kept} CPU figure(s) from this machine's earlier steady benches ({when}), "
        "faster than this run's (interference only slows a run)"
    ]


def here_rates(facts: Facts | None, bench: BenchReport | None, precision: Precision) -> Rates:
    """Rates of this machine's CPU, from the bench figures or, failing that, the facts."""
    name = facts.cpu.model if facts else None
    notes: list[str] = []
    mem = facts.memory.cgroup_limit_bytes or facts.memory.total_bytes if facts else None
    raw, bench = bench, _usable(bench, facts, notes)
    if bench is not None:
        return _measured(facts, bench, precision, mem, notes)
    peak, dtype = _fallback_peak(facts, precision, notes)
    peak = _evidenced_peak(peak, dtype, raw, notes)
    sized = _stand_in(raw, facts, peak, dtype, notes)
    if raw is not None and sized is not None:
        return _measured(facts, raw, precision, mem, notes, sized)
    if peak is None:
        return Rates(
            "here",
            name,
            [],
            None,
            None,
            CPU_OP_OVERHEAD_S,
            memory_bytes=mem,
            assumptions=["no bench figures and no theoretical peak: time here is unknown"],
            basis="unknown",
        )
    gemm = _floored(peak * 1e9 * ASSUMED_HERE_GEMM, raw, "matmul", dtype, notes)
    conv = _floored(peak * 1e9 * ASSUMED_HERE_CONV, raw, "conv2d", dtype, notes)
    if _bench_dtype(precision) != dtype and raw is not None:
        share = _emulated_share(raw, _bench_dtype(precision), dtype, notes)
        gemm, conv = gemm * share, conv * share
    levels = (memory_levels(raw) or _busy_levels(raw, notes)) if raw is not None else None
    overhead = _level_notes(levels, notes) if levels is not None else CPU_OP_OVERHEAD_S
    notes.append(
        f"no usable bench figures: {ASSUMED_HERE_GEMM:.0%} of the theoretical {dtype} peak "
        f"({peak:.0f} GFLOP/s) assumed for products, {ASSUMED_HERE_CONV:.0%} for convolutions"
        + ("" if levels is not None else "; memory-bound operators not priced")
    )
    return Rates(
        "here",
        name,
        [(1024.0, gemm)],
        conv,
        None,
        overhead,
        memory_bytes=mem,
        assumptions=notes,
        basis="assumed efficiency x theoretical peak (no bench)",
        threads=facts.cpu.usable_cores if facts else None,
        levels=levels,
    )


def _stand_in(
    bench: BenchReport | None, facts: Facts | None, peak: float | None, dtype: str, notes: list[str]
) -> tuple[float, float] | None:
    """(size, FLOP/s) for large products where the bench's sized fp32 ``matmul`` figure
    alone was unreliable and its small products' figures (``matmul_small``,
    ``matmul_rows``) are steady: the assumed share of the peak, floored by the unsteady
    figure, at that figure's size. None where the whole bench is to be set aside.

    Setting the whole bench aside for its one sized figure priced every product at one
    flat rate: on a Xeon guest, an MLP's products of effective size 170 at the 318
    GFLOP/s of an unsteady 2,048 figure, where its steady 128 and 256 squares ran at 229
    and 304.
    """
    if bench is None or peak is None or dtype != "fp32" or _implausible(bench, facts):
        return None
    if not (_results(bench, "matmul_small", "fp32") or _results(bench, "matmul_rows", "fp32")):
        return None
    from hwadvisor.estimate.workload.counting import effective_size

    shapes = [
        r.shape
        for r in bench.results
        if r.device == "cpu" and r.kernel == "matmul" and r.dtype == "fp32" and len(r.shape) == 3
    ]
    size = float(max((effective_size(*s) for s in shapes), default=1024))
    rate = _floored(peak * 1e9 * ASSUMED_HERE_GEMM, bench, "matmul", dtype, notes)
    notes.append(
        f"here: products of size {size:.0f} and over at {rate / 1e9:.0f} GFLOP/s (the sized "
        "fp32 matmul figure was unreliable); the steady figures of smaller products price "
        "the smaller ones"
    )
    return size, rate


def _floored(
    assumed: float, bench: BenchReport | None, kernel: str, dtype: str, notes: list[str]
) -> float:
    """``assumed`` FLOP/s, or the fastest ``kernel`` figure the bench measured at ``dtype``
    where that is more, steady or not: interference only slows a run, so a figure too
    unsteady to price with is still a floor under the rate the machine reaches."""
    if bench is None:
        return assumed
    best = _fastest_any(bench, (kernel,), dtype) * 1e9
    if best <= assumed:
        return assumed
    notes.append(
        f"here: the bench's fastest {dtype} {kernel} figure ({best / 1e9:.0f} GFLOP/s), too "
        f"unsteady to price with, is above the assumed {assumed / 1e9:.0f}: it is the floor used"
    )
    return best


def _fastest_any(bench: BenchReport, kernels: tuple[str, ...], dtype: str) -> float:
    """The fastest CPU figure (GFLOP/s) of ``kernels`` at ``dtype``, steady or not; 0: none."""
    return max(
        (
            r.value
            for r in bench.results
            if r.device == "cpu"
            and r.kernel in kernels
            and r.dtype.lower() in _DTYPE_ALIASES.get(dtype, (dtype,))
            and r.unit == "GFLOP/s"
        ),
        default=0.0,
    )


def _emulated_share(
    bench: BenchReport,
    job: str,
    native: str,
    notes: list[str],
    curve: list[tuple[float, float]] | None = None,
) -> float:
    """The rate of ``job``'s products (bf16 on a CPU without a bf16 dot product) as a
    share of the ``native`` (fp32) rate: the bench's largest ``job`` matmul figure over
    its ``native`` figure of the same shape in the same run, else over ``curve`` (the
    run's fp32 matmul curve) at its size; 1 where it timed no such figure.

    Without native support the math is converted to fp32 and back, which runs below the
    fp32 rate (OpenVINO's bfloat16 inference guide: on AVX-512 without ``avx512_bf16``,
    bf16 "leads to significant performance degradation in comparison with FP32"; oneDNN
    v0.20's notes: "On the processors with Intel AVX512 support bfloat16 arithmetic is
    emulated"). How far below is this machine's to say. Both figures of one run met the
    same interference, so their ratio holds where neither was steady enough to price
    with: on an Ice Lake Xeon guest at a load of 3 on 2 cores, bf16 ran at 55 GFLOP/s
    and fp32 at 229, 0.24x."""
    from hwadvisor.estimate.workload.counting import effective_size

    pairs = {
        tuple(r.shape): r.value
        for r in bench.results
        if r.device == "cpu" and r.kernel == "matmul" and r.dtype.lower() == native and r.value > 0
    }
    found = []
    for r in bench.results:
        if r.device != "cpu" or r.kernel != "matmul" or r.dtype.lower() != job or len(r.shape) != 3:
            continue
        size = float(effective_size(*r.shape))
        if tuple(r.shape) in pairs:
            found.append((size, r.value / pairs[tuple(r.shape)], r.shape, "figure"))
        elif curve and (at := curve_at(curve, size)):
            found.append((size, r.value * 1e9 / at, r.shape, "curve"))
    if not found:
        notes.append(
            f"no {job} matmul figure: the {native} rate prices the {job} products, a ceiling "
            f"(emulated {job} runs below it)"
        )
        return 1.0
    _, ratio, shape, against = max(found, key=lambda f: (f[0], f[3] == "figure"))
    share = min(ratio, 1.0)
    notes.append(
        f"{job} products at {share:.2f}x the {native} rate, the ratio of the bench's {job} "
        f"matmul figure at {'x'.join(map(str, shape))} to its {native} "
        f"{'figure' if against == 'figure' else 'curve'} there in this run (emulated {job} "
        f"converts to {native} and back)"
    )
    return share


def _fallback_peak(
    facts: Facts | None, precision: Precision, notes: list[str]
) -> tuple[float | None, str]:
    """The theoretical peak (GFLOP/s) for the job's precision and its dtype: bf16 where
    the CPU has a native bf16 dot product (its bf16 peak is above the fp32 one), else
    fp32: without one the facts' bf16 peak is the fp32 rate, a ceiling emulation misses."""
    if facts is None:
        return None, "fp32"
    peaks = facts.cpu.peak_gflops
    native = peaks.bf16 and native_bf16(facts) is not False
    if _bench_dtype(precision) == "bf16" and native:
        return peaks.bf16, "bf16"
    if _bench_dtype(precision) == "bf16":
        notes.append("no native bf16 dot product here: the fp32 peak is used")
    return peaks.fp32, "fp32"


def _evidenced_peak(
    peak: float | None, dtype: str, bench: BenchReport | None, notes: list[str]
) -> float | None:
    """The facts' theoretical peak (GFLOP/s) at ``dtype``, raised to the fastest figure of
    that dtype the bench measured at all, steady or not.

    The facts' peak rests on the base clock. A figure above it shows the cores ran faster
    (boost), and interference only ever slows a run, so the fastest figure is a floor
    under the real peak even when it was too unsteady to price anything with."""
    if peak is None or bench is None:
        return peak
    best = _fastest_any(bench, ("matmul", "conv2d"), dtype)
    if best <= peak:
        return peak
    notes.append(
        f"the bench's fastest {dtype} figure ({best:.0f} GFLOP/s) is above the theoretical peak "
        f"at the base clock ({peak:.0f} GFLOP/s): the cores ran faster than base, so that "
        "figure is taken as the peak"
    )
    return float(best)
