"""Derived facts from a microbenchmark report: best figures, speed-up ratios, load.

``bench.<cpu|gpu|mps>.<kernel>.<dtype>`` is the best measured figure of that kernel
(GFLOP/s, GOP/s for int8, GB/s for the memory kernels) on that class of device; the
``*_over_fp32`` ratios are the report's own where it has them (measured in one run,
so less noisy), else the quotient of the best figures.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.engine.derive import Context, FactSpec, FactType, Registry
from hwadvisor.models.bench import BenchReport

BENCH_DEVICES = ("cpu", "gpu", "mps")
BENCH_KERNELS = ("matmul", "conv2d", "copy", "triad", "h2d", "d2h")
BENCH_DTYPES = ("fp32", "tf32", "bf16", "fp16", "int8")
_RATIO_DTYPES = ("tf32", "bf16", "fp16", "int8")
_MEMORY_KERNELS = ("copy", "triad", "h2d", "d2h")
#: Ratios the benchmark derives itself (``BenchReport.derived`` ids past the device).
_MEASURED = {
    "load_over_threads": "load average / benchmark threads while measuring (>1: the machine was busy)",
    "fp32_matmul_of_peak": "measured fp32 matmul / theoretical fp32 peak",
}


@dataclass(frozen=True)
class BenchView:
    """A bench report (or none) with its best figure per path, computed once."""

    report: BenchReport | None
    best: Context = field(default_factory=dict)
    threads: Context = field(default_factory=dict)

    @classmethod
    def of(cls, report: BenchReport | None) -> BenchView:
        """The view of ``report``: the best figure of each kernel, dtype and device class."""
        best: Context = {}
        threads: Context = {}
        for r in report.results if report is not None else []:
            dev = device_class(r.device)
            if dev is None:
                continue
            if r.threads is not None:
                threads[f"bench.{dev}.threads"] = r.threads
            if r.kernel in BENCH_KERNELS and r.dtype in BENCH_DTYPES:
                key = f"bench.{dev}.{r.kernel}.{r.dtype}"
                best[key] = max(best.get(key) or 0.0, r.value)
        return cls(report, best, threads)


def device_class(device: str) -> str | None:
    """``cpu``, ``mps`` or ``gpu`` (CUDA, ROCm, XPU) for a bench device id; None otherwise."""
    if device in ("cpu", "mps"):
        return device
    if device.startswith(("cuda", "xpu", "rocm", "hip")):
        return "gpu"
    return None


BENCH: Registry[BenchView] = Registry("the microbenchmark report")


@BENCH.fact("bench.available", FactType.BOOL, "a microbenchmark report was used")
def available(view: BenchView) -> bool:
    """A bench report was given."""
    return view.report is not None


def _figure_specs() -> list[FactSpec]:
    out = []
    for dev in BENCH_DEVICES:
        for kernel in BENCH_KERNELS:
            unit = "GB/s" if kernel in _MEMORY_KERNELS else "GFLOP/s (GOP/s for int8)"
            for dtype in BENCH_DTYPES:
                doc = f"best measured {kernel} {dtype} on {dev}, {unit}"
                path = f"bench.{dev}.{kernel}.{dtype}"
                out.append(FactSpec(path, FactType.NUMBER, doc, derived=True))
        out.append(
            FactSpec(
                f"bench.{dev}.threads", FactType.NUMBER, "threads the benchmark used", derived=True
            )
        )
    return out


@BENCH.family(_figure_specs())
def figures(view: BenchView) -> Context:
    """The best figure of every kernel, dtype and device class, and the threads used."""
    return {**view.best, **view.threads}


def _ratio_specs() -> list[FactSpec]:
    out = []
    for dev in BENCH_DEVICES:
        for dtype in _RATIO_DTYPES:
            doc = f"measured matmul {dtype} / fp32 speed-up on {dev}"
            out.append(
                FactSpec(f"bench.{dev}.{dtype}_over_fp32", FactType.NUMBER, doc, derived=True)
            )
        for name, doc in _MEASURED.items():
            out.append(FactSpec(f"bench.{dev}.{name}", FactType.NUMBER, doc, derived=True))
    return out


_RATIO_PATHS = frozenset(s.path for s in _ratio_specs())


@BENCH.family(_ratio_specs())
def ratios(view: BenchView) -> Context:
    """Matmul speed-ups over fp32 and the load and peak fractions, the report's own first."""
    out: Context = {}
    for dev in BENCH_DEVICES:
        base = view.best.get(f"bench.{dev}.matmul.fp32")
        for dtype in _RATIO_DTYPES:
            other = view.best.get(f"bench.{dev}.matmul.{dtype}")
            if base and other:
                out[f"bench.{dev}.{dtype}_over_fp32"] = other / base
    for d in view.report.derived if view.report is not None else []:
        path = f"bench.{d.id}"
        if path in _RATIO_PATHS:
            out[path] = d.ratio
    return out
