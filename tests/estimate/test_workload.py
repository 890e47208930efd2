"""Building workloads from catalog names and bare sizes; bad values are refused."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.errors import CatalogError, UsageError
from hwadvisor.estimate import build_workload
from hwadvisor.models.workload import ModelKind, Precision, Task


def test_params_and_seq_give_2ns() -> None:
    wl = build_workload(params=1_000_000, seq_len=256)
    assert wl.flops_per_sample == 2 * 1_000_000 * 256
    assert wl.kind is ModelKind.DECODER


def test_params_alone_leave_flops_unknown() -> None:
    wl = build_workload(params=1_000_000)
    assert wl.flops_per_sample is None and wl.profile is None


def test_catalog_defaults_and_choices() -> None:
    wl = build_workload(model="BERT-base", task="infer", precision="bf16")
    assert wl.model == "bert-base" and wl.task is Task.INFER and wl.precision is Precision.BF16
    assert wl.batch_size == 1 and wl.layers == 12 and wl.profile is not None


def test_seq_len_rescales_catalog_flops() -> None:
    base = build_workload(model="bert-base")
    longer = build_workload(model="bert-base", seq_len=256)
    # More than double: the attention part grows with s².
    assert (
        2.0 * (base.flops_per_sample or 0)
        < (longer.flops_per_sample or 0)
        < 2.2 * (base.flops_per_sample or 0)
    )


def test_options_that_do_not_apply_are_ignored_and_said() -> None:
    base = build_workload(model="resnet50")
    cnn = build_workload(model="resnet50", seq_len=128)
    assert cnn.seq_len is None and cnn.flops_per_sample == base.flops_per_sample
    assert "--seq-len 128 ignored: resnet50 is a cnn, not a sequence model" in cnn.assumptions
    bert = build_workload(model="bert-base", input_shape=[3, 224, 224])
    assert bert.input_shape == build_workload(model="bert-base").input_shape
    assert (
        "--input-shape 3,224,224 ignored: bert-base is an encoder; its cost follows --seq-len"
        in bert.assumptions
    )


def test_seq_len_sizes_the_memory_when_the_flops_are_given() -> None:
    wl = build_workload(model="bert-base", seq_len=512, flops_per_sample=1e9)
    assert wl.seq_len == 512 and wl.flops_per_sample == 1e9
    assert "FLOPs from --flops-per-sample; --seq-len 512 sizes the memory" in wl.assumptions


def test_unknown_model_did_you_mean() -> None:
    with pytest.raises(CatalogError, match="did you mean resnet50"):
        build_workload(model="resnet-50")


@pytest.mark.parametrize("bad", [0, -1, math.nan, math.inf])
def test_non_positive_or_non_finite_sizes(bad: float) -> None:
    with pytest.raises(UsageError):
        build_workload(params=1000, flops_per_sample=bad)
    with pytest.raises(UsageError):
        build_workload(model="resnet50", epochs=bad)


def test_bad_choice_lists_the_allowed_values() -> None:
    with pytest.raises(UsageError, match="fp32\\|amp"):
        build_workload(model="resnet50", precision="fp64")


@given(st.lists(st.integers(min_value=-5, max_value=5), min_size=0, max_size=4))
def test_input_shape_validation(shape: list[int]) -> None:
    if shape and all(d > 0 for d in shape):
        assert build_workload(
            model="resnet50", input_shape=[3, *shape[:2]] if len(shape) >= 2 else None
        )
    else:
        with pytest.raises(UsageError):
            build_workload(model="resnet50", input_shape=shape)
