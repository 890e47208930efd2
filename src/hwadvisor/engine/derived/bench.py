"""Derived facts from a microbenchmark report: best figures, speed-up ratios, load.

``bench.<cpu|gpu|mps>.<kernel>.<dtype>`` is the best *reliable* figure of that kernel
(GFLOP/s, GOP/s for int8, GB/s for the memory kernels) on that class of device: a
figure the bench marked ``reliable: false`` (too unsteady, too few runs, a busy
machine) draws no conclusion. The ``*_over_fp32`` ratios are the report's own where it
has them (measured in one run, so less noisy), else the quotient of the best figures.

Where a CPU matmul ratio cannot be measured because a figure was unreliable, it falls
back to the theoretical peaks the bench recorded beside each figure, times the achieved
fraction of each path (:data:`CPU_FRACTIONS`), and ``*_over_fp32_assumed`` says so:

- fp32 through oneDNN/MKL on x86 reaches 68-97% of the FMA peak (oneDNN issue #1115,
  uxlfoundation/oneDNN, 2021-09-16: single-core Xeon Platinum 8180 GEMM); the low end,
  0.7, is taken;
- AMX bf16 ran 2x faster than AVX-512 fp32 over 112 cores in OpenBLAS (Fixstars, "Intel
  AMX (Advanced Matrix Extension) Explained (Introduction)", 2023-08-21): against a 16x
  peak ratio that is 2/16 of fp32's fraction, 0.7 x 2 / 16 = 0.0875 of the AMX peak;
  int8 on AMX is given the same fraction;
- a dtype without native instructions (the probe counts it at the fp32 rate, "at best")
  is given fp32's fraction, so its ratio is at most 1: "not faster", never "faster";
- paths with no published fraction (AVX-512 BF16, VNNI, Arm dot products, int8
  without dot-product instructions) get no assumed ratio: unknown.
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
    "end_over_start": "fp32 matmul timed again when the run ended / its figure at the start (far from 1: the machine's speed moved while measuring)",
}


#: Achieved fraction of the theoretical matmul peak assumed per path when the measured
#: figure is unreliable (sources in the module docstring).
FP32_FRACTION = 0.7
AMX_FRACTION = FP32_FRACTION * 2.0 / 16.0
#: Peak ratio over fp32 from which a path is a matrix unit (AMX: 16x bf16, 32x int8).
AMX_PEAK_RATIO = 8.0


@dataclass(frozen=True)
class BenchView:
    """A bench report (or none) with its best reliable figure per path, computed once."""

    report: BenchReport | None
    best: Context = field(default_factory=dict)
    threads: Context = field(default_factory=dict)
    #: The theoretical peak recorded beside each figure, reliable or not (same keys).
    peaks: Context = field(default_factory=dict)
    #: Paths whose only figures were unreliable.
    unreliable: frozenset[str] = frozenset()

    @classmethod
    def of(cls, report: BenchReport | None) -> BenchView:
        """The view of ``report``: the best reliable figure of each kernel, dtype and device."""
        best: Context = {}
        threads: Context = {}
        peaks: Context = {}
        doubtful: set[str] = set()
        for r in report.results if report is not None else []:
            dev = device_class(r.device)
            if dev is None:
                continue
            if r.threads is not None:
                threads[f"bench.{dev}.threads"] = r.threads
            if r.kernel in BENCH_KERNELS and r.dtype in BENCH_DTYPES:
                key = f"bench.{dev}.{r.kernel}.{r.dtype}"
                if r.peak:
                    peaks[key] = r.peak
                if r.reliable is False:
                    doubtful.add(key)
                    continue
                best[key] = max(best.get(key) or 0.0, r.value)
        return cls(report, best, threads, peaks, frozenset(doubtful - set(best)))

    def assumed_ratio(self, dev: str, dtype: str) -> float | None:
        """The CPU ``dtype``/fp32 matmul ratio from the peaks, for unreliable figures only."""
        base, other = f"bench.{dev}.matmul.fp32", f"bench.{dev}.matmul.{dtype}"
        if dev != "cpu" or not ({base, other} & self.unreliable):
            return None
        p32, p = self.peaks.get(base), self.peaks.get(other)
        if not p32 or not p:
            return None
        peak_ratio = p / p32
        if peak_ratio <= 1.0:
            return peak_ratio  # no native instructions: at best the fp32 rate
        if peak_ratio >= AMX_PEAK_RATIO:
            return peak_ratio * AMX_FRACTION / FP32_FRACTION
        return None  # no published fraction for this path


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
            doc = f"measured matmul {dtype} / fp32 speed-up on {dev} (on a CPU whose figure was unreliable: from the theoretical peaks)"
            out.append(
                FactSpec(f"bench.{dev}.{dtype}_over_fp32", FactType.NUMBER, doc, derived=True)
            )
            doc = f"the {dtype} / fp32 ratio on {dev} comes from the theoretical peaks x achieved fractions, because a measured figure was unreliable"
            out.append(
                FactSpec(f"bench.{dev}.{dtype}_over_fp32_assumed", FactType.BOOL, doc, derived=True)
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
    for dev in BENCH_DEVICES:
        for dtype in _RATIO_DTYPES:
            path = f"bench.{dev}.{dtype}_over_fp32"
            assumed = view.assumed_ratio(dev, dtype)
            if assumed is not None:
                # An unreliable figure's measured ratio (the report's own too) is not used.
                out[path] = assumed
            if out.get(path) is not None:
                out[f"{path}_assumed"] = assumed is not None
    return out


#: The rules' thresholds on a CPU matmul ratio over fp32: from PAYS_OFF a format is said
#: to pay off (HW208, HW210); under NOT_FASTER it is said not to be faster (HW204, HW211).
PAYS_OFF = 1.5
NOT_FASTER = 1.2
_SPEEDS = ("pays_off", "modest", "not_faster", "unmeasured")


def _speed(ratio: float | None) -> str:
    if ratio is None:
        return "unmeasured"
    if ratio >= PAYS_OFF:
        return "pays_off"
    return "not_faster" if ratio < NOT_FASTER else "modest"


def _speed_specs() -> list[FactSpec]:
    return [
        FactSpec(
            f"bench.cpu.{dtype}_speed",
            FactType.STRING,
            f"what the CPU's {dtype} matmul ratio over fp32 says: pays_off (>= {PAYS_OFF}), "
            f"modest, not_faster (< {NOT_FASTER}), or unmeasured (no ratio); never unknown, "
            "so a message clause can follow it",
            _SPEEDS,
            derived=True,
        )
        for dtype in ("bf16", "fp16", "int8")
    ]


@BENCH.family(_speed_specs())
def speeds(view: BenchView) -> Context:
    """The CPU ratios in the rules' own words, for message clauses (``[[...=pays_off: ...]]``)."""
    known = ratios(view)
    return {
        f"bench.cpu.{dtype}_speed": _speed(known.get(f"bench.cpu.{dtype}_over_fp32"))
        for dtype in ("bf16", "fp16", "int8")
    }


@BENCH.fact(
    "bench.cpu.unreliable_figures",
    FactType.NUMBER,
    "CPU fp32 matmul, conv2d, copy and triad figures the bench marked unreliable (too unsteady, too few runs, or a busy machine): the ones this machine's time estimates rest on",
)
def unreliable_figures(view: BenchView) -> int | None:
    """How many core CPU fp32 figures are marked ``reliable: false`` (None without a report).

    The fp32 ones alone: a job in bf16 or int8 is priced from its dtype's figure only
    where that one is reliable, and from the fp32 figures otherwise. A CPU without native
    bf16 runs a 512-square bf16 product for 0.2 s (a Zen 3 guest), too slow for the
    quick bench to repeat, so counting it lowered every measured verdict there for a
    figure no fp32 estimate used. Its ratios carry their own ``_assumed`` flags.
    """
    if view.report is None:
        return None
    core = ("matmul", "conv2d", "copy", "triad")
    return sum(
        1
        for r in view.report.results
        if r.device == "cpu" and r.kernel in core and r.dtype == "fp32" and r.reliable is False
    )
