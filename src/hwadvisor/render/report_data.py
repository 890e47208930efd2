"""The rows the HTML report charts, read from the advice, estimate and bench documents.

Pure: documents in, :mod:`hwadvisor.render.charts` rows out. Fields that newer
documents carry (an estimate's ``cost``, ``memory.lower_bytes``/``upper_bytes``) are
read when present and skipped when not, so an older document still renders.

The roofline places each bench figure at its arithmetic intensity: FLOPs (ops for int8)
over the fewest bytes the kernel must move, as :mod:`hwadvisor.bench.kernels` counts
the work. A matmul (M,K)x(K,N) moves its two inputs and its output (int32 for int8); a
3x3 convolution its input, output and weights; a triad ``a = b + s*c`` does 2 FLOPs per
12 bytes. The ceilings are the theoretical peaks the bench stored with its figures; a
device whose peak is unknown gets the best measured figure, drawn dashed.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from hwadvisor.models.workload import DTYPE_BYTES
from hwadvisor.render.charts import MemoryRow, OptionRow, Roof, RoofPoint
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice, Alternative
    from hwadvisor.models.bench import BenchReport, BenchResult
    from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
    from hwadvisor.models.workload import Workload

GIB = 2**30
COMPUTE_KERNELS = ("matmul", "conv2d")
STREAM_KERNELS = ("copy", "triad")
#: FLOPs per byte of the triad a = b + s*c (one multiply and one add per 12 bytes, fp32).
TRIAD_INTENSITY = 2 / 12


def label_of(device: str, name: str | None, gpus: int) -> str:
    """How an option is named on a chart: 'this machine (AMD EPYC)', 'NVIDIA T4 16GB x8'."""
    if device == "here":
        return f"this machine ({name})" if name else "this machine"
    return (name or device) + (f" ×{gpus}" if gpus > 1 else "")


def _finite(value: float | None, *, low: float = 0.0, strict: bool = True) -> float | None:
    """``value`` when it is finite and above ``low`` (or at it, not ``strict``), else None:
    a chart cannot place it (a log axis no 0 s, no axis an infinite time)."""
    if value is None or not math.isfinite(value):
        return None
    return float(value) if value > low or (value == low and not strict) else None


def _unique(labels: Iterable[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} ({seen[label]})")
    return out


def time_basis(workload: Workload) -> tuple[str, float | None, str]:
    """What the time chart shows (job or batch), and the deadline or latency target."""
    if workload.task.value == "infer":
        target = workload.latency_ms / 1000 if workload.latency_ms else None
        text = f"latency target {duration(target)}" if target else ""
        return f"time per batch of {workload.batch_size} (log scale)", target, text
    target = workload.deadline_hours * 3600
    return "time of the whole job (log scale)", target, f"deadline {duration(target)}"


def _status(seconds: float | None, fits: bool | None, limit_s: float | None, infer: bool) -> str:
    if fits is False:
        return "does not fit in memory"
    if limit_s is None or seconds is None:
        return "no deadline"
    word = "latency target" if infer else "deadline"
    return f"meets the {word}" if seconds <= limit_s else f"misses the {word}"


def _cost(cost: Any) -> tuple[float | None, float | None, str, str]:
    """The on-demand and spot dollars of a ``cost`` object, its text (instance and the
    price's date) and a short label for the bar."""
    usd = getattr(cost, "on_demand_usd", None)
    if usd is None:
        return None, None, "", ""
    spot = getattr(cost, "spot_usd", None)
    where = getattr(cost, "instance", None)
    date = getattr(cost, "price_date", None)
    text = f"${usd:,.2f}" + (f" on {where}" if where else "") + (f" ({date} price)" if date else "")
    label = f"${usd:,.2f}" + (f" · {where}" if where else "")
    return _finite(usd, strict=False), _finite(spot, strict=False), text, label


def estimate_options(report: EstimateReport) -> list[OptionRow]:
    """One row per device estimate: time (job or batch) and on-demand cost when priced."""
    _, limit_s, _ = time_basis(report.workload)
    infer = report.workload.task.value == "infer"
    labels = _unique(label_of(e.device, e.name, e.gpus) for e in report.estimates)
    rows = []
    for label, est in zip(labels, report.estimates, strict=True):
        seconds = _finite(est.step_time_s if infer else est.total_time_s)
        usd, spot, cost_text, cost_label = _cost(getattr(est, "cost", None))
        status = _status(seconds, est.fits, limit_s, infer)
        text = duration(seconds) + (" (measured)" if est.measured else "")
        rows.append(OptionRow(label, seconds, text, status, usd, spot, cost_text, cost_label))
    return _by_time(rows)


def advice_options(advice: Advice) -> list[OptionRow]:
    """This machine and each alternative the advice weighed, by total time of the job."""
    limit_s = advice.workload.deadline_hours * 3600
    here = advice.estimates.here
    items: list[DeviceEstimate | Alternative] = [here] if here is not None else []
    items += advice.estimates.alternatives
    labels = _unique(label_of(i.device, i.name, i.gpus) for i in items)
    rows = []
    for label, item in zip(labels, items, strict=True):
        seconds = _finite(getattr(item, "total_time_s", None) or getattr(item, "time_s", None))
        fits = getattr(item, "fits", None) if item is here else getattr(item, "memory_fit", None)
        usd, spot, cost_text, cost_label = _cost(getattr(item, "cost", None))
        status = _status(seconds, fits, limit_s, infer=False)
        time_text = duration(seconds)
        rows.append(OptionRow(label, seconds, time_text, status, usd, spot, cost_text, cost_label))
    return _by_time(rows)


def _by_time(rows: list[OptionRow]) -> list[OptionRow]:
    return sorted(rows, key=lambda r: (r.seconds is None, r.seconds or 0.0))


def _fit_status(fits: bool | None) -> str:
    return "fit unknown" if fits is None else "fits" if fits else "does not fit"


def _memory_row(
    label: str, used: int, capacity: int | None, fits: bool | None, memory: Any
) -> MemoryRow:
    lower = getattr(memory, "lower_bytes", None)
    upper = getattr(memory, "upper_bytes", None)
    text = human_bytes(used) + (f" of {human_bytes(capacity)}" if capacity else "")
    if lower is not None and upper is not None:
        text += f" (range {human_bytes(lower)}–{human_bytes(upper)})"
    return MemoryRow(
        label=label,
        used_gib=used / GIB,
        capacity_gib=capacity / GIB if capacity else None,
        status=_fit_status(fits),
        text=text,
        lower_gib=lower / GIB if lower is not None else None,
        upper_gib=upper / GIB if upper is not None else None,
    )


def estimate_memory(report: EstimateReport) -> list[MemoryRow]:
    """The job's memory against each device's capacity (per GPU for several GPUs)."""
    labels = _unique(label_of(e.device, e.name, e.gpus) for e in report.estimates)
    return [
        _memory_row(label, e.memory_bytes, e.device_memory_bytes, e.fits, e.memory)
        for label, e in zip(labels, report.estimates, strict=True)
        if e.memory_bytes is not None
    ]


def catalog_capacity(device: str) -> int | None:
    """The memory of a shipped catalog device, or None when it is not in the catalog."""
    from hwadvisor.catalog import load_devices
    from hwadvisor.errors import HwadvisorError

    with contextlib.suppress(HwadvisorError, OSError):
        entry = load_devices().get(device)
        return entry.memory_bytes if entry is not None else None
    return None


def advice_memory(advice: Advice) -> list[MemoryRow]:
    """This machine's and each alternative's memory, one row per distinct device."""
    rows, seen = [], set()
    here = advice.estimates.here
    if here is not None and here.memory_bytes is not None:
        label = label_of(here.device, here.name, here.gpus)
        rows.append(
            _memory_row(label, here.memory_bytes, here.device_memory_bytes, here.fits, here.memory)
        )
    for alt in advice.estimates.alternatives:
        if alt.memory_bytes is None or (alt.device, alt.memory_bytes) in seen:
            continue
        seen.add((alt.device, alt.memory_bytes))
        capacity = catalog_capacity(alt.device)
        rows.append(
            _memory_row(alt.name or alt.device, alt.memory_bytes, capacity, alt.memory_fit, None)
        )
    return rows


def intensity(result: BenchResult) -> float | None:
    """FLOPs (ops) per byte of one figure's kernel at its shape, or None off the roofline."""
    size = DTYPE_BYTES.get(result.dtype)
    if result.kernel == "triad":
        return TRIAD_INTENSITY
    if size is None:
        return None
    if result.kernel == "matmul" and len(result.shape) == 3:
        m, n, k = result.shape
        out = 4 if result.dtype == "int8" else size
        return 2.0 * m * n * k / (size * (m * k + k * n) + out * m * n)
    if result.kernel == "conv2d" and len(result.shape) == 4:
        b, c, h, w = result.shape
        return 2.0 * b * c * h * w * c * 9 / (size * (2 * b * c * h * w + c * c * 9))
    return None


def roof_points(bench: BenchReport, device: str) -> list[RoofPoint]:
    """The compute and triad figures of ``device`` at their intensity (FLOP/s, not GFLOP/s)."""
    points = []
    for r in bench.results:
        ai = intensity(r) if r.device == device else None
        if ai is None or _finite(r.value) is None:
            continue
        flops = r.value * 1e9 * (ai if r.kernel == "triad" else 1.0)
        shape = "x".join(str(s) for s in r.shape)
        eff = f", {r.efficiency:.0%} of peak" if r.efficiency is not None else ""
        steady = ", too unsteady to rely on" if getattr(r, "reliable", None) is False else ""
        text = f"{r.value:,.3g} {r.unit}{eff}{steady}"
        points.append(
            RoofPoint(f"{r.kernel} {r.dtype} {shape}", r.kernel, r.dtype, ai, flops, text)
        )
    return points


def _best(
    results: Sequence[BenchResult], kernels: Sequence[str], dtype: str | None
) -> tuple[float | None, float | None]:
    """(theoretical peak, best measured value) over the figures of ``kernels``."""
    hits = [r for r in results if r.kernel in kernels and (dtype is None or r.dtype == dtype)]
    peaks = [r.peak for r in hits if r.peak]
    return (max(peaks) if peaks else None), max((r.value for r in hits), default=None)


def roofs(bench: BenchReport, device: str) -> list[Roof]:
    """One ceiling per dtype measured on ``device``; none without a bandwidth figure."""
    results = [r for r in bench.results if r.device == device]
    bw_peak, bw_best = _best(results, STREAM_KERNELS, None)
    bandwidth = bw_peak or bw_best
    if not bandwidth:
        return []
    shown = f"{bandwidth:,.0f}" if bandwidth >= 100 else f"{bandwidth:.3g}"
    bw_text = f"memory slope: {shown} GB/s " + ("peak" if bw_peak else "measured (peak unknown)")
    out = []
    dtypes = sorted({r.dtype for r in results if r.kernel in COMPUTE_KERNELS}, key=_dtype_key)
    for dtype in dtypes:
        peak, best = _best(results, COMPUTE_KERNELS, dtype)
        top = peak or best
        if not top or not math.isfinite(top):
            continue
        label = f"{dtype} {_rate(top, dtype)} " + ("peak" if peak else "best measured")
        out.append(Roof(dtype, top * 1e9, bandwidth * 1e9, label, not peak, bw_text, not bw_peak))
    return out


def _rate(giga: float, dtype: str) -> str:
    """A compute rate given in G(FL)OP/s, in T above 1,000: '166.2 GFLOP/s', '989 TFLOP/s'."""
    unit = "OP/s" if dtype == "int8" else "FLOP/s"
    return f"{giga / 1000:,.4g} T{unit}" if giga >= 1000 else f"{giga:,.4g} G{unit}"


def _dtype_key(dtype: str) -> tuple[int, str]:
    order = list(DTYPE_BYTES)
    return (order.index(dtype) if dtype in order else len(order), dtype)


def bench_devices(bench: BenchReport) -> list[tuple[str, str]]:
    """(device, title) of each device with figures, in the bench's order."""
    names = {d.device: d.name for d in bench.devices}
    order = [d.device for d in bench.devices] + [r.device for r in bench.results]
    seen: list[str] = []
    for dev in order:
        if dev not in seen and any(r.device == dev for r in bench.results):
            seen.append(dev)
    return [(dev, f"{dev}: {names[dev]}" if names.get(dev) else dev) for dev in seen]
