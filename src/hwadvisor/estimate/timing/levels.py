"""Memory-bound operators priced by where their working set lives: the bench's memory sweep.

``hwadvisor bench`` times each operator family (element-wise, batch norm, max pooling,
dropout, layer norm, softmax, GELU) at an L2-, an L3- and a DRAM-sized working set, and
one tiny operator for the per-call cost (``bench.sweep``). This module turns those
figures into seconds per byte as a function of the working set, so an operator of a
small batch-norm CNN whose tensors sit in cache is priced at the rate this machine
reaches from cache, and a large one at the rate it reaches from DRAM.

Between the measured working sets the seconds per byte are interpolated in log size
(the ERT way of reading a bandwidth-vs-size curve); outside them they are held at the
nearest figure. The per-call cost measured by ``dispatch`` is taken out of each figure
and charged once per operator launch instead, so small operators are not charged twice.
The ``first_touch`` figure prices the page faults of each tensor glibc's malloc maps
fresh at every call (:func:`hwadvisor.glibc.always_mapped`), once per such
tensor of a step: the sweep's own figures write such outputs into tensors made once.

Inside a step, an element-wise operator whose working set is past the private L2 caches of
its threads is priced at the sweep's DRAM figure, whatever the shared L3 could hold
(:meth:`MemoryLevels.seconds` with ``cold``). The sweep's figures are hot loops, each
call re-reading what the one before left in cache. In a step, an operator reads what
another operator wrote: a matrix product, or an operator that split the tensor between
its threads another way. That data is as cold as after unrelated traffic. Measured here
(docs/estimates.md section 4, ``benchmarks/step_breakdown.py``): an 8 MB ReLU takes
94-100 us after an element-wise write of the same split, and 476-645 us after a matrix
product wrote its input. The step's element-wise operators took 4-6x their cache-rate
estimate at two threads and 2-3x at one.

Figures the bench marked ``reliable: false`` (too unsteady, or a busy machine) are left
out where their family has a reliable figure, unless slower than it: a size they alone
measured is priced from the nearest reliable figure, or from their own where that is
slower (a DRAM figure left one run by the budget, beside steady L2 and L3 ones). A family
with no reliable figure at all is priced from its unreliable ones, said so (an unsteady
figure errs towards a longer step); a sweep without any reliable figure is priced as no
sweep at all. :func:`unreliable_sweep` counts them for the assumptions.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from hwadvisor.bench.sweep import OPTIMIZER_KERNELS, RNN_LAYER

if TYPE_CHECKING:
    from hwadvisor.models.bench import BenchReport, BenchResult
    from hwadvisor.models.facts import Facts

#: A figure whose time is mostly the per-call cost keeps at least this share of it as data.
MIN_DATA_SHARE = 0.25
#: The sweep's L2 working set is half of what the threads' L2 caches hold (``bench.sweep.level_bytes``).
L2_SHARE_INVERSE = 2.0


def log_interp(pts: list[tuple[float, float]], x: float) -> float:
    """``pts`` (ascending x) interpolated in log x, held at the nearest end outside them."""
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= x <= x1:
            return y0 + (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0)) * (y1 - y0)
    return pts[-1][1]


@dataclass
class MemoryLevels:
    """Seconds per counted byte by family and working set, and the measured per-call cost."""

    curves: dict[str, list[tuple[float, float]]] = field(default_factory=dict)
    dispatch_s: float | None = None
    #: Seconds per operator of a backward pass (autograd's engine), where measured.
    backward_dispatch_s: float | None = None
    threads: int | None = None
    #: Sweep figures the bench marked unreliable.
    unreliable: int = 0
    #: Families priced from figures marked unreliable, having no reliable one.
    unsteady_families: list[str] = field(default_factory=list)
    #: What the private L2 caches of the measuring threads hold (None: no L2 figure).
    private_bytes: float | None = None
    #: Seconds per byte of each family's DRAM figure.
    far: dict[str, float] = field(default_factory=dict)
    #: The working set of the sweep's DRAM figures, which the bench sizes past the L3 its
    #: threads reach: data a step moves more than this between two visits is evicted
    #: (None: no DRAM figure).
    far_bytes: float | None = None
    #: Seconds per byte of faulting in a fresh mapping's pages (the ``first_touch``
    #: figure; None: not measured).
    first_touch_s: float | None = None
    #: Where the only ``first_touch`` figure was marked unreliable: its seconds per byte
    #: and its spread (IQR / median; None when too few runs to know it).
    first_touch_unsteady: tuple[float, float | None] | None = None
    #: Seconds per parameter tensor of each optimizer's step beyond its bytes (the
    #: ``adamw_step`` and ``sgd_step`` figures), by optimizer name.
    optimizer_tensor_s: dict[str, float] = field(default_factory=dict)
    #: Seconds of one recurrent layer's call beyond its work (the ``rnn_layer`` figure;
    #: None: not measured).
    rnn_layer_s: float | None = None

    def seconds_per_byte(self, family: str, working_set: float) -> float | None:
        """The family's seconds per byte at ``working_set`` (its own curve, else eltwise)."""
        pts = self.curves.get(family) or self.curves.get("eltwise")
        return log_interp(pts, working_set) if pts else None

    def seconds(
        self, family: str, working_set: float, count: int = 1, *, cold: bool = False
    ) -> float | None:
        """Seconds of ``count`` operators of ``family``, each moving ``working_set`` bytes;
        ``cold``: operands another operator wrote, from DRAM once past the private caches."""
        spb = self.seconds_per_byte(family, working_set)
        if spb is None:
            return None
        if cold and self.private_bytes and working_set > self.private_bytes:
            spb = max(spb, self.cold_seconds_per_byte(family, working_set))
        return spb * working_set * count

    def cold_seconds_per_byte(self, family: str, working_set: float) -> float:
        """Seconds per byte of ``family`` on operands past the private caches: its DRAM
        figure (the element-wise one for a family the sweep did not reach DRAM with)."""
        return self.far.get(family, self.far.get("eltwise")) or 0.0

    def measured(self, family: str) -> bool:
        """Whether the sweep measured this family (otherwise it is priced as eltwise)."""
        return family in self.curves


def _sweep(r: BenchResult) -> bool:
    """Whether ``r`` is one of the memory sweep's figures (a working set, or the per-call
    ``dispatch`` figure)."""
    if r.device != "cpu":
        return False
    return r.kernel == "dispatch" or (r.level is not None and bool(r.working_set_bytes))


def unreliable_sweep(bench: BenchReport | None) -> int:
    """How many memory-sweep figures the bench marked unreliable (and this module leaves out)."""
    if bench is None:
        return 0
    return sum(1 for r in bench.results if _sweep(r) and r.reliable is False)


def _fastest(bench: BenchReport, kernel: str) -> float | None:
    """The highest reliable CPU ``kernel`` figure, in its unit (None: none)."""
    hits = [
        r.value
        for r in bench.results
        if r.device == "cpu" and r.kernel == kernel and r.value and r.reliable is not False
    ]
    return max(hits) if hits else None


def _dispatch(bench: BenchReport, kernel: str = "dispatch") -> float | None:
    """Seconds per call from the reliable ``kernel`` figures in Mop/s (``dispatch``,
    ``dispatch_backward``, an optimizer's per-tensor figure; the fastest if several)."""
    mops = _fastest(bench, kernel)
    return 1.0 / (mops * 1e6) if mops else None


def _first_touch(bench: BenchReport) -> float | None:
    """Seconds per byte of a fresh mapping's first touch (the ``first_touch`` figure)."""
    gbs = _fastest(bench, "first_touch")
    return 1.0 / (gbs * 1e9) if gbs else None


def _first_touch_unsteady(bench: BenchReport) -> tuple[float, float | None] | None:
    """The fastest unreliable ``first_touch`` figure as (seconds per byte, spread); None
    without any (read only where no reliable one exists)."""
    hits = [r for r in bench.results if r.device == "cpu" and r.kernel == "first_touch" and r.value]
    if not hits:
        return None
    best = max(hits, key=lambda r: r.value)
    return 1.0 / (best.value * 1e9), best.spread


def _figures(bench: BenchReport) -> tuple[list[BenchResult], list[str]]:
    """The sweep figures priced with (the per-call figure apart): the reliable ones, and
    for a family without any, its unreliable ones; and the names of those families. A
    sweep without a single reliable figure gives none.

    Without them a family, or the element-wise curve every unmeasured family falls back
    to, would be priced at nothing. A budget spent before the sweep leaves it one or two
    runs a figure, too few to know a spread; and interference only ever slows a run, so an
    unsteady figure errs towards a longer step, never a shorter one.
    """
    swept = [r for r in bench.results if _sweep(r) and r.kernel != "dispatch" and r.value > 0]
    steady = {r.kernel for r in swept if r.reliable is not False}
    if not steady:  # a wholly unsteady sweep: a busy machine, priced as without one
        return [], []
    unsteady = sorted({r.kernel for r in swept} - steady)
    return [r for r in swept if r.reliable is not False or r.kernel in unsteady], unsteady


def without_call(seconds: float, call: float | None, least_share: float) -> float:
    """A measured call's ``seconds`` less the per-call cost ``call`` (the bench's
    ``dispatch`` figure), never under ``least_share`` of them: what its work took."""
    return max(seconds - (call or 0.0), least_share * seconds)


def _seconds_per_byte(r: BenchResult, dispatch: float | None) -> float:
    """Seconds per byte of data of sweep figure ``r``, its per-call cost taken out."""
    ws = float(r.working_set_bytes or 0)
    call = ws / (r.value * 1e9)  # seconds of one call, from the figure
    return without_call(call, dispatch, MIN_DATA_SHARE) / ws


def _curves(points: dict[tuple[str, float], float]) -> dict[str, list[tuple[float, float]]]:
    """(working set, seconds per byte) by family, ascending working set."""
    curves: dict[str, list[tuple[float, float]]] = {}
    for (family, ws), spb in sorted(points.items()):
        curves.setdefault(family, []).append((ws, spb))
    return curves


def _fill_slower_levels(
    bench: BenchReport,
    dispatch: float | None,
    points: dict[tuple[str, float], float],
    far: dict[str, float],
) -> None:
    """Add to ``points`` (and ``far``) each unreliable figure at a working set its family
    has no reliable figure for, where it is slower than the reliable curve held there.

    Held at the nearest reliable figure, a level the sweep measured only unsteadily is
    priced at a smaller level's rate: at the DRAM size of a Xeon guest, where the budget
    left the DRAM figures one or two runs, batch norm's backward at its L3 rate of 25
    GB/s against 5.4 measured, layer norm at 30 against 5.5. The true rate lies between
    the two: interference only slows a run, so the unsteady figure errs long by the
    noise, and the held one errs short by the whole step between two memory levels. An
    unsteady figure faster than the held curve is no evidence of anything and is left out.
    """
    curves = _curves(points)
    for r in bench.results:
        ws = float(r.working_set_bytes or 0)
        key = (r.kernel, ws)
        if not _sweep(r) or r.kernel not in curves or key in points or not ws or r.value <= 0:
            continue
        spb = _seconds_per_byte(r, dispatch)
        if spb > log_interp(curves[r.kernel], ws):
            points[key] = spb
            if r.level == "dram":
                far[r.kernel] = spb


def memory_levels(bench: BenchReport | None) -> MemoryLevels | None:
    """The sweep's curves from a bench report's figures (:func:`_figures`); None when it
    has none."""
    if bench is None:
        return None
    dispatch = _dispatch(bench)
    figures, unsteady = _figures(bench)
    if not figures:
        return None
    # (family, working set) -> seconds per byte, the fastest of repeated figures.
    points: dict[tuple[str, float], float] = {}
    far: dict[str, float] = {}
    for r in figures:
        key, spb = (r.kernel, float(r.working_set_bytes or 0)), _seconds_per_byte(r, dispatch)
        points[key] = min(points.get(key, math.inf), spb)
        if r.level == "dram":
            far[r.kernel] = min(far.get(r.kernel, math.inf), spb)
    _fill_slower_levels(bench, dispatch, points, far)
    curves = _curves(points)
    # The sweep aims its L2 figures at half of what the threads' L2s hold; each family
    # lands at or under that aim (its shape rounds the working set down): the largest is
    # the closest.
    l2 = [float(r.working_set_bytes or 0) for r in figures if r.level == "l2"]
    dram = [float(r.working_set_bytes or 0) for r in figures if r.level == "dram"]
    return MemoryLevels(
        curves=curves,
        dispatch_s=dispatch,
        backward_dispatch_s=_dispatch(bench, "dispatch_backward"),
        threads=next((r.threads for r in figures if r.threads), None),
        unreliable=unreliable_sweep(bench),
        unsteady_families=unsteady,
        private_bytes=L2_SHARE_INVERSE * max(l2) if l2 else None,
        far=far,
        far_bytes=min(dram) if dram else None,
        first_touch_s=(touch := _first_touch(bench)),
        first_touch_unsteady=None if touch is not None else _first_touch_unsteady(bench),
        optimizer_tensor_s={
            name: s
            for name, kernel in OPTIMIZER_KERNELS.items()
            if (s := _dispatch(bench, kernel)) is not None
        },
        rnn_layer_s=_dispatch(bench, RNN_LAYER),
    )


def unsteady_levels(bench: BenchReport | None) -> MemoryLevels | None:
    """The sweep from every figure, steady or not (its per-call, first-touch and optimizer
    figures too); None without a sweep. For a bench with no reliable sweep figure and no
    steady bandwidth figure either, a machine busy all through the bench: priced without
    them, a step's memory-bound operators, faults and optimizer cost nothing (an encoder's
    step at 258 ms against 571 measured, where the same figures steady gave 537).
    Interference only slows a run, so these figures err towards a longer step."""
    if bench is None:
        return None
    per_call = {
        "dispatch",
        "dispatch_backward",
        "first_touch",
        RNN_LAYER,
        *OPTIMIZER_KERNELS.values(),
    }
    results = [
        r.model_copy(update={"reliable": None})
        if r.device == "cpu" and (r.level is not None or r.kernel in per_call)
        else r
        for r in bench.results
    ]
    levels = memory_levels(bench.model_copy(update={"results": results}))
    if levels is not None:
        levels.unreliable = unreliable_sweep(bench)
        levels.unsteady_families = sorted(levels.curves)
    return levels


def machine_note(facts: Facts | None, bench: BenchReport | None) -> str:
    """Threads, SMT and clock behind the figures "here", in one sentence."""
    threads = next((r.threads for r in bench.results if r.threads), None) if bench else None
    cpu = facts.cpu if facts is not None else None
    text = f"here: figures measured at {threads or '?'} thread(s)"
    if cpu is not None and cpu.physical_cores and cpu.logical_cores:
        smt = cpu.logical_cores // max(1, cpu.physical_cores)
        text += (
            f" of {cpu.usable_cores or '?'} usable cores ({cpu.physical_cores} physical, "
            f"{cpu.logical_cores} logical: {'SMT ' + str(smt) + '-way' if smt > 1 else 'no SMT'})"
        )
    clock = ""
    if cpu is not None and (cpu.base_mhz or cpu.max_mhz):
        clock = f" (nominal {cpu.base_mhz or '?'} MHz base, {cpu.max_mhz or '?'} MHz max)"
    return (
        text + "; every thread was busy while measuring, so the figures already include the "
        f"clock this CPU sustains under all-core load{clock}; the estimate assumes the job "
        "runs on the same threads"
    )
