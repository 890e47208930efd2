"""``run_bench``: measure every kernel on the chosen devices within one time budget."""

from __future__ import annotations

import functools
import importlib.util
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

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
    SizingOutcome,
    TimeBudget,
    Unsupported,
    adapt,
    floor_index,
)
from hwadvisor.bench.sweep import in_quick_sweep
from hwadvisor.bench.timing import make_measure, release_memory
from hwadvisor.errors import MissingDependencyError, UsageError
from hwadvisor.models.bench import BenchDevice, BenchReport, BenchResult, BenchSkip, Derived

if TYPE_CHECKING:
    from hwadvisor.models.facts import Facts

#: Default budgets in seconds, torch's import included (it takes 2-5 s on a small VM); with
#: the probe, start-up and exit the whole ``hwadvisor bench`` takes about 10 s CPU-only.
CPU_BUDGET_S = 10.0
QUICK_BUDGET_S = 3.0
PER_ACCELERATOR_S = 6.0
QUICK_PER_ACCELERATOR_S = 2.0
#: Every kernel gets at least this long (and one measurement at its first size), so a
#: budget the torch import nearly used up still yields figures, at the price of overrunning.
MIN_ALLOT_S = 0.15
#: The largest budget accepted: an hour is far past any size the ladders reach usefully,
#: and a larger figure is a typo (or 1e308) that would otherwise look like a hang.
MAX_BUDGET_S = 3600.0
#: Under --quick only the figures the advice uses most are measured.
QUICK_KERNELS = {
    ("matmul", "fp32"),
    ("matmul", "bf16"),
    ("copy", "fp32"),
    ("triad", "fp32"),
    # products of few rows (a CPU's): what a small batch's layers run at
    ("matmul_rows", "fp32"),
    # ... and with a weight from DRAM each call: a small batch of a model past the cache
    ("matmul_rows_cold", "fp32"),
    # ... in bf16 too, where the CPU has a bf16 dot product (only then measured at all)
    ("matmul_rows", "bf16"),
    ("matmul_rows_cold", "bf16"),
    # small squares (a CPU's): what a small layer's product runs at
    ("matmul_small", "fp32"),
    # convolutions: without them a CNN's are an assumed share of the matmul rate, which
    # on a Zen 4 guest put ResNet-50's inference at 1.5-2x its real passes
    ("conv2d", "fp32"),
    ("conv2d_backward", "fp32"),
    ("conv2d_nchw", "fp32"),
    ("conv2d_nchw_backward", "fp32"),
    ("conv2d_backward_strided", "fp32"),
}
#: ... and on GPUs also the tensor-core dtypes and the host link.
QUICK_ACCELERATOR_KERNELS = {
    ("matmul", "tf32"),
    ("matmul", "fp16"),
    ("h2d", "uint8"),
    ("d2h", "uint8"),
}


def quick_case(kernel: str, dtype: str, accelerator: bool) -> bool:
    """Whether ``--quick`` measures this kernel."""
    key = (kernel, dtype)
    return key in QUICK_KERNELS or (accelerator and key in QUICK_ACCELERATOR_KERNELS)


Progress = Callable[[str, float], None]


MISSING_TORCH = "torch is not installed: pip install 'hwadvisor[bench]'"


def require_torch() -> None:
    """Fail fast, without importing torch (2-5 s), when it is not installed at all."""
    try:
        found = importlib.util.find_spec("torch") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingDependencyError(MISSING_TORCH)


def import_torch() -> Any:
    """Import torch, or raise MissingDependencyError with the reason it failed."""
    try:
        with warnings.catch_warnings():
            # A torch wheel without numpy warns on import; that is not the user's problem here.
            warnings.simplefilter("ignore")
            import torch
    except ModuleNotFoundError as exc:
        raise MissingDependencyError(MISSING_TORCH) from exc
    except Exception as exc:
        # Installed but broken (a CUDA runtime that will not load, a half-upgraded wheel):
        # "not installed" would send the user to pip for the wrong reason.
        first = str(exc).splitlines()[0] if str(exc) else ""
        raise MissingDependencyError(
            f"torch is installed but failed to import ({type(exc).__name__}: {first})"
        ) from exc
    return torch


def default_budget(accelerators: int, quick: bool) -> float:
    """Seconds for the whole run: more for each GPU-like device."""
    if quick:
        return QUICK_BUDGET_S + QUICK_PER_ACCELERATOR_S * accelerators
    return CPU_BUDGET_S + PER_ACCELERATOR_S * accelerators


def check_budget(budget_s: float | None, option: str = "--budget") -> None:
    """Refuse a zero, negative, infinite or NaN budget, and one over :data:`MAX_BUDGET_S`."""
    if budget_s is not None and (not math.isfinite(budget_s) or budget_s <= 0):
        raise UsageError(f"{option} must be a positive number of seconds, not {budget_s}")
    if budget_s is not None and budget_s > MAX_BUDGET_S:
        # A finite but absurd budget (1e308) would keep the ladder climbing for ever.
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
    build = str(torch.__version__)
    return [
        BenchSkip(
            device=f"gpu:{g.index}",
            kernel="all",
            dtype="all",
            reason=f"{g.name or g.vendor + ' GPU'} was found, but torch {build} cannot use it "
            "(no CUDA/ROCm/MPS support in this build, or no working driver)",
        )
        for g in facts.gpus
    ]


def warm_up(torch: Any, target: devmod.Target) -> None:
    """Start what torch starts lazily (thread pool, CUDA context, cuBLAS) before any timing.

    Otherwise the first kernel's smallest size pays for it (0.3-0.6 s on a busy 2-core VM)
    and looks too slow to grow from. Failures are left for the real kernels to report.
    """
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
    """The report entry for one measured kernel, with its efficiency where the peak is known."""
    t = outcome.timing
    value = _value(case, outcome)
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
        level=case.level,
        working_set_bytes=int(case.work(outcome.shape)) if case.level else None,
    )
    return mark(result, outcome.reliability)


#: Measures one kernel case in about ``allot_s`` seconds: ``(torch, case, allot_s, clock)``.
#: :func:`measure_case` times it for real; tests pass canned figures to :func:`run_bench`.
CaseMeasure = Callable[[Any, KernelCase, float, Callable[[], float]], SizingOutcome]


def measure_case(
    torch: Any,
    case: KernelCase,
    allot_s: float,
    clock: Callable[[], float],
    *,
    repeats: bool = True,
) -> SizingOutcome:
    """Find a good size for ``case`` on its ladder and time it, within ``allot_s``.

    ``repeats`` False: no repeats past the allotment (on a machine already busy they
    cannot make a figure reliable, only the run longer).
    """
    measure = make_measure(
        torch,
        case.build,
        device_kind=case.target.kind,
        threads=case.target.threads,
        sync=devmod.synchronizer(torch, case.target),
        flags=case.flags,
    )
    min_run = min(0.1, max(0.01, allot_s * 0.04))
    return adapt(
        case.ladder,
        work=case.work,
        measure=measure,
        clock=clock,
        allot_s=allot_s,
        start=case.start,
        # Never below real work, however slow or busy the machine (bench.sizing.FLOOR_WORK).
        floor=floor_index(case.ladder, case.work, case.kernel, case.target.kind),
        min_run_s=min_run,
        repeat_past_share=repeats,
    )


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
    per kernel, the load average. CPU figures taken while the load was over
    :data:`~hwadvisor.bench.reliability.BUSY_LOAD` per core are marked unreliable.
    """
    started = clock()
    load_1m = load_reader()
    check_budget(budget_s)
    devmod.parse_device(device)  # a typo is a usage error even where torch is missing
    before_import = clock()
    torch = import_torch()
    import_s = clock() - before_import
    targets = devmod.resolve(torch, device, facts)
    accelerators = sum(1 for t in targets if t.accelerator)
    total = budget_s if budget_s is not None else default_budget(accelerators, quick)
    budget = TimeBudget(total, clock, started)
    calm = busy_reason(load_1m, _cores(facts, targets)) is None

    results: list[BenchResult] = []
    closing: Derived | None = None
    skipped: list[BenchSkip] = unreachable_gpus(torch, device, targets, facts)
    interrupted = False
    try:
        cases = [c for t in targets for c in plan(torch, t, facts, _free_bytes(torch, t, facts))]
        if quick:
            cases = [
                c
                for c in cases
                if quick_case(c.kernel, c.dtype, c.target.accelerator)
                or in_quick_sweep(c.kernel, c.level)
            ]
        weights_left = sum(c.weight for c in cases)
        warmed: set[str] = set()
        first: tuple[KernelCase, BenchResult] | None = None
        for done, case in enumerate(cases):
            if case.target.device not in warmed:
                warm_up(torch, case.target)
                warmed.add(case.target.device)
            if progress is not None:
                # Kernels differ in length; the budget spent is the better guide once it leads.
                fraction = min(0.99, max(done / len(cases), budget.elapsed() / total))
                progress(f"{case.target.device} {case.kernel} {case.dtype}", fraction)
            try:
                least = MIN_ALLOT_S if case.min_allot_s is None else case.min_allot_s
                allot = max(least, budget.share(case.weight, weights_left))
                outcome = _measurer(measure, calm, budget)(torch, case, allot, clock)
                results.append(to_result(case, outcome, facts))
                if first is None and _drift_probe(case):
                    first = (case, results[-1])
            except (Unsupported, OutOfMemory) as exc:
                reason = exc.reason if isinstance(exc, Unsupported) else str(exc)
                skipped.append(
                    BenchSkip(
                        device=case.target.device,
                        kernel=case.kernel,
                        dtype=case.dtype,
                        reason=reason,
                    )
                )
            finally:
                if case.after is not None:
                    case.after()
                release_memory(torch, case.target.kind)
            weights_left -= case.weight
        if first is not None:
            if progress is not None:
                progress(f"{first[0].target.device} {first[0].kernel} {first[0].dtype} again", 0.99)
            once = functools.partial(measure_case, repeats=False)
            closing = _recheck(torch, first, once if measure is measure_case else measure, clock)
        if progress is not None:
            progress("done", 1.0)
    except KeyboardInterrupt:
        interrupted = True

    elapsed = clock() - started
    load = Load(load_1m, load_reader())
    cores, others = _competition(load, facts, targets, elapsed)
    results = mark_busy(results, busy_reason(others, cores))
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
        skipped=skipped,
        derived=[*derive(results, facts, load_1m=others), *([closing] if closing else [])],
    )


def _drift_probe(case: KernelCase) -> bool:
    """Whether ``case`` is the figure timed again at the end: the CPU's fp32 matmul."""
    return case.target.kind == "cpu" and case.kernel == "matmul" and case.dtype == "fp32"


def _recheck(
    torch: Any,
    first: tuple[KernelCase, BenchResult],
    measure: CaseMeasure,
    clock: Callable[[], float],
) -> Derived | None:
    """The run's first CPU figure timed again at its size once the others are done, as
    evidence that the machine's speed held (:func:`~hwadvisor.bench.reliability.drift`);
    None when that timing is itself unsteady (it could not tell a drift from noise)."""
    case, result = first
    again = replace(case, ladder=(tuple(result.shape),), start=0)
    try:
        outcome = measure(torch, again, RECHECK_S, clock)
    except (Unsupported, OutOfMemory):
        return None
    finally:
        if case.after is not None:
            case.after()
        release_memory(torch, case.target.kind)
    if not outcome.reliability.reliable:
        return None
    return drift(result, _value(case, outcome))


def _value(case: KernelCase, outcome: SizingOutcome) -> float:
    """The figure of ``outcome``: its work per call over its median time, in G(FL)OP/s or GB/s."""
    return case.work(outcome.shape) / outcome.timing.median_s / 1e9


def _measurer(measure: CaseMeasure, calm: bool, budget: TimeBudget) -> CaseMeasure:
    """``measure``, without repeats past a kernel's share once they cannot pay off.

    They are skipped on a machine already busy (they cannot make a figure reliable) and
    once the run has spent its budget, so repeats overrun it by at most one kernel's
    (:data:`~hwadvisor.bench.sizing.REPEAT_CAP_S`). A test's own seam is used as given.
    """
    if measure is measure_case and not (calm and budget.remaining() > 0):
        return functools.partial(measure_case, repeats=False)
    return measure


def _competition(
    load: Load, facts: Facts | None, targets: list[devmod.Target], elapsed_s: float
) -> tuple[int | None, float | None]:
    """The cores measured on, and the load other programs made on the machine meanwhile."""
    cores = _cores(facts, targets)
    return cores, load.others(cores or 1, elapsed_s)


def _cores(facts: Facts | None, targets: list[devmod.Target]) -> int | None:
    """The cores the CPU figures ran on: the probe's usable cores, else the CPU's threads."""
    if facts is not None and facts.cpu.usable_cores:
        return facts.cpu.usable_cores
    return next((t.threads for t in targets if t.kind == "cpu" and t.threads), None)
