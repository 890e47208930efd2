"""``run_bench``: measure the planned figures on the chosen devices within one time budget.

The budget counts from the call, torch's import and each device's warm-up included. Each
figure's cost is foretold from the rates measured so far (:func:`~hwadvisor.bench.sizing.
cost`); a figure is measured only when that cost fits what is left, at the largest of its
shapes that fits its share, so a short or busy run measures fewer, smaller figures and
ends within the budget. Only the run's first figure is measured whatever the budget (a
few hundredths of a second), so that a run always reports something.
"""

from __future__ import annotations

import importlib.util
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from hwadvisor.bench import devices as devmod
from hwadvisor.bench.derived import derive
from hwadvisor.bench.kernels import KernelCase, plan
from hwadvisor.bench.peaks import peak_for
from hwadvisor.bench.reliability import (
    RECHECK_S,
    Load,
    LoadReader,
    busy_reason,
    drift,
    load_average,
    mark,
    mark_busy,
)
from hwadvisor.bench.sizing import (
    OutOfMemory,
    OutOfTime,
    SizingOutcome,
    TimeBudget,
    Unsupported,
    cost,
)
from hwadvisor.bench.timing import measure_case, release_memory
from hwadvisor.errors import MissingDependencyError, UsageError
from hwadvisor.models.bench import (
    BenchDevice,
    BenchReport,
    BenchResult,
    BenchSkip,
    Derived,
    shape_text,
)
from hwadvisor.models.facts import Facts
from hwadvisor.optional import MISSING_TORCH, import_torch

#: Default budgets in seconds, torch's import (seconds of its own) and warm-up included.
CPU_BUDGET_S = 10.0
QUICK_BUDGET_S = 3.0
PER_ACCELERATOR_S = 6.0
QUICK_PER_ACCELERATOR_S = 2.0
#: The largest budget accepted: an hour is far past any size the ladders reach usefully,
#: and a larger figure is a typo (or 1e308) that would otherwise look like a hang.
MAX_BUDGET_S = 3600.0
#: Kept free at the end of the budget: for the report itself (evidence, load reading),
#: and for a figure whose calls run slower than foreseen (a busy machine).
END_RESERVE_S = 0.05
END_RESERVE_SHARE = 0.02
#: Rates assumed before anything of a kind is measured, per unit (work a second):
#: pessimistic for a CPU, so that the first figures are not started when they cannot end.
DEFAULT_RATE = {"GFLOP/s": 5e9, "GOP/s": 5e9, "GB/s": 4e9, "Mop/s": 2e7}
#: Foreseen costs are taken this much longer when deciding what fits, and each figure is
#: allotted at least that: a call slower than foreseen still gets its timed runs.
MARGIN = 1.5
#: ... and an accelerator's at this many times a CPU's (a first figure, before any rate).
ACCELERATOR_SPEEDUP = 50.0

Progress = Callable[[str, float], None]
#: Measures one case in about ``allot_s`` seconds: ``(torch, case, allot_s, clock)``.
#: :func:`~hwadvisor.bench.timing.measure_case` times it for real; tests pass canned figures.
CaseMeasure = Callable[[Any, KernelCase, float, Callable[[], float]], SizingOutcome]


def require_torch() -> None:
    """Fail fast, without importing torch (2-5 s), when it is not installed at all."""
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependencyError(MISSING_TORCH)


def check_budget(budget_s: float | None, option: str = "--budget") -> None:
    """Refuse a zero, negative, infinite or NaN budget, and one over :data:`MAX_BUDGET_S`."""
    if budget_s is not None and (not math.isfinite(budget_s) or budget_s <= 0):
        raise UsageError(f"{option} must be a positive number of seconds, not {budget_s}")
    if budget_s is not None and budget_s > MAX_BUDGET_S:
        raise UsageError(f"{option} must be at most {MAX_BUDGET_S:g} seconds, not {budget_s:g}")


def _free_bytes(torch: Any, target: devmod.Target, facts: Facts | None) -> int | None:
    if target.kind == "cuda":
        free, _total = torch.cuda.mem_get_info(target.index)
        return int(free)
    if target.kind in ("cpu", "mps") and facts is not None:
        return facts.memory.available_bytes  # Apple GPUs share the system memory
    return None


def unreachable_gpus(
    torch: Any, device: str, targets: list[devmod.Target], facts: Facts | None
) -> list[BenchSkip]:
    """GPUs the probe found that this torch cannot use (a CPU-only build, say), for ``all``."""
    if device.strip().lower() != "all" or facts is None or any(t.accelerator for t in targets):
        return []
    return [
        BenchSkip(
            device=f"gpu:{g.index}",
            kernel="all",
            dtype="all",
            reason=f"{g.name or g.vendor + ' GPU'} was found, but torch {torch.__version__} cannot use it "
            "(no CUDA/ROCm/MPS support in this build, or no working driver)",
        )
        for g in facts.gpus
    ]


def warm_up(torch: Any, target: devmod.Target) -> None:
    """Start what torch starts lazily (thread pool, CUDA context, cuBLAS) before any timing,
    so the first figure does not pay for it. Failures are left for the real kernels."""
    previous = torch.get_num_threads()
    try:
        torch.set_num_threads(target.threads if target.kind == "cpu" else previous)
        a = torch.ones(256, 256, device=torch.device(target.device))
        for _ in range(3):
            torch.mm(a, a)
        sync = devmod.synchronizer(torch, target)
        if sync is not None:
            sync()
    except Exception:
        pass
    finally:
        torch.set_num_threads(previous)


def to_result(case: KernelCase, outcome: SizingOutcome, facts: Facts | None) -> BenchResult:
    """The report entry for one measured figure, with its efficiency where the peak is known."""
    t = outcome.timing
    value = case.work(outcome.shape) / t.median_s / 1e9
    peak = peak_for(case.target, case.kernel, case.dtype, facts)
    result = BenchResult(
        device=case.target.device,
        kernel=case.kernel,
        dtype=case.dtype,
        shape=list(outcome.shape),
        value=value,
        unit=case.unit,
        median_s=t.median_s,
        iqr_s=t.iqr_s,
        runs=t.runs,
        threads=case.target.threads,
        efficiency=value / peak if peak else None,
        peak=peak,
        note="; ".join(outcome.notes) or None,
    )
    return mark(result, outcome.reliability)


@dataclass
class _Run:
    """One run's state: the figures so far, the rates they show, what was left out."""

    torch: Any
    facts: Facts | None
    budget: TimeBudget
    measure: CaseMeasure
    progress: Progress | None
    results: list[BenchResult] = field(default_factory=list)
    skipped: list[BenchSkip] = field(default_factory=list)
    #: (device, kernel, dtype) -> [(work of one call, work a second)], as measured.
    rates: dict[tuple[str, str, str], list[tuple[float, float]]] = field(default_factory=dict)
    unsupported: set[tuple[str, str, str]] = field(default_factory=set)
    warmed: set[str] = field(default_factory=set)
    #: (device, unit) -> the shortest call measured: the least any call of them takes.
    floors: dict[tuple[str, str], float] = field(default_factory=dict)
    first: tuple[KernelCase, BenchResult] | None = None

    def per_call(self, case: KernelCase, shape: tuple[int, ...]) -> float:
        """Seconds one call of ``case`` at ``shape`` is foreseen to take: from its own
        rate at the nearest smaller size, else its basis's share, else
        :data:`DEFAULT_RATE`."""
        work, dev = case.work(shape), case.target.device
        own = sorted(self.rates.get((dev, case.kernel, case.dtype), []))
        known = [(self.rates.get((dev, k, d)), share) for k, d, share in case.basis]
        basis = [max(r for _, r in rates) * share for rates, share in known if rates]
        if own:
            rate = next((r for w, r in reversed(own) if w <= work), own[0][1])
        elif basis:
            rate = min(basis)
        else:
            speedup = ACCELERATOR_SPEEDUP if case.target.accelerator else 1.0
            rate = DEFAULT_RATE.get(case.unit, 1e9) * speedup
        # On a busy machine a parallel call waits for its threads whatever its work: no
        # call is foreseen shorter than the shortest one of its unit measured so far.
        return max(work / rate, self.floors.get((dev, case.unit), 0.0))

    def cost(self, case: KernelCase, i: int) -> float:
        """Seconds ``case`` at ``ladder[i]`` is foreseen to take, its inputs made."""
        shape = case.ladder[i]
        setup = case.input_bytes(shape) / case.fill_rate if case.input_bytes else 0.0
        return cost(self.per_call(case, shape), setup)

    def pick(self, case: KernelCase, share: float) -> int | None:
        """The largest shape up to ``case.start`` that fits ``share`` (the smallest one
        needs only to fit what is left); None when not even that fits."""
        room = self.room()
        fits = [i for i in range(case.start + 1) if MARGIN * self.cost(case, i) <= room]
        if not fits:
            return None
        return max((i for i in fits if MARGIN * self.cost(case, i) <= share), default=fits[0])

    def room(self) -> float:
        """Seconds still free for figures, the end's reserve kept."""
        reserve = END_RESERVE_S + END_RESERVE_SHARE * self.budget.total_s
        return self.budget.remaining() - reserve

    def skip(self, case: KernelCase, reason: str) -> None:
        self.skipped.append(BenchSkip(device=case.target.device, kernel=case.kernel, dtype=case.dtype, reason=reason))  # fmt: skip

    def one(self, case: KernelCase, weights_left: float) -> None:
        """Measure ``case`` if it fits the budget (the run's first figure in any case)."""
        key = (case.target.device, case.kernel, case.dtype)
        if key in self.unsupported:
            return
        if case.target.device not in self.warmed:
            warm_up(self.torch, case.target)
            self.warmed.add(case.target.device)
        share = self.budget.share(case.weight, weights_left)
        i = self.pick(case, share)
        if i is None and self.results:
            size = shape_text(case.kernel, case.ladder[0])
            return self.skip(case, f"{size}: no time left in the budget")
        forced, i = i is None, 0 if i is None else i
        self.report_progress(f"{case.target.device} {case.kernel} {case.dtype}")
        need = MARGIN * self.cost(case, i)
        allot = need + 0.1 if forced else min(max(need, share), self.room())
        try:
            outcome = self.measure(self.torch, replace(case, start=i), allot, self.budget.clock)
            outcome = self.retry(case, outcome)
        except OutOfTime as exc:
            return self.skip(case, str(exc))
        except (Unsupported, OutOfMemory) as exc:
            self.unsupported.add(key)
            return self.skip(case, str(exc))
        finally:
            if case.after is not None:
                case.after()
            release_memory(self.torch, case.target.kind)
        self.add(case, outcome)

    def retry(self, case: KernelCase, outcome: SizingOutcome) -> SizingOutcome:
        """``outcome`` measured once more where its spread is high and the budget has
        the time (bandwidth figures): the steadier of the two is kept."""
        if not case.retry or outcome.reliability.reliable:
            return outcome
        again = replace(case, ladder=(outcome.shape,), start=0, input_bytes=None)
        need = self.cost(again, 0)
        if need > self.room():
            return outcome
        try:
            second = self.measure(self.torch, again, need, self.budget.clock)
        except OutOfTime:
            return outcome
        first_spread = outcome.reliability.spread
        if first_spread is not None and (second.reliability.spread or math.inf) >= first_spread:
            return outcome
        was = f"{first_spread:.0%}" if first_spread is not None else "unknown"
        second.notes[:0] = [*outcome.notes, f"measured again (its first spread {was})"]
        return second

    def add(self, case: KernelCase, outcome: SizingOutcome) -> None:
        """Keep ``outcome`` as a figure, and its rate for the figures after it."""
        result = to_result(case, outcome, self.facts)
        self.results.append(result)
        key = (case.target.device, case.kernel, case.dtype)
        median = outcome.timing.median_s
        self.rates.setdefault(key, []).append(
            (case.work(outcome.shape), case.work(outcome.shape) / median)
        )
        floor = (case.target.device, case.unit)
        self.floors[floor] = min(self.floors.get(floor, math.inf), median)
        if self.first is None and case.target.kind == "cpu" and case.kernel == "matmul":
            self.first = (case, result)

    def report_progress(self, label: str) -> None:
        if self.progress is not None:
            self.progress(label, min(0.99, self.budget.elapsed() / self.budget.total_s))

    def recheck(self) -> Derived | None:
        """The run's first CPU product timed again at its size, when the budget still has
        the time: evidence that the machine's speed held (None: not measured, or unsteady)."""
        if self.first is None:
            return None
        case, result = self.first
        again = replace(case, ladder=(tuple(result.shape),), start=0)
        allot = min(RECHECK_S, self.room())
        if self.cost(again, 0) > allot:
            return None
        self.report_progress(f"{case.target.device} {case.kernel} {case.dtype} again")
        try:
            outcome = self.measure(self.torch, again, allot, self.budget.clock)
        except (Unsupported, OutOfMemory, OutOfTime):
            return None
        if not outcome.reliability.reliable:
            return None
        return drift(result, case.work(outcome.shape) / outcome.timing.median_s / 1e9)


def run_bench(
    *,
    facts: Facts | None,
    device: str = "cpu",
    budget_s: float | None = None,
    quick: bool = False,
    progress: Progress | None = None,
    clock: Callable[[], float] = time.perf_counter,
    measure: CaseMeasure = measure_case,
    load_reader: LoadReader = load_average,
) -> BenchReport:
    """Measure ``device`` ("cpu", "cuda", "cuda:N", "mps", "xpu", "all") within the budget.

    Raises MissingDependencyError without torch and UsageError for an unknown or absent
    device. Ctrl-C returns the figures measured so far with ``interrupted=True``.
    ``clock``, ``measure`` and ``load_reader`` are seams: a fake clock, canned timings
    per case, the load average. CPU figures taken while the load was over
    :data:`~hwadvisor.bench.reliability.BUSY_LOAD` per core are marked unreliable.
    """
    started = clock()
    load_1m = load_reader()
    check_budget(budget_s)
    devmod.parse_device(device)  # a typo is a usage error even where torch is missing
    torch = import_torch()
    import_s = clock() - started
    targets = devmod.resolve(torch, device, facts)
    accelerators = sum(1 for t in targets if t.accelerator)
    # The default: more for each GPU-like device.
    base, each = (
        (QUICK_BUDGET_S, QUICK_PER_ACCELERATOR_S) if quick else (CPU_BUDGET_S, PER_ACCELERATOR_S)
    )
    total = budget_s if budget_s is not None else base + each * accelerators
    run = _Run(torch, facts, TimeBudget(total, clock, started), measure, progress)
    run.skipped += unreachable_gpus(torch, device, targets, facts)
    closing: Derived | None = None
    interrupted = False
    try:
        planned = [c for t in targets for c in plan(torch, t, facts, _free_bytes(torch, t, facts))]
        cases = sorted(planned, key=lambda c: c.tier)  # each device's in its own order
        weights_left = sum(c.weight for c in cases)
        for case in cases:
            run.one(case, weights_left)
            weights_left -= case.weight
        closing = run.recheck()
        if progress is not None:
            progress("done", 1.0)
    except KeyboardInterrupt:
        interrupted = True
    elapsed = clock() - started
    load = Load(load_1m, load_reader())
    # The cores the CPU figures ran on: the probe's usable cores, else the CPU's threads.
    threads = next((t.threads for t in targets if t.kind == "cpu" and t.threads), None)
    cores = (facts.cpu.usable_cores if facts is not None else None) or threads
    others = load.others(cores or 1, elapsed)
    results = mark_busy(run.results, busy_reason(others, cores))
    return BenchReport(
        torch_version=str(torch.__version__),
        load_avg_1m=load_1m,
        load_avg_1m_end=load.end,
        usable_cores=cores,
        budget_s=total,
        elapsed_s=round(elapsed, 3),
        torch_import_s=round(import_s, 3),
        interrupted=interrupted,
        devices=[
            BenchDevice(device=t.device, name=t.name, uuid=t.uuid, threads=t.threads)
            for t in targets
        ],
        results=results,
        skipped=run.skipped,
        derived=[*derive(results, facts, load_1m=others), *([closing] if closing else [])],
    )
