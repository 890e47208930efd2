"""The fact namespace rules may read: every dotted path, its type, and where it comes from.

Most paths are generated from the models (``cpu.*``, ``memory.*``, ``host.*``,
``software.*`` from :class:`~hwadvisor.models.facts.Facts`; ``workload.*`` from
:class:`~hwadvisor.models.workload.Workload`; ``estimate.here.*`` and friends from
:class:`~hwadvisor.models.estimate.DeviceEstimate`), so a renamed model field breaks the
rules at load time, not silently at run time. The *derived* paths (aggregates over the
GPU list, benchmark figures, ratios) are declared here with a description each;
``docs/writing-rules.md`` lists them.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from enum import Enum
from functools import lru_cache

from pydantic import BaseModel

from hwadvisor.models.advice import Confidence, DeviceClass
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Budget, Scenario, Team, Workload


class FactType(str, Enum):
    """What kind of value a path holds, which decides the operators it accepts."""

    BOOL = "bool"
    NUMBER = "number"
    STRING = "string"
    VERSION = "version"
    LIST = "list"


@dataclass(frozen=True)
class FactSpec:
    """One path of the namespace."""

    path: str
    type: FactType
    doc: str
    choices: tuple[str, ...] = ()
    derived: bool = False


#: Fact fields that hold versions (compared with version_* operators as well as ==).
VERSION_FIELDS = frozenset(
    {
        "software.torch.version",
        "software.torch.cuda",
        "software.torch.hip",
        "software.torch.cudnn",
        "software.python",
        "software.onnxruntime",
        "software.openvino",
        "software.tensorflow",
        "host.kernel",
        "host.python",
    }
)
#: Facts fields that are not facts about the machine (bookkeeping, or aggregated below).
_SKIPPED = frozenset({"schema_version", "tool", "generated_at", "probes", "bench", "gpus"})

BENCH_DEVICES = ("cpu", "gpu", "mps")
BENCH_KERNELS = ("matmul", "conv2d", "copy", "triad", "h2d", "d2h")
BENCH_DTYPES = ("fp32", "tf32", "bf16", "fp16", "int8")
ESTIMATE_SLOTS = {
    "here": "this machine (or the one in --facts)",
    "best_gpu": "the fastest single catalog GPU that fits the job (else the fastest)",
    "best_multi_gpu": "the fastest multi-GPU catalog configuration",
    "local_gpu": "one of this machine's own GPUs (its catalog entry), when the catalog knows it",
    "local_gpus": "all of this machine's GPUs of that type together, when it has several",
}
#: Prefix of the estimate device ids that price this machine's own GPUs.
LOCAL_PREFIX = "local:"

_DERIVED: list[tuple[str, FactType, str]] = [
    (
        "cpu.server_class",
        FactType.BOOL,
        "a server CPU: Xeon / EPYC / Neoverse, or several sockets, or 32+ cores",
    ),
    (
        "cpu.features_known",
        FactType.BOOL,
        "the feature flags were read (false: every cpu.features.* is unknown)",
    ),
    ("memory.usable_bytes", FactType.NUMBER, "min(total_bytes, cgroup_limit_bytes)"),
    ("gpu.count", FactType.NUMBER, "number of GPUs found (0 when none)"),
    ("gpu.nvidia_count", FactType.NUMBER, "number of NVIDIA GPUs"),
    ("gpu.name", FactType.STRING, "name of the first GPU"),
    ("gpu.names", FactType.LIST, "names of all GPUs"),
    ("gpu.vendors", FactType.LIST, "vendors of all GPUs"),
    ("gpu.architectures", FactType.LIST, "architectures of all GPUs"),
    ("gpu.max_memory_bytes", FactType.NUMBER, "memory of the largest GPU"),
    ("gpu.min_memory_bytes", FactType.NUMBER, "memory of the smallest GPU"),
    ("gpu.total_memory_bytes", FactType.NUMBER, "memory of all GPUs together"),
    ("gpu.any_nvlink", FactType.BOOL, "some GPU has an active NVLink"),
    ("gpu.min_nvlink_links", FactType.NUMBER, "fewest active NVLink links on any GPU"),
    ("gpu.any_mig", FactType.BOOL, "MIG mode is on for some GPU"),
    ("gpu.any_lacks_bf16", FactType.BOOL, "some GPU has no bf16 tensor math (T4, V100, older)"),
    ("gpu.all_bf16", FactType.BOOL, "every GPU runs bf16"),
    ("gpu.min_compute_capability", FactType.VERSION, "lowest compute capability (NVIDIA)"),
    ("gpu.min_cuda_driver", FactType.VERSION, "highest CUDA version every GPU's driver runs"),
    ("gpu.driver_version", FactType.VERSION, "driver version of the first GPU"),
    (
        "gpu.torch_wheel_tag",
        FactType.STRING,
        "newest torch CUDA wheel tag the driver runs (cu118, cu121, ...)",
    ),
    ("gpu.min_pcie_generation", FactType.NUMBER, "lowest PCIe generation of any GPU"),
    ("gpu.unified_memory", FactType.BOOL, "the GPU shares system memory (Apple Silicon)"),
    ("gpu.max_utilization_percent", FactType.NUMBER, "busiest GPU's utilisation when probed"),
    ("gpu.max_temperature_c", FactType.NUMBER, "hottest GPU's temperature when probed"),
    ("software.issue_count", FactType.NUMBER, "number of software.issues"),
    ("software.has_optimized_runtime", FactType.BOOL, "ONNX Runtime or OpenVINO is installed"),
    ("bench.available", FactType.BOOL, "a microbenchmark report was used"),
    ("estimate.available", FactType.BOOL, "an estimate report was used"),
    (
        "estimate.speedup_best_gpu",
        FactType.NUMBER,
        "estimate.here.total_time_s / estimate.best_gpu.total_time_s",
    ),
    (
        "estimate.speedup_best_multi_gpu",
        FactType.NUMBER,
        "estimate.here.total_time_s / estimate.best_multi_gpu.total_time_s",
    ),
    ("verdict.device", FactType.STRING, "the verdict's device class (second pass only)"),
    ("verdict.fits_here", FactType.BOOL, "the verdict's fits_here (second pass only)"),
    ("verdict.confidence", FactType.STRING, "the verdict's confidence (second pass only)"),
    (
        "verdict.moves_to_gpu",
        FactType.BOOL,
        "the verdict is gpu or multi_gpu and this machine has no GPU that its torch build drives (second pass only)",
    ),
]

_ESTIMATE_DERIVED: list[tuple[str, FactType, str]] = [
    ("total_time_h", FactType.NUMBER, "total_time_s in hours"),
    ("within_deadline", FactType.BOOL, "total_time_s <= workload.deadline_hours"),
    (
        "latency_ms",
        FactType.NUMBER,
        "step_time_s in ms (one batch; at batch 1 the per-request latency)",
    ),
    ("serves_qps", FactType.BOOL, "throughput_samples_s >= workload.qps x 1.3 headroom"),
    ("meets_latency", FactType.BOOL, "latency_ms <= workload.latency_ms"),
    ("fits_after_fixes", FactType.BOOL, "fits, or a memory fix other than sharding makes it fit"),
    (
        "first_fitting_fix",
        FactType.STRING,
        "the first memory fix (in order, sharding apart) that makes it fit",
    ),
    (
        "memory_after_fixes_bytes",
        FactType.NUMBER,
        "memory_bytes, or that of the first fix that fits",
    ),
    (
        "needs_sharding",
        FactType.BOOL,
        "does not fit on one device; only sharding over several GPUs makes it fit",
    ),
]

_CHOICES: dict[str, tuple[str, ...]] = {
    "options.scenario": tuple(s.value for s in Scenario),
    "options.budget": tuple(b.value for b in Budget),
    "options.team": tuple(t.value for t in Team),
    "verdict.device": tuple(d.value for d in DeviceClass),
    "verdict.confidence": tuple(c.value for c in Confidence),
}


def _unwrap(annotation: object) -> object:
    """``X | None`` -> ``X``; other annotations unchanged."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else annotation
    return annotation


def _walk(
    model: type[BaseModel],
    prefix: str,
    out: dict[str, FactSpec],
    skip: frozenset[str] = frozenset(),
) -> None:
    for name, field in model.model_fields.items():
        if name in skip:
            continue
        path = f"{prefix}.{name}"
        ann = _unwrap(field.annotation)
        doc = field.description or ""
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            _walk(ann, path, out)
        elif ann is bool:
            out[path] = FactSpec(path, FactType.BOOL, doc)
        elif ann in (int, float):
            out[path] = FactSpec(path, FactType.NUMBER, doc)
        elif isinstance(ann, type) and issubclass(ann, Enum):
            out[path] = FactSpec(path, FactType.STRING, doc, tuple(str(m.value) for m in ann))
        elif ann is str:
            out[path] = FactSpec(
                path, FactType.VERSION if path in VERSION_FIELDS else FactType.STRING, doc
            )
        elif typing.get_origin(ann) is list:
            out[path] = FactSpec(path, FactType.LIST, doc)


@lru_cache(maxsize=1)
def registry() -> dict[str, FactSpec]:
    """Every fact path a rule may name, generated from the models plus the derived ones."""
    out: dict[str, FactSpec] = {}
    for section, field in Facts.model_fields.items():
        if section in _SKIPPED:
            continue
        ann = _unwrap(field.annotation)
        if isinstance(ann, type) and issubclass(ann, BaseModel):
            _walk(ann, section, out)
    _walk(Workload, "workload", out, skip=frozenset({"profile", "assumptions"}))
    for slot in ESTIMATE_SLOTS:
        _walk(
            DeviceEstimate,
            f"estimate.{slot}",
            out,
            skip=frozenset({"memory", "fixes", "assumptions", "time_breakdown_s"}),
        )
        for name, ftype, doc in _ESTIMATE_DERIVED:
            out[f"estimate.{slot}.{name}"] = FactSpec(
                f"estimate.{slot}.{name}", ftype, doc, derived=True
            )
    for dev in BENCH_DEVICES:
        for kernel in BENCH_KERNELS:
            for dtype in BENCH_DTYPES:
                path = f"bench.{dev}.{kernel}.{dtype}"
                unit = (
                    "GB/s"
                    if kernel in ("copy", "triad", "h2d", "d2h")
                    else "GFLOP/s (GOP/s for int8)"
                )
                out[path] = FactSpec(
                    path,
                    FactType.NUMBER,
                    f"best measured {kernel} {dtype} on {dev}, {unit}",
                    derived=True,
                )
        for dtype in ("tf32", "bf16", "fp16", "int8"):
            path = f"bench.{dev}.{dtype}_over_fp32"
            out[path] = FactSpec(
                path,
                FactType.NUMBER,
                f"measured matmul {dtype} / fp32 speed-up on {dev}",
                derived=True,
            )
        for name, doc in (
            (
                "load_over_threads",
                "load average / benchmark threads while measuring (>1: the machine was busy)",
            ),
            ("fp32_matmul_of_peak", "measured fp32 matmul / theoretical fp32 peak"),
        ):
            out[f"bench.{dev}.{name}"] = FactSpec(
                f"bench.{dev}.{name}", FactType.NUMBER, doc, derived=True
            )
        out[f"bench.{dev}.threads"] = FactSpec(
            f"bench.{dev}.threads", FactType.NUMBER, "threads the benchmark used", derived=True
        )
    for path, ftype, doc in _DERIVED:
        out[path] = FactSpec(path, ftype, doc, _CHOICES.get(path, ()), derived=True)
    for path in ("options.scenario", "options.budget", "options.team"):
        out[path] = FactSpec(
            path, FactType.STRING, f"the {path.split('.')[1]} option", _CHOICES[path], derived=True
        )
    return out


def lookup(path: str) -> FactSpec | None:
    """The spec of ``path``, or None when no such fact exists."""
    return registry().get(path)


def suggest(path: str) -> str | None:
    """The closest known path to a misspelt one, for a 'did you mean' hint."""
    hits = difflib.get_close_matches(path, list(registry()), n=1, cutoff=0.6)
    return hits[0] if hits else None


def unknown_path_message(path: str) -> str:
    """'unknown fact path X (did you mean Y?)' in one line."""
    hint = suggest(path)
    return f"unknown fact path {path!r}" + (f" (did you mean {hint!r}?)" if hint else "")
