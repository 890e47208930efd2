"""This machine's steady CPU figures, kept between runs for when it is busy.

A quick bench on a busy machine measures the neighbours as much as the CPU: its figures
are marked unreliable and, without anything better, the estimates fall back to the
theoretical peak. Better than the peak is what this same machine measured when it was
quiet. After each quick bench whose CPU figures are steady (the fp32 products and
convolution reliable, the load under :data:`~hwadvisor.bench.reliability.BUSY_LOAD`
per benchmark thread) its figures are kept in the cache folder, keyed by what they
depend on (the CPU's model, kind of core, vector features, usable cores, torch's
version, the threads): per figure, the faster of this run's and the one kept before
(interference only slows a run). A later quick bench that is not steady takes the kept
CPU figures in place of its own, each stamped with when it was measured
(``measured_at``); its own load stays in the report, so the verdict still lowers its
confidence.

The folder is ``$HWADVISOR_CACHE_DIR``, else ``$XDG_CACHE_HOME/hwadvisor``, else
``~/.cache/hwadvisor``; ``HWADVISOR_CACHE_DIR=off`` keeps nothing. A figure measured over
:data:`MAX_AGE_DAYS` days ago is not used; a file that cannot be read is ignored.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
import os
from pathlib import Path

from hwadvisor.bench.derived import derive
from hwadvisor.bench.kernels import KERNELS
from hwadvisor.bench.reliability import BUSY_LOAD, END_OVER_START, RUN_CONDITIONS
from hwadvisor.io import atomic_write_text
from hwadvisor.models.bench import BenchReport, BenchResult, drifted
from hwadvisor.models.facts import Facts

#: Figures older than this are not used in place of a busy run's.
MAX_AGE_DAYS = 30
#: The kernels whose largest fp32 figure's reliability decides whether a run is steady:
#: the ones every CPU time estimate rests on. Other dtypes do not count: a CPU without
#: native bf16 runs its products too slowly to repeat them within a short budget.
KEY_KERNELS = frozenset({"matmul", "conv2d"})


def cache_dir() -> Path | None:
    """The folder the figures are kept in (None: keeping them is off)."""
    raw = os.environ.get("HWADVISOR_CACHE_DIR")
    if raw is not None:
        return None if raw.strip().lower() in ("", "off", "0", "no") else Path(raw)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return Path(xdg) / "hwadvisor" if xdg else Path.home() / ".cache" / "hwadvisor"


def _threads(report: BenchReport) -> int | None:
    return next((r.threads for r in report.results if r.device == "cpu" and r.threads), None)


def fingerprint(facts: Facts | None, report: BenchReport) -> str | None:
    """What the CPU figures depend on, hashed; None without the facts to tell machines apart."""
    if facts is None:
        return None
    cpu = facts.cpu
    features = sorted(k for k, v in cpu.features.model_dump().items() if v)
    key = [cpu.vendor, cpu.model, cpu.microarchitecture, features, cpu.usable_cores,
           report.torch_version, _threads(report)]  # fmt: skip
    return hashlib.sha256(json.dumps(key, default=str).encode()).hexdigest()[:16]


def steady(report: BenchReport) -> bool:
    """Whether the CPU figures the estimates rest on were measured on a quiet machine."""
    cpu = [r for r in report.results if r.device == "cpu" and r.measured_at is None]
    if not any(r.kernel == "matmul" for r in cpu):
        return False
    for kernel in KEY_KERNELS:
        # its largest fp32 figure: the smaller sizes of the ladder are the first to waver
        mine = [r for r in cpu if r.kernel == kernel and r.dtype == "fp32"]
        largest = max(mine, key=lambda r: math.prod(r.shape), default=None)
        if largest is not None and largest.reliable is False:
            return False
    if any(d.id == END_OVER_START and drifted(d.ratio) for d in report.derived):
        return False  # the machine's speed moved under the run: its figures disagree
    threads = _threads(report)
    load = report.load_avg_1m
    return load is None or not threads or load / threads < BUSY_LOAD


def _path(facts: Facts | None, report: BenchReport) -> Path | None:
    folder, key = cache_dir(), fingerprint(facts, report)
    return None if folder is None or key is None else folder / f"bench-cpu-{key}.json"


def remember(report: BenchReport, facts: Facts | None) -> Path | None:
    """Keep ``report`` when its CPU figures are steady; the file written (None: not kept).

    Failing to write (a read-only home, a full disk) costs the next busy run its
    fallback, never this run: it is ignored.
    """
    path = _path(facts, report)
    if path is None or report.interrupted or not steady(report):
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, report.model_dump_json())
    except OSError:
        return None
    return path


def recall(facts: Facts | None, report: BenchReport, *, today: dt.date | None = None) -> BenchReport | None:  # fmt: skip
    """The steady report kept for this machine, if there is one young enough: its
    figures of the kernels this version measures (an older one's others are left out)."""
    path = _path(facts, report)
    if path is None or not path.is_file():
        return None
    try:
        kept = BenchReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    day = today or dt.date.today()
    young = [
        r
        for r in kept.results
        if r.kernel in KERNELS and _young(r.measured_at or kept.generated_at, day)
    ]
    return kept.model_copy(update={"results": young}) if young else None


def _young(stamp: str, today: dt.date) -> bool:
    """Whether a figure measured at ``stamp`` (ISO 8601, UTC) is young enough to use; one
    whose stamp cannot be read is not."""
    try:
        day = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).date()
    except ValueError:
        return False
    return (today - day).days <= MAX_AGE_DAYS


def _key(r: BenchResult) -> tuple[object, ...]:
    return (r.kernel, r.dtype.lower(), tuple(r.shape), r.level)


def _fastest(report: BenchReport, kept: BenchReport, *, steady_run: bool = True) -> list[BenchResult]:  # fmt: skip
    """Per CPU figure, the faster of this run's (when reliable) and the kept one; for a run
    that is not steady (``steady_run`` false), the kept one, and this run's only where
    nothing of the kind was kept."""
    stamp = kept.generated_at
    out = {
        _key(r): r.model_copy(update={"measured_at": r.measured_at or stamp})
        for r in kept.results
        if r.device == "cpu"
    }
    for r in report.results:
        if r.device != "cpu":
            continue
        old = out.get(_key(r))
        if old is None or (steady_run and r.reliable is not False and r.value >= old.value):
            out[_key(r)] = r
    return list(out.values())


def with_remembered(report: BenchReport, facts: Facts | None) -> BenchReport:
    """``report`` with this machine's kept steady CPU figures where they serve better (the
    module says how); a steady run's figures are kept. Unchanged when none are kept."""
    kept = recall(facts, report)
    if steady(report):
        merged = report if kept is None else _with_results(report, _fastest(report, kept), facts)
        remember(merged, facts)
        return merged
    if kept is None:
        return report
    return _with_results(report, _fastest(report, kept, steady_run=False), facts)


def _with_results(report: BenchReport, cpu: list[BenchResult], facts: Facts | None) -> BenchReport:
    results = cpu + [r for r in report.results if r.device != "cpu"]
    # The comparisons follow the figures; this run's own conditions stay said: its load
    # (also in load_avg_1m) and whether its speed held.
    own = [d for d in report.derived if d.id in RUN_CONDITIONS]
    fresh = [d for d in derive(results, facts) if d.id not in RUN_CONDITIONS]
    return report.model_copy(update={"results": results, "derived": own + fresh})
