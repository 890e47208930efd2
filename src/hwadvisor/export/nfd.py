"""Kubernetes Node Feature Discovery: a ``features.d`` file of hwadvisor's node labels.

NFD's local source reads ``/etc/kubernetes/node-feature-discovery/features.d/``: lines
``<prefix>/<name>=<value>``, ``#`` comments and a ``# +expiry-time=<RFC3339>`` directive,
files of at most 64 KiB, dot-files ignored (so an atomic write's temporary file is never
read half-written). Labels say what a scheduler needs to place a job: the node's roles,
usable cores, AMX / AVX-512, GPU count and memory class, and a measured matmul class
(decade buckets, so that run-to-run noise does not relabel nodes). Keys named by NVIDIA's
GPU Feature Discovery (``nvidia.com/gpu.*``) are left to it.
"""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from hwadvisor.errors import OutputError, UsageError
from hwadvisor.export.labels import (
    DEFAULT_PREFIX,
    bool_value,
    check_prefix,
    is_valid_name,
    is_valid_value,
    sanitize,
)
from hwadvisor.export.report import Report
from hwadvisor.export.roles import GIB, node_roles

MAX_FILE_BYTES = 64 * 1024
DEFAULT_EXPIRY_HOURS = 24.0
#: A year: labels that should outlive that need no expiry at all (``--expiry 0``).
MAX_EXPIRY_HOURS = 8760.0

#: GPU memory classes by the smallest GPU's total memory (GiB lower bounds).
MEMORY_CLASSES = ((64, "xlarge"), (32, "large"), (15, "medium"), (0, "small"))


def memory_class(total_bytes: int | None) -> str:
    """``small`` (< 15 GiB), ``medium`` (16 GB class), ``large`` (32-48 GB), ``xlarge`` (64 GiB+)."""
    if total_bytes is None:
        return "unknown"
    gib = total_bytes / GIB
    return next(name for floor, name in MEMORY_CLASSES if gib >= floor)


def rate_class(gflops: float) -> str:
    """Decade bucket of a rate in GFLOP/s: ``lt-10``, ``10-100``, ``100-1k`` ... ``100k-plus``."""
    names = ["10", "100", "1k", "10k", "100k"]
    if not math.isfinite(gflops):
        return "unknown"
    if gflops < 10:
        return "lt-10"
    decade = min(math.floor(math.log10(gflops)) - 1, len(names) - 1)
    return "100k-plus" if decade == len(names) - 1 else f"{names[decade]}-{names[decade + 1]}"


def _bench_labels(report: Report) -> dict[str, str]:
    bench = report.bench
    labels: dict[str, str] = {}
    if bench is None:
        return labels
    gpu_devices = sorted(
        {r.device for r in bench.results if r.device.startswith(("cuda", "xpu", "mps"))}
    )
    for dtype in ("fp32", "bf16"):
        cpu = bench.best("cpu", "matmul", dtype)
        if cpu is not None:
            labels[f"bench.cpu.matmul-{dtype}"] = rate_class(cpu.value)
        # The slowest GPU sets what a job placed on "a GPU of this node" can count on.
        rates = [r.value for d in gpu_devices if (r := bench.best(d, "matmul", dtype)) is not None]
        if rates:
            labels[f"bench.gpu.matmul-{dtype}"] = rate_class(min(rates))
    return labels


def node_labels(report: Report) -> dict[str, str]:
    """Label names (without prefix) and values for this report, sanitised, in a fixed order."""
    facts = report.facts
    feats = facts.cpu.features
    roles = node_roles(report)
    labels: dict[str, str] = {"role": roles[0]}
    labels.update({f"role.{r}": "true" for r in roles})
    if facts.cpu.usable_cores is not None:
        labels["cpu.usable-cores"] = str(facts.cpu.usable_cores)
    if facts.cpu.microarchitecture:
        labels["cpu.microarchitecture"] = facts.cpu.microarchitecture
    labels["cpu.avx2"] = bool_value(feats.avx2)
    labels["cpu.avx512"] = bool_value(feats.avx512f)
    labels["cpu.amx"] = bool_value(feats.amx_bf16 or feats.amx_int8 or feats.amx_tile)
    if facts.memory.total_bytes is not None:
        # The node's memory, not the exporter container's cgroup limit (a DaemonSet pod
        # has a small one): labels describe the node.
        labels["memory.gib"] = str(facts.memory.total_bytes // GIB)
    labels["gpu.count"] = str(len(facts.gpus))
    if facts.gpus:
        sizes = [g.memory_total_bytes for g in facts.gpus]
        smallest = None if any(s is None for s in sizes) else min(s for s in sizes if s is not None)
        labels["gpu.memory-class"] = memory_class(smallest)
        if smallest is not None:
            labels["gpu.memory-gib"] = str(smallest // GIB)
    labels.update(_bench_labels(report))
    return {sanitize(k): sanitize(v) for k, v in labels.items() if sanitize(k)}


def expiry_time(now: datetime, hours: float) -> str:
    """RFC 3339 UTC time ``hours`` after ``now``, to the second (``2026-11-30T04:00:00Z``)."""
    if not 0 < hours <= MAX_EXPIRY_HOURS:
        raise UsageError(f"expiry must be between 0 and {MAX_EXPIRY_HOURS:g} hours, not {hours}")
    when = now.astimezone(timezone.utc) + timedelta(hours=hours)
    return when.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def render_features(
    report: Report,
    *,
    prefix: str = DEFAULT_PREFIX,
    expiry_hours: float | None = DEFAULT_EXPIRY_HOURS,
    now: datetime | None = None,
) -> str:
    """The ``features.d`` file text; ``expiry_hours`` None or 0 writes no expiry directive."""
    ns = check_prefix(prefix)
    now = now or datetime.now(timezone.utc)
    lines = [
        "# Node labels written by hwadvisor (hwadvisor export --format nfd); do not edit.",
        f"# source: {sanitize(report.source) or 'report'}, facts of {report.facts.generated_at}",
    ]
    if expiry_hours:
        lines.append(f"# +expiry-time={expiry_time(now, expiry_hours)}")
    for name, value in node_labels(report).items():
        # node_labels sanitises; this guards the invariant the file format relies on.
        if not (is_valid_name(name) and is_valid_value(value)):
            raise OutputError(f"internal: label {name}={value} breaks the label rules")
        lines.append(f"{ns}/{name}={value}")
    text = "\n".join(lines) + "\n"
    if len(text.encode("utf-8")) > MAX_FILE_BYTES:
        raise OutputError(
            f"features file would be {len(text.encode())} bytes, over NFD's 64 KiB limit"
        )
    return text
