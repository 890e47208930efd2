"""Prometheus textfile output, read back with prometheus_client's own parser."""

from __future__ import annotations

import sys

import pytest
from prometheus_client.parser import text_string_to_metric_families

from hwadvisor.errors import MissingDependencyError
from hwadvisor.export.prometheus import render_metrics
from hwadvisor.export.report import Report

from .conftest import report_named


def _samples(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        assert family.type == "gauge"
        for s in family.samples:
            out.setdefault(s.name, []).append((dict(s.labels), s.value))
    return out


def test_every_saved_report_parses(good_report: Report) -> None:
    samples = _samples(render_metrics(good_report))
    facts = good_report.facts
    assert samples["hwadvisor_gpu_count"] == [({}, float(len(facts.gpus)))]
    assert samples["hwadvisor_cpu_usable_cores"] == [({}, float(facts.cpu.usable_cores or 0))]
    features = {labels["feature"]: v for labels, v in samples["hwadvisor_cpu_feature"]}
    assert features["avx2"] == float(facts.cpu.features.avx2)
    assert features["amx_bf16"] == float(facts.cpu.features.amx_bf16)


def test_measured_figures_in_base_units() -> None:
    report = report_named("recorded-epyc-milan-kvm")
    samples = _samples(render_metrics(report))
    flops = {
        (lab["device"], lab["kernel"], lab["dtype"]): v
        for lab, v in samples["hwadvisor_bench_flops_per_second"]
    }
    assert report.bench is not None
    fp32 = report.bench.best("cpu", "matmul", "fp32")
    assert fp32 is not None
    assert flops[("cpu", "matmul", "fp32")] == pytest.approx(fp32.value * 1e9)
    copy = {
        (lab["device"], lab["kernel"]): v for lab, v in samples["hwadvisor_bench_bytes_per_second"]
    }
    assert copy[("cpu", "copy")] == pytest.approx(5.61e9)


def test_gpu_memory_is_keyed_by_uuid() -> None:
    report = report_named("synthetic-dgx-h100x8")
    rows = _samples(render_metrics(report))["hwadvisor_gpu_memory_total_bytes"]
    uuids = {labels["uuid"] for labels, _ in rows}
    assert uuids == {g.uuid for g in report.facts.gpus}
    assert all(v == pytest.approx(79.6 * 1024**3, rel=1e-6) for _, v in rows)


def test_missing_prometheus_client_is_one_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)
    with pytest.raises(MissingDependencyError, match="pip install prometheus-client") as info:
        render_metrics(report_named("recorded-epyc-milan-kvm"))
    assert info.value.exit_code == 3
