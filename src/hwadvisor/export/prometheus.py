"""Prometheus node_exporter textfile-collector metrics, through prometheus_client.

node_exporter's textfile collector reads ``*.prom`` files from the folder given by
``--collector.textfile.directory``; the exposition text comes from prometheus_client's
own :func:`generate_latest` over a private :class:`CollectorRegistry` (never string
building), and is written atomically through a dot-file that the collector ignores.
Rates are in base units (FLOP/s, op/s, bytes/s), following Prometheus naming practice.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hwadvisor.errors import MissingDependencyError
from hwadvisor.export.report import Report
from hwadvisor.export.roles import node_roles
from hwadvisor.models.facts import CpuFeatures

if TYPE_CHECKING:
    from prometheus_client.registry import CollectorRegistry

#: bench unit -> (metric name suffix, factor to the base unit)
_UNITS = {
    "GFLOP/s": ("flops", 1e9),
    "GOP/s": ("ops", 1e9),
    "GB/s": ("bytes", 1e9),
}


def require_prometheus() -> Any:
    """The prometheus_client module, or :class:`MissingDependencyError` (exit 3) naming the fix."""
    try:
        import prometheus_client
    except ImportError as exc:
        raise MissingDependencyError(
            "--format prometheus needs prometheus_client: pip install prometheus-client"
        ) from exc
    return prometheus_client


def _timestamp(iso: str) -> float | None:
    try:
        return datetime.fromisoformat(iso).timestamp()
    except ValueError:
        return None


class _ReportCollector:
    """A one-shot collector yielding the report's figures as gauge families."""

    def __init__(self, report: Report) -> None:
        self.report = report

    def collect(self) -> Iterator[Any]:
        """Yield the metric families (called once by ``generate_latest``)."""
        from prometheus_client.core import GaugeMetricFamily

        facts = self.report.facts
        stamp = _timestamp(facts.generated_at)
        if stamp is not None:
            g = GaugeMetricFamily(
                "hwadvisor_report_timestamp_seconds", "When the facts were probed (Unix time)."
            )
            g.add_metric([], stamp)
            yield g
        if facts.cpu.usable_cores is not None:
            g = GaugeMetricFamily(
                "hwadvisor_cpu_usable_cores",
                "CPU cores this process may use: min(affinity, ceil(cgroup quota)).",
            )
            g.add_metric([], facts.cpu.usable_cores)
            yield g
        feats = GaugeMetricFamily(
            "hwadvisor_cpu_feature",
            "CPU instruction-set feature present (1) or not (0).",
            labels=["feature"],
        )
        for f in fields_of(CpuFeatures):
            feats.add_metric([f], 1.0 if getattr(facts.cpu.features, f) else 0.0)
        yield feats
        if facts.memory.total_bytes is not None:
            g = GaugeMetricFamily("hwadvisor_memory_total_bytes", "System memory.")
            g.add_metric([], facts.memory.total_bytes)
            yield g
        count = GaugeMetricFamily("hwadvisor_gpu_count", "GPUs found by the probe.")
        count.add_metric([], len(facts.gpus))
        yield count
        gmem = GaugeMetricFamily(
            "hwadvisor_gpu_memory_total_bytes",
            "Memory of each GPU, keyed by UUID.",
            labels=["uuid", "index", "name", "pci_bus_id"],
        )
        for gpu in facts.gpus:
            if gpu.memory_total_bytes is not None:
                gmem.add_metric(
                    [gpu.uuid or "", str(gpu.index), gpu.name or "", gpu.pci_bus_id or ""],
                    gpu.memory_total_bytes,
                )
        yield gmem
        roles = GaugeMetricFamily(
            "hwadvisor_node_role",
            "Roles this node suits (1), main one labelled primary.",
            labels=["role", "primary"],
        )
        for i, role in enumerate(node_roles(self.report)):
            roles.add_metric([role, "true" if i == 0 else "false"], 1.0)
        yield roles
        yield from self._bench()

    def _bench(self) -> Iterator[Any]:
        from prometheus_client.core import GaugeMetricFamily

        bench = self.report.bench
        if bench is None:
            return
        families: dict[str, Any] = {}
        best: dict[tuple[str, str, str, str], float] = {}
        for r in bench.results:
            key = (r.unit, r.device, r.kernel, r.dtype)
            best[key] = max(r.value, best.get(key, r.value))
        names = {d.device: d.name or "" for d in bench.devices}
        for (unit, device, kernel, dtype), value in sorted(best.items()):
            if unit not in _UNITS:
                continue
            suffix, factor = _UNITS[unit]
            name = f"hwadvisor_bench_{suffix}_per_second"
            if name not in families:
                families[name] = GaugeMetricFamily(
                    name,
                    f"Best measured throughput ({unit} x {factor:g}) per device, kernel and dtype.",
                    labels=["device", "device_name", "kernel", "dtype"],
                )
            families[name].add_metric(
                [device, names.get(device, ""), kernel, dtype], value * factor
            )
        yield from families.values()


def fields_of(model: type[CpuFeatures]) -> list[str]:
    """The feature names of the CPU features model, in declaration order."""
    return list(model.model_fields)


def build_registry(report: Report) -> CollectorRegistry:
    """A fresh registry holding only this report's metrics."""
    prom = require_prometheus()
    registry = prom.CollectorRegistry(auto_describe=False)
    registry.register(_ReportCollector(report))
    return registry


def render_metrics(report: Report) -> str:
    """The textfile-collector text for ``report`` (prometheus_client's exposition format)."""
    prom = require_prometheus()
    data: bytes = prom.generate_latest(build_registry(report))
    return data.decode("utf-8")
