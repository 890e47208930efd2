"""The evaluation context: one flat ``{dotted.path: value}`` map built from the inputs.

A value of ``None`` (or a path that is absent) means *unknown*. Facts whose probe could
not run are unknown, never ``false``: in particular the CPU feature booleans are unknown
when no flags were read, because the model's ``false`` default would otherwise claim
"no AVX-512" about a machine nobody looked at.
"""

from __future__ import annotations

import re
from typing import Any

from hwadvisor.engine.paths import BENCH_DEVICES, LOCAL_PREFIX
from hwadvisor.engine.versions import newest_wheel_tag, parse_version
from hwadvisor.models.advice import Verdict
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
from hwadvisor.models.facts import Facts, Gpu
from hwadvisor.models.workload import Budget, Scenario, Team, Workload

Context = dict[str, Any]

_SERVER_CPU = re.compile(
    r"xeon|epyc|neoverse|graviton|ampere|threadripper pro|grace", re.IGNORECASE
)
#: Throughput headroom over the requested QPS before a device "serves" it (bursts, jitter).
QPS_HEADROOM = 1.3
#: Derived bench figures (``BenchReport.derived`` ids past the device) rules may read.
_BENCH_DERIVED = frozenset({"load_over_threads", "fp32_matmul_of_peak"})


def _flatten(data: Any, prefix: str, out: Context) -> None:
    if isinstance(data, dict):
        for key, value in data.items():
            _flatten(value, f"{prefix}.{key}" if prefix else str(key), out)
    else:
        out[prefix] = data


def _facts_part(facts: Facts) -> Context:
    out: Context = {}
    for section in ("host", "cpu", "memory", "software"):
        _flatten(getattr(facts, section).model_dump(mode="json"), section, out)
    cpu = facts.cpu
    known = bool(cpu.flags) or any(cpu.features.model_dump().values())
    out["cpu.features_known"] = known
    if not known:
        for name in type(cpu.features).model_fields:
            out[f"cpu.features.{name}"] = None
    text = " ".join(x for x in (cpu.vendor, cpu.model) if x)
    cores = cpu.physical_cores or cpu.logical_cores
    if text or cores or cpu.sockets:
        out["cpu.server_class"] = (
            bool(_SERVER_CPU.search(text)) or (cpu.sockets or 1) > 1 or (cores or 0) >= 32
        )
    mem = facts.memory
    limits = [v for v in (mem.total_bytes, mem.cgroup_limit_bytes) if v]
    out["memory.usable_bytes"] = min(limits) if limits else None
    out["software.issue_count"] = len(facts.software.issues)
    out["software.has_optimized_runtime"] = bool(
        facts.software.onnxruntime or facts.software.openvino
    )
    out.update(_gpu_part(facts.gpus))
    return out


def _known(values: list[Any]) -> list[Any]:
    return [v for v in values if v is not None]


def _gpu_part(gpus: list[Gpu]) -> Context:
    out: Context = {
        "gpu.count": len(gpus),
        "gpu.nvidia_count": sum(g.vendor.lower() == "nvidia" for g in gpus),
    }
    out["gpu.names"] = [g.name or "unknown" for g in gpus]
    out["gpu.vendors"] = sorted({g.vendor for g in gpus})
    out["gpu.architectures"] = sorted({g.architecture for g in gpus if g.architecture})
    if not gpus:
        # No GPU is a known fact: aggregates that count or test "any" are definite.
        out.update(
            {
                "gpu.any_nvlink": False,
                "gpu.any_mig": False,
                "gpu.any_lacks_bf16": False,
                "gpu.unified_memory": False,
            }
        )
        return out
    first = gpus[0]
    out["gpu.name"] = first.name
    out["gpu.driver_version"] = first.driver_version
    mems = _known([g.memory_total_bytes for g in gpus])
    if len(mems) == len(gpus):
        out.update(
            {
                "gpu.max_memory_bytes": max(mems),
                "gpu.min_memory_bytes": min(mems),
                "gpu.total_memory_bytes": sum(mems),
            }
        )
    links = [g.nvlink_active_links for g in gpus]
    if any(n for n in links if n):
        out["gpu.any_nvlink"] = True
    elif all(n is not None for n in links):
        out["gpu.any_nvlink"] = False
    if all(n is not None for n in links):
        out["gpu.min_nvlink_links"] = min(n for n in links if n is not None)
    migs = [g.mig_enabled for g in gpus]
    out["gpu.any_mig"] = (
        True if any(migs) else (False if all(m is not None for m in migs) else None)
    )
    bf16 = [g.supports.bf16 for g in gpus]
    if all(b is not None for b in bf16):
        out["gpu.all_bf16"] = all(bf16)
        out["gpu.any_lacks_bf16"] = not all(bf16)
    elif any(b is False for b in bf16):
        out["gpu.any_lacks_bf16"] = True
    caps = _known([g.compute_capability for g in gpus if g.vendor.lower() == "nvidia"])
    parsed = [c for c in caps if parse_version(c) is not None]
    if parsed:
        out["gpu.min_compute_capability"] = min(parsed, key=lambda c: parse_version(c) or ())
    drivers = _known([g.cuda_driver_version for g in gpus])
    drivers = [d for d in drivers if parse_version(d) is not None]
    if drivers:
        lowest = min(drivers, key=lambda d: parse_version(d) or ())
        out["gpu.min_cuda_driver"] = lowest
        out["gpu.torch_wheel_tag"] = newest_wheel_tag(lowest)
    gens = _known([g.pcie_generation for g in gpus])
    if gens:
        out["gpu.min_pcie_generation"] = min(gens)
    out["gpu.unified_memory"] = any(g.unified_memory for g in gpus)
    util = _known([g.utilization_percent for g in gpus])
    out["gpu.max_utilization_percent"] = max(util) if util else None
    temps = _known([g.temperature_c for g in gpus])
    out["gpu.max_temperature_c"] = max(temps) if temps else None
    return out


def _bench_class(device: str) -> str | None:
    if device == "cpu":
        return "cpu"
    if device == "mps":
        return "mps"
    if device.startswith(("cuda", "xpu", "rocm", "hip")):
        return "gpu"
    return None


def _bench_part(bench: BenchReport | None) -> Context:
    out: Context = {"bench.available": bench is not None}
    if bench is None:
        return out
    for r in bench.results:
        cls = _bench_class(r.device)
        if cls is None:
            continue
        key = f"bench.{cls}.{r.kernel}.{r.dtype}"
        out[key] = max(out.get(key) or 0.0, r.value)
        if r.threads is not None:
            out[f"bench.{cls}.threads"] = r.threads
    for cls in BENCH_DEVICES:
        base = out.get(f"bench.{cls}.matmul.fp32")
        for dtype in ("tf32", "bf16", "fp16", "int8"):
            other = out.get(f"bench.{cls}.matmul.{dtype}")
            if base and other:
                out[f"bench.{cls}.{dtype}_over_fp32"] = other / base
    # Ratios the benchmark derived itself (measured in one run, so less noisy) win.
    for d in bench.derived:
        cls, _, name = d.id.partition(".")
        if cls in BENCH_DEVICES and (name.endswith("_over_fp32") or name in _BENCH_DERIVED):
            out[f"bench.{cls}.{name}"] = d.ratio
    return out


def _is_sharding(fix: str) -> bool:
    """A fix that spreads the job over several GPUs does not make one GPU enough."""
    return "shard" in fix.lower() or "zero-3" in fix.lower()


def _fix_that_fits(est: DeviceEstimate) -> str | None:
    return next((f.fix for f in est.fixes if f.fits and not _is_sharding(f.fix)), None)


def _pick(
    estimates: list[DeviceEstimate], *, multi: bool, gpu_ids: frozenset[str] | None
) -> DeviceEstimate | None:
    """The best catalog GPU (or multi-GPU) estimate: fits first, then fastest, then largest."""
    pool = [
        e
        for e in estimates
        if e.device != "here"
        and not e.device.startswith(LOCAL_PREFIX)
        and (gpu_ids is None or e.device in gpu_ids)
        and (e.gpus > 1) == multi
    ]

    def rank(e: DeviceEstimate) -> tuple[int, float, int, str]:
        fit = 0 if e.fits else 1 if _fix_that_fits(e) else 2 if e.fits is None else 3
        time = e.total_time_s if e.total_time_s is not None else float("inf")
        return fit, time, -(e.device_memory_bytes or 0), e.device

    return min(pool, key=rank, default=None)


def _estimate_slot(est: DeviceEstimate, slot: str, workload: Workload) -> Context:
    out: Context = {}
    data = est.model_dump(
        mode="json", exclude={"memory", "fixes", "assumptions", "time_breakdown_s"}
    )
    _flatten(data, f"estimate.{slot}", out)
    p = f"estimate.{slot}"
    if est.total_time_s is not None:
        out[f"{p}.total_time_h"] = est.total_time_s / 3600.0
        out[f"{p}.within_deadline"] = est.total_time_s <= workload.deadline_hours * 3600.0
    if est.step_time_s is not None:
        latency = est.step_time_s * 1000.0
        out[f"{p}.latency_ms"] = latency
        if workload.latency_ms is not None:
            out[f"{p}.meets_latency"] = latency <= workload.latency_ms
    if est.throughput_samples_s is not None and workload.qps is not None:
        out[f"{p}.serves_qps"] = est.throughput_samples_s >= workload.qps * QPS_HEADROOM
    first_fix = _fix_that_fits(est)
    if est.fits is not None:
        out[f"{p}.fits_after_fixes"] = bool(est.fits or first_fix)
    out[f"{p}.first_fitting_fix"] = first_fix
    if est.fits:
        out[f"{p}.memory_after_fixes_bytes"] = est.memory_bytes
    elif first_fix is not None:
        out[f"{p}.memory_after_fixes_bytes"] = next(
            f.memory_bytes for f in est.fixes if f.fix == first_fix
        )
    if est.fits is False:
        shard = next((f.fix for f in est.fixes if f.fits and _is_sharding(f.fix)), None)
        out[f"{p}.needs_sharding"] = first_fix is None and shard is not None
    return out


def _estimate_part(
    report: EstimateReport | None, workload: Workload, gpu_ids: frozenset[str] | None
) -> Context:
    out: Context = {"estimate.available": report is not None}
    if report is None:
        return out
    here = next((e for e in report.estimates if e.device == "here"), None)
    local = [e for e in report.estimates if e.device.startswith(LOCAL_PREFIX)]
    slots = {
        "here": here,
        "best_gpu": _pick(report.estimates, multi=False, gpu_ids=gpu_ids),
        "best_multi_gpu": _pick(report.estimates, multi=True, gpu_ids=gpu_ids),
        "local_gpu": next((e for e in local if e.gpus == 1), None),
        "local_gpus": next((e for e in local if e.gpus > 1), None),
    }
    for slot, est in slots.items():
        if est is not None:
            out.update(_estimate_slot(est, slot, workload))
    here_t = out.get("estimate.here.total_time_s")
    for slot in ("best_gpu", "best_multi_gpu"):
        other_t = out.get(f"estimate.{slot}.total_time_s")
        if here_t and other_t:
            out[f"estimate.speedup_{slot}"] = here_t / other_t
    return out


def build_context(
    *,
    facts: Facts,
    workload: Workload,
    scenario: Scenario,
    bench: BenchReport | None = None,
    estimates: EstimateReport | None = None,
    budget: Budget = Budget.NORMAL,
    team: Team | None = None,
    gpu_ids: frozenset[str] | None = None,
) -> Context:
    """Everything a rule may read, flattened to dotted paths (``None`` = unknown).

    ``gpu_ids`` names the estimate devices that are GPUs (catalog kind ``gpu``), so that
    ``estimate.best_gpu`` never picks a catalog CPU; None treats every non-``here``
    estimate as a GPU.
    """
    ctx: Context = {}
    ctx.update(_facts_part(facts))
    _flatten(workload.model_dump(mode="json", exclude={"profile", "assumptions"}), "workload", ctx)
    ctx.update(_bench_part(bench))
    ctx.update(_estimate_part(estimates, workload, gpu_ids))
    ctx["options.scenario"] = scenario.value
    ctx["options.budget"] = budget.value
    ctx["options.team"] = team.value if team is not None else None
    return ctx


def with_verdict(ctx: Context, verdict: Verdict) -> Context:
    """The context of the second pass: the first pass's verdict added as ``verdict.*``."""
    out = dict(ctx)
    out["verdict.device"] = verdict.device.value
    out["verdict.fits_here"] = verdict.fits_here
    out["verdict.confidence"] = verdict.confidence.value
    # "Moves a CPU user to GPU": no GPU here, or one that this torch build cannot drive.
    gpu_ready = bool(ctx.get("gpu.count")) and bool(
        ctx.get("software.torch.cuda")
        or ctx.get("software.torch.hip")
        or (ctx.get("gpu.unified_memory") and ctx.get("software.torch.version"))
    )
    out["verdict.moves_to_gpu"] = verdict.device.value != "cpu" and not gpu_ready
    return out
