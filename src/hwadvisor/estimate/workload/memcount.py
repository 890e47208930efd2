"""Counted peaks as the memory model uses them: linear in the batch, per precision.

:func:`memory_counts` runs :func:`estimate.memtrack.count_memory` at two batch sizes per
precision and keeps, for each, the bytes per sample and the batch-independent bytes of
the forward/backward peak, the optimizer step's temporaries and the inference pass
(:class:`models.memory.MemoryCounts`); the larger fp32 run is replayed through glibc's
malloc (:mod:`estimate.cpu_alloc`) for the resident bytes a CPU holds. The catalog's
``memory_counts`` are made this way (``scripts/count_activations.py``), and so are a user
model's (:func:`count_user_model`).
"""

from __future__ import annotations

import datetime
import statistics
from collections.abc import Callable
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.cpu_alloc import Event, Resident, replay, replay_starts
from hwadvisor.estimate.workload.memtrack import (
    OWN_TRACKER,
    TORCH_TRACKER,
    Live,
    MemCount,
    count_memory,
    in_last_repeat,
)
from hwadvisor.models.memory import CountedPeak, FaultPoint, MemoryCounts


def fb_peak(c: MemCount) -> Live:
    """The forward/backward peak once optimizer state exists (from the second step on)."""
    peak = max((c.forward, c.backward), key=lambda live: live.total)
    return Live(
        parameters=peak.parameters,
        gradients=peak.gradients,
        optimizer=c.state_bytes,
        activations=peak.activations,
        temporaries=peak.temporaries,
    )


def peak_from(a: MemCount, b: MemCount) -> CountedPeak:
    """The linear peak model through two counts of one precision at different batches."""
    if a.batch == b.batch:
        raise ValueError("two different batch sizes are needed")
    lo, hi = (a, b) if a.batch < b.batch else (b, a)

    def extra(c: MemCount) -> float:
        p = fb_peak(c)
        return float(p.total - p.parameters - p.optimizer)

    def infer(c: MemCount) -> float:
        return float(c.inference.total - c.inference.parameters)

    span = hi.batch - lo.batch
    per = max(0.0, (extra(hi) - extra(lo)) / span)
    iper = max(0.0, (infer(hi) - infer(lo)) / span)
    step = hi.step
    return CountedPeak(
        per_sample=per,
        fixed=extra(hi) - per * hi.batch,
        gradients_at_peak=float(fb_peak(hi).gradients),
        step_temporaries=float(step.total - step.parameters - step.gradients - step.optimizer),
        infer_per_sample=iper,
        infer_fixed=infer(hi) - iper * hi.batch,
    )


def _starts(events: tuple[Event, ...]) -> list[Resident]:
    """``events`` replayed from each start state, the last step's faults counted."""
    return replay_starts(events, last=in_last_repeat)


def _ratios(starts: list[Resident]) -> list[float]:
    """Resident over live bytes of each start state's replay."""
    return [max(1.0, r.peak / r.live_peak) if r.live_peak else 1.0 for r in starts]


def steady_faults(starts: list[Resident]) -> float:
    """Bytes of the pages the last of a count's three steps (or passes) faults in under
    glibc's malloc: the mean over the start states a process may be in. Between them a
    step either trims its heap's top and faults it in again or does not, so the counts
    split in two (0 and 16K pages for the held-out LSTM): the mean is what a step costs
    on average, where the median is one of the two."""
    return float(statistics.fmean(r.last_faulted for r in starts))


def _upper(events: tuple[Event, ...], ratios: list[float]) -> float:
    # the worst case of the fragments, over the tensors alone: with the kernel
    # buffers' fragments pinned as well the bound is 5-6x the live bytes of
    # ResNet-50, past every real peak measured (benchmarks/memory_accuracy.py)
    r = replay([e for e in events if e[0] in "afuw"], pinned=True)
    return max([r.peak / r.live_peak if r.live_peak else 1.0, *ratios])


def _faults(
    c: MemCount, train: list[Resident] | None = None, infer: list[Resident] | None = None
) -> FaultPoint:
    """The faults of the count's steady step and pass (their replays, where made)."""
    return FaultPoint(
        batch=c.batch,
        train=steady_faults(train or _starts(c.train_events)),
        infer=steady_faults(infer or _starts(c.infer_events)),
    )


def resident_ratio(c: MemCount, *, infer: bool = False, pinned: bool = False) -> float:
    """Resident over live bytes of the count's three training steps (or its three
    inference passes) replayed through glibc's malloc: the mean over the start states a
    process may be in (``cpu_alloc.START_STATES``); ``pinned``: the worst case, the
    largest of them and of the replay with every fragment pinned."""
    events = c.infer_events if infer else c.train_events
    ratios = _ratios(_starts(events))
    return _upper(events, ratios) if pinned else sum(ratios) / len(ratios)


def memory_counts(
    build: Callable[[], Any],
    input_shape: list[int],
    *,
    tokens: bool,
    batches: tuple[int, int],
    precisions: tuple[str, ...] = ("fp32", "amp"),
    optimizer: str = "adamw",
    spec: str = "model",
    source: str | None = None,
    runs_out: list[MemCount] | None = None,
    fault_batches: tuple[int, ...] = (),
    checked: tuple[int, str] | None = None,
) -> MemoryCounts:
    """Count ``build``'s model at ``batches`` for each precision (fp32 always); the runs
    themselves are appended to ``runs_out`` when given. The page faults of a steady step
    are counted at ``batches`` and at ``fault_batches`` (fp32 counts of their own: the
    faults are not linear in the batch, a tensor past 32 MiB is mapped at every call).

    Torch's MemTracker runs beside our tracker in every count, or, where ``checked``
    names one (batch, precision), in that count alone: its peak only checks ours, and it
    doubles the time of the run it follows."""
    peaks: dict[str, CountedPeak] = {}
    tried: list[MemCount] = []  # the counts torch's tracker was tried in

    def trackers(b: int, precision: str) -> tuple[str, ...]:
        if checked is None or checked == (b, precision):
            return (TORCH_TRACKER, OWN_TRACKER)
        return (OWN_TRACKER,)

    ratio = infer_ratio = upper_ratio = 1.0
    faults: list[FaultPoint] = []
    leaves = 1
    for precision in dict.fromkeys(("fp32", *precisions)):
        runs = [
            count_memory(
                build,
                input_shape,
                b,
                tokens=tokens,
                precision=precision,
                optimizer=optimizer,
                spec=spec,
                trackers=trackers(b, precision),
            )
            for b in batches
        ]
        peaks[precision] = peak_from(*runs)
        if runs_out is not None:
            runs_out.extend(runs)
        if precision == "fp32":
            lo, hi = sorted(runs, key=lambda c: c.batch)
            train, infer = _starts(hi.train_events), _starts(hi.infer_events)
            ratios = _ratios(train)
            ratio, upper_ratio = sum(ratios) / len(ratios), _upper(hi.train_events, ratios)
            infer_ratio = statistics.fmean(_ratios(infer))
            leaves = runs[0].leaf_modules
            faults = [_faults(lo), _faults(hi, train, infer)]
            for b in sorted(set(fault_batches) - set(batches)):
                extra = count_memory(
                    build,
                    input_shape,
                    b,
                    tokens=tokens,
                    optimizer=optimizer,
                    spec=spec,
                    trackers=trackers(b, "fp32"),
                )
                faults.append(_faults(extra))
        tried += [r for r in runs if TORCH_TRACKER in trackers(r.batch, r.precision)]
    today = datetime.date.today().isoformat()
    return MemoryCounts(
        fp32=peaks["fp32"],
        amp=peaks.get("amp"),
        bf16=peaks.get("bf16"),
        batches=(min(batches), max(batches)),
        leaf_modules=max(1, leaves),
        cpu_resident_ratio=round(ratio, 4),
        cpu_infer_resident_ratio=round(infer_ratio, 4),
        cpu_upper_ratio=round(upper_ratio, 4),
        cpu_faults=sorted(faults, key=lambda p: p.batch),
        tracker=(
            TORCH_TRACKER
            if tried and all(r.tracker == TORCH_TRACKER for r in tried)
            else OWN_TRACKER
        ),
        source=source or f"counted with hwadvisor memtrack on {spec} {today}",
        date=today,
    )


def count_user_model(
    spec: str,
    input_shape: list[int],
    batch: int,
    *,
    precision: str = "fp32",
    optimizer: str = "adamw",
) -> tuple[MemoryCounts, MemCount]:
    """A user's model (``module:callable`` or ``file.py:callable``) counted at its batch.

    Returns the linear counts (at ``batch`` and ``batch + 1``) and the count at the job's
    own batch and precision. Errors are one UsageError line with the model's own error.
    """
    from hwadvisor.bench.runner import import_torch
    from hwadvisor.estimate.workload.counting import build_on_meta
    from hwadvisor.estimate.workload.loading import load_callable

    if precision not in ("fp32", "amp", "bf16", "fp16"):
        raise UsageError(f"model '{spec}': memory is counted in fp32, amp, bf16 or fp16")
    import_torch()
    fn = load_callable(spec)

    def build() -> Any:
        return build_on_meta(fn, spec)

    counted = "bf16" if precision == "fp16" else precision
    runs: list[MemCount] = []
    counts = memory_counts(
        build,
        input_shape,
        tokens=takes_tokens(build()),
        batches=(batch, batch + 1),
        precisions=(counted,),
        optimizer=optimizer,
        spec=spec,
        runs_out=runs,
        checked=(batch, counted),
    )
    job = next(r for r in runs if r.batch == batch and r.precision == counted)
    return counts, job


def takes_tokens(model: Any) -> bool:
    """Whether the first module holding parameters is an embedding (integer inputs)."""
    import torch

    for mod in model.modules():
        if not list(mod.children()) and any(True for _ in mod.parameters(recurse=False)):
            return isinstance(mod, torch.nn.Embedding)
    return False
