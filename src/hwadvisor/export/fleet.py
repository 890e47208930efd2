"""Ranking many machines for one workload, from their saved reports (pure).

``hwadvisor fleet`` reads reports, estimates the workload on each machine ("here" in
that machine's facts and measurements) and hands the results to :func:`rank_fleet`,
which neither reads files nor probes: it orders the machines and says why. A machine
whose report could not be read or estimated is listed as skipped, with the reason.

Order: machines that fit (memory fits and the job meets the deadline, or for inference
the latency / QPS target) first, then those that cannot be told, then too slow, then
those whose memory does not fit; within a group, the machines the rule engine says fit
(``recommend``'s ``fits_here``) before those it cannot tell and those it says do not,
then by ``--by``: the shortest estimated time (training: total time; inference: time
per batch), the lowest cost or the least energy (:class:`~hwadvisor.cost.model.Cost`;
an unknown figure sorts last), then the source name.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from hwadvisor.export.report import Report
from hwadvisor.export.roles import node_roles
from hwadvisor.models.cost import Cost
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.fleet import (
    FleetEntry,
    FleetGroup,
    FleetReport,
    FleetSkip,
    FleetStatus,
    RankBy,
)
from hwadvisor.models.workload import Task, Workload
from hwadvisor.units import duration, human_bytes

_STATUS_ORDER = {
    FleetStatus.FITS: 0,
    FleetStatus.UNKNOWN: 1,
    FleetStatus.TOO_SLOW: 2,
    FleetStatus.NO_FIT: 3,
}


@dataclass(frozen=True)
class Candidate:
    """A readable report with the workload's estimate on that machine (or why there is none)."""

    report: Report
    estimate: DeviceEstimate | None
    error: str | None = None
    recommended_device: str | None = None
    rules_fit: bool | None = None
    advice: str | None = None
    cost: Cost | None = None
    key: str | None = None  # the hardware key: candidates sharing it share their roles


def _device(estimate: DeviceEstimate) -> str:
    # The estimator names this machine's CPU "here"; anything else is a catalog GPU.
    if estimate.device == "here":
        return "cpu"
    return "multi_gpu" if estimate.gpus > 1 else "gpu"


def _judge(workload: Workload, est: DeviceEstimate) -> tuple[FleetStatus, float | None, str]:
    """Status, the time that ranks, and a one-line reason."""
    if est.fits is False:
        return (
            FleetStatus.NO_FIT,
            est.total_time_s,
            f"needs {human_bytes(est.memory_bytes)}, has {human_bytes(est.device_memory_bytes)}",
        )
    if workload.task is Task.SERVE:
        return _judge_serving(workload, est)
    if workload.task is Task.INFER:
        step = est.step_time_s
        if step is None:
            return FleetStatus.UNKNOWN, None, "no latency estimate"
        latency_ms = step * 1000
        if workload.latency_ms is not None and latency_ms > workload.latency_ms:
            return (
                FleetStatus.TOO_SLOW,
                step,
                f"{latency_ms:.1f} ms per batch > {workload.latency_ms:g} ms target",
            )
        tput = est.throughput_samples_s
        if workload.qps is not None and tput is not None and tput < workload.qps:
            return FleetStatus.TOO_SLOW, step, f"{tput:.1f} samples/s < {workload.qps:g} QPS target"
        status = FleetStatus.FITS if est.fits else FleetStatus.UNKNOWN
        met = [f"{latency_ms:.1f} ms per batch"]
        if workload.latency_ms is not None:
            met[0] += f" <= {workload.latency_ms:g} ms target"
        if workload.qps is not None and tput is not None:
            met.append(f"{tput:.0f} samples/s >= {workload.qps:g} QPS")
        if not est.fits:
            met.append("memory fit unknown")
        return status, step, ", ".join(met)
    total = est.total_time_s
    if total is None:
        return FleetStatus.UNKNOWN, None, "no time estimate"
    deadline_s = workload.deadline_hours * 3600
    hours = duration(total)
    if total > deadline_s:
        return FleetStatus.TOO_SLOW, total, f"{hours} > {workload.deadline_hours:g} h deadline"
    status = FleetStatus.FITS if est.fits else FleetStatus.UNKNOWN
    return (
        status,
        total,
        f"{hours} within {workload.deadline_hours:g} h"
        + ("" if est.fits else ", memory fit unknown"),
    )


def _judge_serving(
    workload: Workload, est: DeviceEstimate
) -> tuple[FleetStatus, float | None, str]:
    """A served language model: requests/s against --qps, the first token against
    --latency-ms; ranked by the time of one batch of --concurrency requests."""
    sv, step = est.serving, est.step_time_s
    if sv is None or sv.decode_tokens_per_s is None or step is None:
        return FleetStatus.UNKNOWN, None, "no tokens/s estimate"
    said = f"{sv.decode_tokens_per_s:.1f} tokens/s, first token {duration(sv.ttft_s)}"
    target = workload.latency_ms
    if target is not None and sv.ttft_s is not None and sv.ttft_s * 1000 > target:
        return FleetStatus.TOO_SLOW, step, f"{said} > {target:g} ms target"
    rps = sv.requests_per_s
    if workload.qps is not None and rps is not None and rps < workload.qps:
        return FleetStatus.TOO_SLOW, step, f"{rps:.2f} requests/s < {workload.qps:g} QPS target"
    status = FleetStatus.FITS if est.fits else FleetStatus.UNKNOWN
    return status, step, said + (f", {rps:.2f} requests/s" if rps is not None else "")


def _metric(by: RankBy, time_s: float | None, cost: Cost | None) -> float:
    if by is RankBy.COST:
        value = cost.on_demand_usd if cost is not None else None
    elif by is RankBy.ENERGY:
        value = cost.energy_kwh if cost is not None else None
    else:
        value = time_s
    return value if value is not None and math.isfinite(value) else math.inf


def _finite(value: float | None) -> float:
    return value if value is not None and math.isfinite(value) else math.inf


def _grouped(
    rows: Sequence[tuple[object, dict[str, object]]],
) -> tuple[list[FleetEntry], list[FleetGroup]]:
    """The ranked machines, each with its hardware group's rank, and the groups.

    A row's ``group`` comes in as its hardware key (machines sharing it share their
    estimate, verdict and price) and goes out as the rank of that group, groups being
    ranked by their best machine.
    """
    rank_of: dict[object, int] = {}
    firsts: list[int] = []
    counts: list[int] = []
    machines = []
    for i, (_, fields) in enumerate(rows):
        group = rank_of.setdefault(fields["group"], len(firsts) + 1)
        if group > len(firsts):
            firsts.append(i + 1)
            counts.append(0)
        counts[group - 1] += 1
        machines.append(FleetEntry.model_validate({**fields, "rank": i + 1, "group": group}))
    groups = [
        FleetGroup(rank=g + 1, count=n, first=f)
        for g, (n, f) in enumerate(zip(counts, firsts, strict=True))
    ]
    return machines, groups


def rank_fleet(
    candidates: Sequence[Candidate],
    workload: Workload,
    *,
    scenario: str | None = None,
    skipped: Sequence[FleetSkip] = (),
    by: RankBy = RankBy.TIME,
) -> FleetReport:
    """Order the machines for ``workload``; candidates without an estimate are skipped."""
    rows: list[tuple[tuple[int, int, float, float, str], dict[str, object]]] = []
    skips = list(skipped)
    roles_of: dict[tuple[str, object], list[str]] = {}
    for cand in candidates:
        est = cand.estimate
        if est is None:
            skips.append(FleetSkip(source=cand.report.source, reason=cand.error or "no estimate"))
            continue
        status, time_s, reason = _judge(workload, est)
        facts = cand.report.facts
        # Roles depend on the facts and the saved verdicts: shared within a hardware key.
        rkey = (cand.key or cand.report.source, cand.report.verdicts)
        roles = roles_of.get(rkey)
        if roles is None:
            roles = roles_of[rkey] = node_roles(cand.report)
        # Within a status, the machines the rule engine says fit come first.
        key = (
            _STATUS_ORDER[status],
            {True: 0, None: 1, False: 2}[cand.rules_fit],
            _metric(by, time_s, cand.cost),
            _finite(time_s),
            cand.report.source,
        )
        rows.append(
            (
                key,
                {
                    "source": cand.report.source,
                    "hostname": facts.host.hostname,
                    "device": _device(est),
                    "gpus": [
                        f"{g.name or g.vendor} {human_bytes(g.memory_total_bytes)}"
                        for g in facts.gpus
                    ],
                    "usable_cores": facts.cpu.usable_cores,
                    "status": status,
                    "fits_memory": est.fits,
                    "time_s": time_s,
                    "memory_bytes": est.memory_bytes,
                    "device_memory_bytes": est.device_memory_bytes,
                    "priced_as": est.device if est.gpus == 1 else f"{est.device} x{est.gpus}",
                    "basis": est.basis,
                    "recommended_device": cand.recommended_device,
                    "rules_fit": cand.rules_fit,
                    "advice": cand.advice,
                    "reason": reason,
                    "roles": roles,
                    "cost": cand.cost,
                    "group": cand.key or cand.report.source,
                },
            )
        )
    rows.sort(key=lambda r: r[0])
    machines, groups = _grouped(rows)
    stale = sorted(
        {n for m in machines if m.cost and m.cost.stale for n in m.cost.notes if "dated" in n}
    )
    return FleetReport(
        scenario=scenario,
        by=by,
        workload=workload,
        machines=machines,
        groups=groups,
        skipped=skips,
        warnings=stale,
    )
