"""Building workloads from catalog names and bare sizes; bad values are refused."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from hwadvisor.errors import CatalogError, UsageError
from hwadvisor.estimate import build_workload
from hwadvisor.models.workload import ModelKind, Optimizer, Precision, Task, Workload


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
        build_workload(model="resnet18")


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


#: Each size a user gives: (keyword, option, largest value allowed, whole number?).
BOUNDS = [
    ("params", "--params", 10**15, True),
    ("flops_per_sample", "--flops-per-sample", 1e21, False),
    ("seq_len", "--seq-len", 10**8, True),
    ("batch_size", "--batch-size", 10**9, True),
    ("dataset_size", "--dataset-size", 10**15, True),
    ("epochs", "--epochs", 1e6, False),
    ("qps", "--qps", 1e9, False),
    ("latency_ms", "--latency-ms", 1e9, False),
    ("deadline_hours", "--deadline", 1e6, False),
]


@given(st.sampled_from(BOUNDS), st.data())
def test_a_size_is_taken_exactly_when_above_zero_finite_and_within_its_cap(
    bound: tuple[str, str, float, bool], data: st.DataObject
) -> None:
    key, option, limit, whole = bound
    value: float = data.draw(
        st.integers(min_value=-(10**20), max_value=10**20)
        | st.sampled_from([0, 1, int(limit), int(limit) + 1])
        if whole
        else st.floats() | st.sampled_from([0.0, -0.0, 5e-324, limit, limit * (1 + 1e-15)])
    )
    if 0 < value <= limit:  # NaN compares false
        wl = build_workload(**{key: value})  # type: ignore[arg-type]
        assert getattr(wl, key) == value
    else:
        with pytest.raises(UsageError) as exc:
            build_workload(**{key: value})  # type: ignore[arg-type]
        line = exc.value.line()
        assert line.startswith(f"{option} must be ") and "\n" not in line, line


@given(
    st.lists(st.integers(min_value=-3, max_value=10**7), min_size=0, max_size=4),
)
def test_a_shape_is_taken_when_every_dimension_is_positive_and_it_is_not_huge(
    shape: list[int],
) -> None:
    ok = bool(shape) and all(d > 0 for d in shape) and math.prod(shape) <= 10**12
    if ok:
        assert build_workload(params=1000, input_shape=shape).input_shape == shape
    else:
        with pytest.raises(UsageError, match=r"^--input-shape "):
            build_workload(params=1000, input_shape=shape)


@given(
    st.sampled_from(["precision", "optimizer", "task"]),
    st.text(alphabet="abcdefgimnoprstuABFIT0123468", max_size=6),
)
def test_a_choice_is_one_of_its_values_in_any_case(field: str, text: str) -> None:
    choices = {"precision": Precision, "optimizer": Optimizer, "task": Task}[field]
    if text.lower() in {c.value for c in choices}:
        assert getattr(build_workload(**{field: text}), field).value == text.lower()  # type: ignore[arg-type]
    else:
        allowed = "|".join(c.value for c in choices)
        with pytest.raises(UsageError, match=f"^--{field} must be one of {re.escape(allowed)}"):
            build_workload(**{field: text})  # type: ignore[arg-type]


def test_the_bounds_are_on_the_model_itself() -> None:
    with pytest.raises(ValidationError):
        Workload(batch_size=0)
    with pytest.raises(ValidationError):
        Workload(input_shape=[3, 0, 224])
    with pytest.raises(ValidationError):
        Workload(epochs=math.nan)
    schema = Workload.model_json_schema()["properties"]
    assert schema["batch_size"]["exclusiveMinimum"] == 0
    assert schema["params"]["anyOf"][0]["maximum"] == 10**15


def test_a_value_the_options_imply_past_a_bound_says_so() -> None:
    """--seq-len 1e8 on a 7B model gives 5e21 FLOPs per sequence: past the cap, named as
    derived, not blamed on a --flops-per-sample nobody gave."""
    with pytest.raises(UsageError, match=r"^--flops-per-sample, as the other options give it,"):
        build_workload(model="llama-7b", seq_len=10**8)
