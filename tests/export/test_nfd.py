"""NFD features.d output: every line passes a strict Kubernetes label validator."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.errors import UsageError
from hwadvisor.export.labels import check_prefix, is_valid_name, sanitize
from hwadvisor.export.nfd import memory_class, node_labels, rate_class, render_features
from hwadvisor.export.report import Report, report_from_data

from .conftest import k8s_name_ok, parse_features, report_named

NOW = datetime(2026, 11, 30, 3, 0, tzinfo=timezone.utc)


def test_every_saved_report_gives_valid_labels(good_report: Report) -> None:
    labels, expiry = parse_features(render_features(good_report, now=NOW))
    assert expiry == NOW + timedelta(hours=24)
    assert all(k.startswith("hwadvisor.io/") for k in labels)
    role = labels["hwadvisor.io/role"]
    assert labels[f"hwadvisor.io/role.{role}"] == "true"
    assert labels["hwadvisor.io/gpu.count"] == str(len(good_report.facts.gpus))


def test_dgx_labels_say_multi_gpu_training_and_amx() -> None:
    labels, _ = parse_features(render_features(report_named("synthetic-dgx-h100x8"), now=NOW))
    assert labels["hwadvisor.io/role"] == "training-multi-gpu"
    assert labels["hwadvisor.io/cpu.amx"] == "true"
    assert labels["hwadvisor.io/gpu.memory-class"] == "xlarge"
    assert labels["hwadvisor.io/gpu.memory-gib"] == "79"
    assert labels["hwadvisor.io/cpu.usable-cores"] == "112"


def test_small_cpu_box_labels_are_honest() -> None:
    # The 2-core EPYC container measured 35.8 GFLOP/s fp32: below every CPU role threshold.
    labels, _ = parse_features(render_features(report_named("recorded-epyc-milan-kvm"), now=NOW))
    assert labels["hwadvisor.io/role"] == "prototyping-cpu"
    assert labels["hwadvisor.io/cpu.avx512"] == "false"
    assert labels["hwadvisor.io/cpu.amx"] == "false"
    assert labels["hwadvisor.io/bench.cpu.matmul-fp32"] == "10-100"
    assert "hwadvisor.io/gpu.memory-class" not in labels


def test_saved_recommendation_sets_the_roles() -> None:
    data = report_named("recorded-epyc-milan-kvm").facts.model_dump(mode="json")
    data["advice"] = [
        {"scenario": "inference", "verdict": {"device": "cpu", "fits_here": True}},
        {"scenario": "training", "verdict": {"device": "gpu", "fits_here": False}},
    ]
    labels = node_labels(report_from_data(data, where="mem"))
    assert labels["role"] == "inference-cpu"
    assert "role.training-gpu" not in labels


def test_custom_prefix_and_no_expiry() -> None:
    text = render_features(
        report_named("synthetic-t4-inference"), prefix="ml.example.com/", expiry_hours=None, now=NOW
    )
    labels, expiry = parse_features(text)
    assert expiry is None
    assert labels["ml.example.com/role"] == "training-gpu"


@pytest.mark.parametrize(
    "prefix",
    [
        "nvidia.com",
        "gpu.nvidia.com",
        "feature.node.kubernetes.io",
        "kubernetes.io",
        "node.k8s.io",
        "Upper.Case",
        "bad_prefix",
        "",
        "a..b",
    ],
)
def test_reserved_or_invalid_prefixes_are_refused(prefix: str) -> None:
    with pytest.raises(UsageError):
        check_prefix(prefix)


def test_hostile_microarchitecture_is_sanitised() -> None:
    facts = report_named("recorded-epyc-milan-kvm").facts
    cpu = facts.cpu.model_copy(
        update={"microarchitecture": '--zen 3 ("guest")\n' + "x" * 100 + "__"}
    )
    report = Report(facts=facts.model_copy(update={"cpu": cpu}))
    labels, _ = parse_features(render_features(report, now=NOW))
    value = labels["hwadvisor.io/cpu.microarchitecture"]
    assert value.startswith("zen-3-guest-x") and len(value) == 63


@given(st.text(max_size=200))
def test_sanitize_always_gives_a_valid_label_part(text: str) -> None:
    out = sanitize(text)
    assert out == "" or k8s_name_ok(out)
    assert sanitize(out) == out  # idempotent


@given(st.from_regex(r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?", fullmatch=True))
def test_sanitize_keeps_valid_names(name: str) -> None:
    assert is_valid_name(name)
    assert sanitize(name) == name


@given(st.floats(min_value=0, max_value=1e9), st.floats(min_value=0, max_value=1e9))
def test_rate_classes_are_monotonic(a: float, b: float) -> None:
    order = ["lt-10", "10-100", "100-1k", "1k-10k", "10k-100k", "100k-plus"]
    lo, hi = sorted((a, b))
    assert order.index(rate_class(lo)) <= order.index(rate_class(hi))


def test_memory_class_boundaries() -> None:
    gib = 1024**3
    assert [memory_class(n * gib) for n in (8, 15, 24, 40, 80)] == [
        "small",
        "medium",
        "medium",
        "large",
        "xlarge",
    ]
    assert memory_class(None) == "unknown"


def test_memory_label_is_the_nodes_not_the_pods_limit() -> None:
    facts = report_named("recorded-laptop-avx2").facts
    total = facts.memory.total_bytes
    assert total is not None
    pod = facts.model_copy(
        update={"memory": facts.memory.model_copy(update={"cgroup_limit_bytes": 256 * 1024**2})}
    )
    labels = node_labels(Report(facts=pod))
    assert labels["memory.gib"] == str(total // 1024**3)
