"""The bench document (``hwadvisor bench --json``): measured evidence."""

from __future__ import annotations

from typing import Annotated

from pydantic import ConfigDict, Field

from hwadvisor.models import bounds
from hwadvisor.models.common import Document, Versioned
from hwadvisor.models.plain import utc_now

# The limits of every number are the table of :mod:`hwadvisor.models.bounds`.
Seconds = Annotated[float, bounds.SECONDS]
Threads = Annotated[int, bounds.CORES]
Ratio = Annotated[float, bounds.RATIO]
Load = Annotated[float, bounds.LOAD]

#: IQR / median above which a figure is not trusted: torch.utils.benchmark's own warning
#: threshold (``_IQR_WARN_THRESHOLD`` = 0.1 in torch/utils/benchmark/utils/common.py,
#: "This could indicate system fluctuation").
RELIABLE_SPREAD = 0.10
#: How far the first CPU figure, timed again when the run ends, may move before the run
#: counts as drifting: twice the spread a steady figure may have. Past it the machine's
#: own speed changed while measuring (a shared host, a clock that fell under load), so
#: figures taken at different moments disagree and the verdicts resting on them lose
#: confidence.
DRIFT_TOLERANCE = 2 * RELIABLE_SPREAD


def drifted(ratio: float) -> bool:
    """Whether a figure timed again at the end, at ``ratio`` x its first value, moved too far
    (outside :data:`DRIFT_TOLERANCE` either way)."""
    return not (1.0 / (1.0 + DRIFT_TOLERANCE) <= ratio <= 1.0 + DRIFT_TOLERANCE)


def shape_text(kernel: str, shape: tuple[int, ...] | list[int]) -> str:
    """A figure's size as people say it: 1024³, 128 MiB, 4x64x56x56."""
    if kernel in ("copy", "triad", "h2d", "d2h") and shape:
        per = 1 if kernel in ("h2d", "d2h") else 4
        return f"{shape[0] * per / 2**20:,.0f} MiB"
    if kernel.startswith("matmul") and len(shape) == 3 and len(set(shape)) == 1:
        return f"{shape[0]}³"
    return "x".join(str(d) for d in shape)


class _Measured(Document):
    """A part of the bench document: no number in it may be NaN or infinite."""

    model_config = ConfigDict(allow_inf_nan=False)


class BenchResult(_Measured):
    """One measured figure: a kernel at one dtype and shape on one device."""

    device: str = Field(description="cpu, cuda:N, mps, xpu:N")
    kernel: str = Field(
        description="matmul (one figure per square size), conv2d, conv2d_backward, copy, triad, dispatch (CPU), h2d, d2h (CUDA); reports from older versions may hold other kernels, which readers ignore"
    )
    dtype: str
    shape: Annotated[list[Annotated[int, bounds.SHAPE_DIM]], Field(max_length=16)]
    value: Annotated[float, bounds.GFLOPS] = Field(
        description="throughput in `unit`, from the median time"
    )
    unit: str = Field(
        description="GFLOP/s, GOP/s (int8), GB/s, or Mop/s (dispatch: millions of operators per second)"
    )
    median_s: Seconds
    iqr_s: Seconds
    runs: Annotated[int, bounds.RUNS]
    threads: Threads | None = None
    efficiency: Ratio | None = Field(
        None,
        description="value / theoretical peak, where the peak is known; above 1 only when the peak is understated (a CPU whose top clock is unknown gets its peak from the base clock)",
    )
    peak: Annotated[float, bounds.GFLOPS] | None = Field(
        None, description="the peak used for efficiency, in `unit`"
    )
    note: str | None = Field(
        None, description="how the size was reached, e.g. an out-of-memory back-off"
    )
    level: str | None = Field(
        None,
        description="reports from older versions only (their memory sweep): the level the working set was sized for (l2, l3, dram)",
    )
    working_set_bytes: Annotated[int, bounds.BYTES] | None = Field(
        None,
        description="reports from older versions only (their memory sweep): bytes one call reads and writes",
    )
    reliable: bool | None = Field(
        None,
        description="false: too unsteady to draw conclusions from alone (spread over 10%, fewer than 4 timed runs, or a busy machine); the figure stays, with its spread; null in reports made before it was assessed (taken as reliable)",
    )
    spread: Ratio | None = Field(
        None,
        description="IQR / median of the timed runs (null with fewer than 4 runs: unknown)",
    )
    measured_at: str | None = Field(
        None,
        description="set when the figure is not this run's: the time (UTC) of this machine's last steady run it comes from, used because this run's CPU figures were not steady (a busy machine); null: measured in this run",
    )


class BenchSkip(_Measured):
    """A kernel that was not measured, and why."""

    device: str
    kernel: str
    dtype: str
    reason: str


class BenchDevice(_Measured):
    """A device the microbenchmark ran on."""

    device: str
    name: str | None = None
    uuid: str | None = None
    threads: Threads | None = None


class Derived(_Measured):
    """A comparison drawn from the figures, e.g. the bf16 speed-up over fp32."""

    id: str = Field(description="stable key, e.g. cpu.bf16_over_fp32")
    ratio: Ratio
    text: str


class BenchReport(Versioned):
    """All figures of one microbenchmark run."""

    model_config = ConfigDict(allow_inf_nan=False)

    generated_at: str = Field(default_factory=utc_now)
    torch_version: str | None = None
    load_avg_1m: Load | None = Field(
        None,
        description="1-minute load average when the run started: above the usable cores, other programs competed",
    )
    load_avg_1m_end: Load | None = Field(
        None,
        description="1-minute load average when the run ended (it includes the run's own threads)",
    )
    usable_cores: Threads | None = Field(
        None, description="cores this process may use (the probe's usable_cores) while measuring"
    )
    budget_s: Seconds
    elapsed_s: Seconds
    torch_import_s: Seconds | None = Field(
        None,
        description="seconds the run spent importing torch, counted in the budget; a budget below it, or too short to measure every kernel once, is overrun",
    )
    interrupted: bool = False
    devices: list[BenchDevice] = Field(default_factory=list)
    results: list[BenchResult] = Field(default_factory=list)
    skipped: list[BenchSkip] = Field(default_factory=list)
    derived: list[Derived] = Field(default_factory=list)

    def best(
        self, device: str, kernel: str, dtype: str, *, reliable_only: bool = False
    ) -> BenchResult | None:
        """The highest figure measured for ``kernel`` at ``dtype`` on ``device``.

        ``reliable_only`` leaves out figures marked ``reliable: false``.
        """
        hits = [
            r
            for r in self.results
            if r.device == device
            and r.kernel == kernel
            and r.dtype == dtype
            and not (reliable_only and r.reliable is False)
        ]
        return max(hits, key=lambda r: r.value, default=None)
