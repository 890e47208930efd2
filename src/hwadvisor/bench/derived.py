"""Evidence drawn from the figures: speed-ups between dtypes and between devices.

A cause (AMX, AVX-512 BF16, VNNI) is named only when the probed CPU features say the CPU
has it; a slow-down is said as plainly as a speed-up, with the reason the features give.
Only figures the bench judged reliable are compared (``BenchResult.reliable``), at the
same size where both were measured there: an unsteady figure is listed, and the
comparison it would have made is left out.
"""

from __future__ import annotations

import math

from hwadvisor.bench.reliability import LOAD_OVER_THREADS
from hwadvisor.models.bench import BenchResult, Derived, shape_text
from hwadvisor.models.facts import CpuFeatures, Facts


def _steady(results: list[BenchResult], device: str, kernel: str, dtype: str) -> list[BenchResult]:
    """The figures of one kind the bench judged reliable."""
    key = (device, kernel, dtype)
    return [r for r in results if (r.device, r.kernel, r.dtype) == key and r.reliable is not False]


def _best(results: list[BenchResult], device: str, kernel: str, dtype: str) -> BenchResult | None:
    return max(_steady(results, device, kernel, dtype), key=lambda r: r.value, default=None)


def _unreliable(results: list[BenchResult], device: str) -> Derived | None:
    bad = [r for r in results if r.device == device and r.reliable is False]
    if not bad:
        return None
    names = list(dict.fromkeys(f"{r.kernel} {r.dtype}" for r in bad))
    listed = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
    where = "CPU" if device == "cpu" else device
    many = len(bad) > 1
    return Derived(
        id=f"{device}.unreliable_figures",
        ratio=round(len(bad) / len([r for r in results if r.device == device]), 3),
        text=f"{len(bad)} {where} figure{'s were' if many else ' was'} unsteady ({listed}): "
        f"{'they are' if many else 'it is'} kept with {'their' if many else 'its'} spread, "
        "and not compared",
    )


def _cpu_cause(dtype: str, f: CpuFeatures | None) -> tuple[str | None, str | None]:
    """(what makes this dtype fast, what it lacks) from the probed features."""
    if f is None:
        return None, "its CPU features were not probed"
    if dtype == "bf16":
        if f.amx_bf16:
            return "AMX", None
        if f.avx512_bf16:
            return "AVX-512 BF16", None
        if f.bf16:
            return "Arm BF16 instructions", None
        return None, "no native bf16 matrix instructions (no AMX, no AVX-512 BF16)"
    if dtype == "int8":
        if f.amx_int8:
            return "AMX", None
        if f.avx512_vnni or f.avx_vnni:
            return "VNNI", None
        if f.i8mm:
            return "Arm I8MM", None
        return None, "no int8 dot-product instructions (no AMX, no VNNI)"
    if dtype == "fp16":
        if f.amx_fp16 or f.avx512_fp16:
            return "native fp16 math", None
        return None, "no native fp16 matrix instructions (no AMX-FP16, no AVX-512 FP16)"
    return None, None


def _how(ratio: float) -> str:
    if ratio >= 1.1:
        return f"runs {ratio:.1f}x faster than"
    if ratio <= 1 / 1.1:
        return f"runs {1 / ratio:.1f}x slower than"
    return "runs about as fast as"


def _pair(
    results: list[BenchResult], device: str, kernel: str, dtype: str
) -> tuple[BenchResult, BenchResult] | None:
    """The reliable fp32 and ``dtype`` figures to compare: at the largest size both were
    measured at (a ladder's sizes run at different rates), else the best of each."""

    def steady(d: str) -> dict[tuple[int, ...], BenchResult]:
        return {tuple(r.shape): r for r in _steady(results, device, kernel, d)}

    base, other = steady("fp32"), steady(dtype)
    common = sorted(set(base) & set(other), key=math.prod)
    if common:
        return base[common[-1]], other[common[-1]]
    if not base or not other:
        return None
    return max(base.values(), key=lambda r: r.value), max(other.values(), key=lambda r: r.value)


def _cause_text(dtype: str, ratio: float, facts: Facts | None) -> str:
    """What the probed CPU features say of a ``dtype`` / fp32 ``ratio``."""
    has, lacks = _cpu_cause(dtype, facts.cpu.features if facts is not None else None)
    text = ""
    if has and ratio >= 1.1:
        text = f" ({has})"
    elif facts is None and ratio < 1.1:
        text = f" ({lacks})"
    elif lacks and ratio < 1.1:
        text = f": it has {lacks}"
    return text + ("; prefer fp32 here" if ratio < 1 / 1.1 else "")


def _dtype_ratio(
    results: list[BenchResult], device: str, kernel: str, dtype: str, facts: Facts | None
) -> Derived | None:
    pair = _pair(results, device, kernel, dtype)
    if pair is None or pair[0].value <= 0:
        return None
    base, fast = pair
    ratio = fast.value / base.value
    where = "this CPU" if device == "cpu" else device
    size = f" at {shape_text(kernel, base.shape)}" if base.shape == fast.shape else ""
    text = f"{dtype} {kernel} {_how(ratio)} fp32{size} on {where}"
    if device == "cpu":
        text += _cause_text(dtype, ratio, facts)
    kind = "" if kernel == "matmul" else f"{kernel}_"
    return Derived(id=f"{device}.{kind}{dtype}_over_fp32", ratio=round(ratio, 3), text=text)


def _efficiency(results: list[BenchResult], device: str) -> Derived | None:
    r = _best(results, device, "matmul", "fp32")
    if r is None or r.efficiency is None or r.peak is None:
        return None
    where = "this CPU's" if device == "cpu" else f"{device}'s"
    text = f"fp32 matmul reaches {r.efficiency:.{0 if r.efficiency >= 0.1 else 1}%} of {where} theoretical peak ({r.peak:,.0f} {r.unit})"
    if r.efficiency > 1.0:
        # Only possible when the peak is understated: a CPU whose top clock is unknown
        # (a VM hides it) gets its peak from the base clock, and its cores boost past it.
        text += (
            ": more than the peak, so the clock the peak assumes is too low"
            " (the top clock is unknown here, so the base clock was used)"
            if device == "cpu"
            else ": more than the peak, so the catalog's peak for it is too low"
        )
    return Derived(id=f"{device}.fp32_matmul_of_peak", ratio=round(r.efficiency, 3), text=text)


def _over_cpu(results: list[BenchResult], device: str) -> list[Derived]:
    out: list[Derived] = []
    cpu = _best(results, "cpu", "matmul", "fp32")
    if cpu is not None and cpu.value > 0:
        for dtype in ("fp32", "tf32", "bf16", "fp16"):
            r = _best(results, device, "matmul", dtype)
            if r is not None:
                ratio = r.value / cpu.value
                text = f"{device}'s {dtype} matmul throughput is {ratio:,.0f}x this CPU's fp32"
                out.append(
                    Derived(id=f"{device}.{dtype}_over_cpu_fp32", ratio=round(ratio, 3), text=text)
                )
    copy_cpu = _best(results, "cpu", "copy", "fp32")
    copy_dev = _best(results, device, "copy", "fp32")
    if copy_cpu is not None and copy_dev is not None and copy_cpu.value > 0:
        ratio = copy_dev.value / copy_cpu.value
        text = f"{device}'s memory copy bandwidth is {ratio:,.0f}x this CPU's ({copy_dev.value:,.0f} vs {copy_cpu.value:,.1f} GB/s)"
        out.append(Derived(id=f"{device}.copy_over_cpu_copy", ratio=round(ratio, 3), text=text))
    return out


def _busy(results: list[BenchResult], load_1m: float | None) -> Derived | None:
    threads = next((r.threads for r in results if r.device == "cpu" and r.threads), None)
    if load_1m is None or not threads or load_1m <= threads:
        return None
    return Derived(
        id=LOAD_OVER_THREADS,
        ratio=round(load_1m / threads, 3),
        text=f"the machine was busy (load average {load_1m:.1f} on {threads} threads used): other programs competed, so the CPU figures are lower than an idle machine gives",
    )


def derive(
    results: list[BenchResult], facts: Facts | None, *, load_1m: float | None = None
) -> list[Derived]:
    """All comparisons the figures support, per device, then each accelerator against the CPU."""
    busy = _busy(results, load_1m)
    out = [busy] if busy is not None else []
    caveat = " (on a busy machine: repeat when it is idle)" if busy is not None else ""
    for device in dict.fromkeys(r.device for r in results):
        kinds = [("matmul", d) for d in ("tf32", "bf16", "fp16", "int8")] + [("conv2d", "bf16")]
        ratios = [_dtype_ratio(results, device, k, d, facts) for k, d in kinds]
        if device == "cpu" and caveat:
            ratios = [d.model_copy(update={"text": d.text + caveat}) if d else d for d in ratios]
        out += [d for d in ratios if d is not None]
        more = (_efficiency(results, device), _unreliable(results, device))
        out += [d for d in more if d is not None]
        if device != "cpu":
            out += _over_cpu(results, device)
    return out
