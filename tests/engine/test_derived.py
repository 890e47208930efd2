"""The derived facts: one registry per input, each path declared where it is computed."""

from __future__ import annotations

from typing import Any

import pytest

from hwadvisor.engine import build_context
from hwadvisor.engine.derive import FactSpec, FactType, Registry
from hwadvisor.engine.derived import ESTIMATES, GPUS, MACHINE, OPTIONS, REGISTRIES, SLOT
from hwadvisor.engine.paths import registry
from hwadvisor.models.facts import Facts
from hwadvisor.models.workload import Scenario, Workload


def test_every_derived_path_of_the_namespace_has_one_computation() -> None:
    declared = {s.path for r in REGISTRIES for s in r.specs()}
    slots = {s.path for s in SLOT.specs()}
    derived = {p for p, s in registry().items() if s.derived}
    by_slot = {p for p in derived if p.startswith("estimate.") and p.split(".")[-1] in slots}
    assert derived == declared | by_slot
    assert sum(len(r.specs()) for r in REGISTRIES) == len(declared)  # none registered twice


def test_a_registry_refuses_a_path_twice_and_a_family_an_undeclared_path() -> None:
    reg: Registry[int] = Registry("a number")
    reg.fact("x.double", FactType.NUMBER, "twice")(lambda n: 2 * n)
    with pytest.raises(ValueError, match="twice"):
        reg.fact("x.double", FactType.NUMBER, "again")(lambda n: n)
    reg.family([FactSpec("x.a", FactType.NUMBER, "a", derived=True)])(lambda n: {"x.b": n})
    with pytest.raises(RuntimeError, match="undeclared"):
        reg.compute(1)


def test_a_registered_fact_is_its_function() -> None:
    reg: Registry[int] = Registry("a number")

    @reg.fact("x.square", FactType.NUMBER, "the square")
    def square(n: int) -> int:
        return n * n

    assert square(3) == 9 and reg.compute(3) == {"x.square": 9}
    assert reg.compute(3, prefix="p") == {"p.x.square": 9}
    assert [s.path for s in reg.specs()] == ["x.square"] and reg.specs()[0].derived


def _gpus(*rows: dict[str, Any]) -> Any:
    doc = Facts.model_validate(
        {"gpus": [{"index": i, "vendor": "nvidia", **r} for i, r in enumerate(rows)]}
    )
    return doc.gpus


def test_no_gpu_is_known_and_a_gpu_with_unknown_values_is_unknown() -> None:
    none = GPUS.compute([])
    assert none["gpu.count"] == 0 and none["gpu.any_nvlink"] is False
    assert none["gpu.any_mig"] is False and none["gpu.any_lacks_bf16"] is False
    assert none["gpu.max_memory_bytes"] is None and none["gpu.min_cuda_driver"] is None
    blank = GPUS.compute(_gpus({}, {}))
    assert blank["gpu.count"] == 2
    for path in ("gpu.any_nvlink", "gpu.any_mig", "gpu.any_lacks_bf16", "gpu.all_bf16"):
        assert blank[path] is None, path


def test_gpu_aggregates_take_the_weakest_gpu() -> None:
    agg = GPUS.compute(
        _gpus(
            {"memory_total_bytes": 80, "cuda_driver_version": "12.4", "nvlink_active_links": 18},
            {"memory_total_bytes": 16, "cuda_driver_version": "12.10", "nvlink_active_links": 0},
        )
    )
    assert (agg["gpu.max_memory_bytes"], agg["gpu.min_memory_bytes"]) == (80, 16)
    assert agg["gpu.total_memory_bytes"] == 96
    assert agg["gpu.min_cuda_driver"] == "12.4" and agg["gpu.torch_wheel_tag"] == "cu124"
    assert agg["gpu.any_nvlink"] is True and agg["gpu.min_nvlink_links"] == 0


def test_the_context_holds_every_single_derived_fact_unknown_or_not() -> None:
    """Facts registered one by one are always present (None: unknown); a family (the
    bench grid) holds only the figures measured."""
    ctx = build_context(facts=Facts(), workload=Workload(), scenario=Scenario.TRAINING)
    for reg in (MACHINE, GPUS, ESTIMATES, OPTIONS):
        for spec in reg.specs():
            assert spec.path in ctx, spec.path
    assert ctx["bench.available"] is False and "bench.cpu.matmul.fp32" not in ctx
