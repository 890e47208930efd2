"""Fit decided from bounds: the issue's cases, every catalog model known, and properties."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.catalog import load_models
from hwadvisor.estimate.memory.parts import (
    USABLE_FRACTION,
    MemoryPlan,
    breakdown,
    decide_fit,
)
from hwadvisor.estimate.workload.build import build_workload
from hwadvisor.estimate.workload.defaults import practitioner_defaults
from hwadvisor.estimate.workload.shape import infer_shape, narrowest_shape
from hwadvisor.models.estimate import MemoryBreakdown
from hwadvisor.models.workload import ModelKind, Optimizer, Precision, Task, Workload

GB = 10**9


def _mb(wl: Workload, *, gpu: bool = True) -> MemoryBreakdown:
    mb = breakdown(wl, MemoryPlan(precision=wl.precision, batch=wl.batch_size), gpu=gpu)
    assert mb is not None
    return mb


def test_13b_amp_adamw_does_not_fit_a_4090_from_the_lower_bound_alone() -> None:
    wl = build_workload(params=13_000_000_000, seq_len=2048, precision="amp", optimizer="adamw")
    mb = _mb(wl)
    # Weights, gradients and AdamW state alone: 13e9 x 18 bytes, far over 24 GB.
    assert mb.lower_bytes is not None and mb.lower_bytes > 13e9 * 16
    decision = decide_fit(mb, 24 * GB)
    assert decision.fits is False
    assert "alone" in decision.reason


def test_yolov5n_fits_a_4_gb_board() -> None:
    wl = build_workload(model="yolov5n", task="infer")
    mb = _mb(wl, gpu=False)
    assert mb.activations_bytes and mb.activations_bytes > 0
    assert "counted" in (mb.basis or "")
    assert decide_fit(mb, 4 * 1024**3).fits is True


def test_params_alone_gives_a_number_and_bounds() -> None:
    wl = build_workload(params=7_000_000_000)
    mb = _mb(wl)
    assert mb.lower_bytes and mb.total_bytes and mb.upper_bytes
    assert mb.lower_bytes <= mb.total_bytes <= mb.upper_bytes
    assert "inferred from the parameter count" in (mb.basis or "")
    assert "--seq-len" in mb.settle


def test_open_fit_names_the_options_that_settle_it() -> None:
    wl = build_workload(params=7_000_000_000)
    mb = _mb(wl)
    assert mb.lower_bytes and mb.upper_bytes
    between = (mb.lower_bytes + mb.upper_bytes) / 2 / USABLE_FRACTION
    decision = decide_fit(mb, int(between))
    assert decision.fits is None
    assert "--seq-len" in decision.reason and "--batch-size" in decision.reason


def test_a_given_shape_and_sequence_decide_between_the_bounds() -> None:
    wl = build_workload(model="llama-7b", seq_len=2048, batch_size=1, precision="amp")
    mb = _mb(wl)
    assert mb.settle == []
    assert mb.lower_bytes and mb.upper_bytes and mb.total_bytes
    between = (mb.total_bytes + mb.upper_bytes) / 2 / USABLE_FRACTION
    assert decide_fit(mb, int(between)).fits is True


@pytest.mark.parametrize("model_id", sorted(load_models()))
@pytest.mark.parametrize("task", ["train", "infer"])
def test_no_catalog_model_answers_memory_unknown(model_id: str, task: str) -> None:
    wl = build_workload(model=model_id, task=task)
    mb = _mb(wl)
    assert mb.total_bytes and mb.lower_bytes and mb.upper_bytes
    assert mb.activations_bytes is not None
    assert mb.basis and "not counted" not in mb.basis
    assert decide_fit(mb, 80 * GB).fits is not None or mb.settle


def test_defaults_for_language_models() -> None:
    d = practitioner_defaults(ModelKind.DECODER, Task.TRAIN, 2048)
    assert d.precision is Precision.AMP and d.batch == 2 and len(d.notes) == 2
    d = practitioner_defaults(ModelKind.ENCODER, Task.TRAIN, 128)
    assert d.batch == 32
    d = practitioner_defaults(ModelKind.DECODER, Task.TRAIN, 8192)
    assert d.batch == 1
    d = practitioner_defaults(ModelKind.DECODER, Task.INFER, 2048)
    assert d.precision is Precision.BF16 and d.batch == 1
    d = practitioner_defaults(ModelKind.CNN, Task.TRAIN, None)
    assert d.precision is Precision.FP32 and d.batch == 32 and d.notes == []
    given_ = practitioner_defaults(
        ModelKind.DECODER, Task.TRAIN, 2048, precision=Precision.FP32, batch_size=7
    )
    assert given_.precision is Precision.FP32 and given_.batch == 7 and given_.notes == []


@pytest.mark.parametrize("bad", [0, -1, math.inf, math.nan])
def test_shape_inference_refuses_impossible_counts(bad: float) -> None:
    with pytest.raises(ValueError):
        infer_shape(bad)
    with pytest.raises(ValueError):
        narrowest_shape(bad)


def test_inferred_shapes_hold_the_count() -> None:
    for n in (125e6, 1.3e9, 7e9, 70e9, 175e9):
        s = infer_shape(n)
        held = 12 * s.layers * s.hidden**2 + 2 * s.vocab * s.hidden
        assert 0.85 < held / n < 1.15
        deep = narrowest_shape(n)
        assert deep.layers >= s.layers and deep.hidden <= s.hidden


def test_unknown_parameters_cannot_decide() -> None:
    assert decide_fit(None, GB).fits is None


_workloads = st.builds(
    lambda params, kind, task, precision, optimizer, seq, batch, layers: Workload(
        params=params,
        kind=kind,
        task=task,
        precision=precision,
        optimizer=optimizer,
        seq_len=seq,
        batch_size=batch,
        layers=layers,
        hidden=(
            64 * max(1, int(math.sqrt(params / max(1, 12 * layers)) // 64)) if layers else None
        ),
        heads=None,
        activation_bytes_per_sample=1e6 if kind is ModelKind.CNN else None,
    ),
    params=st.integers(1_000, 10**12),
    kind=st.sampled_from(list(ModelKind)),
    task=st.sampled_from(list(Task)),
    precision=st.sampled_from([Precision.FP32, Precision.AMP, Precision.BF16, Precision.FP16]),
    optimizer=st.sampled_from(list(Optimizer)),
    seq=st.one_of(st.none(), st.integers(1, 32_768)),
    batch=st.integers(1, 512),
    layers=st.one_of(st.none(), st.integers(1, 96)),
)
_plans = st.builds(
    lambda ckpt, eight, stage, shards, offload: (ckpt, eight, stage, shards, offload),
    st.booleans(),
    st.booleans(),
    st.integers(0, 3),
    st.sampled_from([1, 2, 8, 64]),
    st.booleans(),
)


@settings(max_examples=300, deadline=None)
@given(wl=_workloads, knobs=_plans, gpu=st.booleans())
def test_lower_le_estimate_le_upper(wl: Workload, knobs: tuple, gpu: bool) -> None:
    ckpt, eight, stage, shards, offload = knobs
    plan = MemoryPlan(
        precision=wl.precision,
        batch=wl.batch_size,
        checkpointing=ckpt,
        optimizer_8bit=eight,
        zero_stage=stage,
        shards=shards,
        offload=offload,
    )
    mb = breakdown(wl, plan, gpu=gpu)
    assert mb is not None
    assert mb.lower_bytes is not None and mb.total_bytes is not None and mb.upper_bytes is not None
    assert 0 < mb.lower_bytes <= mb.total_bytes <= mb.upper_bytes


@settings(max_examples=300, deadline=None)
@given(wl=_workloads, a=st.integers(10**6, 10**13), b=st.integers(10**6, 10**13))
def test_fit_decisions_are_monotone_in_device_memory(wl: Workload, a: int, b: int) -> None:
    small, large = sorted((a, b))
    mb = _mb(wl)
    at_small, at_large = decide_fit(mb, small).fits, decide_fit(mb, large).fits
    if at_small is True:
        assert at_large is True
    if at_large is False:
        assert at_small is False
