"""Counts and shapes as people write them: 125000000, 1.25e8, 125M, 7B; 3,224,224, 3x224x224.

One parser per form (``hwadvisor.parse``), and every command that takes a workload
(`recommend`, `estimate`, `fleet`, `rules explain`) accepts the same spellings.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.parse import format_shape, parse_count, parse_shape

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

FACTS = str(Path(__file__).parents[1] / "data" / "facts" / "laptop.json")
SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("125000000", 125_000_000),
        ("1.25e8", 125_000_000),
        ("1e9", 1_000_000_000),
        ("125M", 125_000_000),
        ("125m", 125_000_000),
        ("7B", 7_000_000_000),
        ("7G", 7_000_000_000),
        ("1.5k", 1_500),
        ("1.28M", 1_280_000),
        ("2T", 2_000_000_000_000),
        (" 42 ", 42),
        ("4.1M", 4_100_000),  # 4.1 * 1e6 is 4099999.9999999995 in floats
        ("16.1k", 16_100),
        ("1.281167M", 1_281_167),
        ("2.5e3", 2_500),
    ],
)
def test_counts_people_write(text: str, value: int) -> None:
    assert parse_count(text) == value


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("12.5", "not a whole number"),
        ("1.5", "not a whole number"),
        ("abc", "not a count"),
        ("-5", "not a count"),
        ("7 billion", "not a count"),
        ("", "not a count"),
        ("1e400", "too large"),
        ("nan", "not a count"),
        ("inf", "not a count"),
    ],
)
def test_what_is_not_a_count(text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parse_count(text)


@given(st.integers(min_value=0, max_value=10**18), st.sampled_from(sorted(SCALE)))
def test_a_whole_count_with_any_suffix_is_exact(n: int, suffix: str) -> None:
    assert parse_count(f"{n}{suffix}") == n * SCALE[suffix]
    assert parse_count(f"{n}{suffix.upper()}") == n * SCALE[suffix]


@given(
    st.integers(min_value=0, max_value=10**6),
    st.integers(min_value=0, max_value=999),
    st.sampled_from(sorted(SCALE)),
)
def test_a_decimal_count_is_exact_or_refused(whole: int, frac: int, suffix: str) -> None:
    text = f"{whole}.{frac:03d}{suffix}"
    exact = Decimal(f"{whole}.{frac:03d}") * SCALE[suffix]
    if exact == exact.to_integral_value():
        assert parse_count(text) == int(exact)
    else:
        with pytest.raises(ValueError, match="not a whole number"):
            parse_count(text)


@given(st.integers(min_value=1, max_value=10**6), st.integers(min_value=0, max_value=20))
def test_e_notation_is_exact(mantissa: int, exponent: int) -> None:
    assert parse_count(f"{mantissa}e{exponent}") == mantissa * 10**exponent


@given(st.text(max_size=20))
def test_any_text_is_a_count_or_a_value_error(text: str) -> None:
    try:
        value = parse_count(text)
    except ValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert isinstance(value, int) and value >= 0


@pytest.mark.parametrize(
    ("text", "shape"),
    [
        ("3,224,224", [3, 224, 224]),
        ("3x224x224", [3, 224, 224]),
        ("3X224X224", [3, 224, 224]),
        ("3 x 224 x 224", [3, 224, 224]),
        (" 3, 224, 224 ", [3, 224, 224]),
        ("128", [128]),
        ("3,-224,224", [3, -224, 224]),  # spelt right: the workload says it is not positive
    ],
)
def test_shapes_people_write(text: str, shape: list[int]) -> None:
    assert parse_shape(text) == shape


@pytest.mark.parametrize("text", ["", ",,", "1,,2", "x,y", "abc", "3,", "3;224", "٣,224", "3.5"])
def test_what_is_not_a_shape(text: str) -> None:
    with pytest.raises(ValueError, match="not a shape"):
        parse_shape(text)


@given(
    st.lists(st.integers(min_value=-(10**12), max_value=10**12), min_size=1, max_size=6),
    st.sampled_from([",", "x", " x ", ", ", "X"]),
)
def test_a_shape_reads_back_with_any_separator(shape: list[int], sep: str) -> None:
    assert parse_shape(sep.join(str(d) for d in shape)) == shape
    assert parse_shape(format_shape(shape)) == shape


@given(st.text(max_size=20))
def test_any_text_is_a_shape_or_a_value_error(text: str) -> None:
    try:
        shape = parse_shape(text)
    except ValueError as exc:
        assert "\n" not in str(exc)
    else:
        assert shape and all(isinstance(d, int) for d in shape)


def test_estimate_takes_a_count_with_a_suffix(cli: Callable[..., Any]) -> None:
    result = cli("estimate", "--params", "1e9", "--task", "infer", "--on", "t4", "--json")
    assert result.code == 0, result.err
    assert result.json()["workload"]["params"] == 1_000_000_000


#: The same workload spelt the other ways, for every command that takes one.
SPELLINGS = [
    "--model",
    "resnet50",
    "--input-shape",
    "3x160x160",
    "--dataset-size",
    "1.28M",
    "--precision",
    "BF16",
    "--optimizer",
    "SGD",
]
COMMANDS = {
    "recommend": ["recommend", "--scenario", "training", "--facts", FACTS, "--no-bench"],
    "estimate": ["estimate", "--on", "t4", "--no-bench"],
    "fleet": ["fleet", FACTS],
    "rules explain": ["rules", "explain", "HW101", "--facts", FACTS],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_workload_command_takes_the_same_spellings(
    cli: Callable[..., Any], command: str
) -> None:
    result = cli(*COMMANDS[command], *SPELLINGS, "--json")
    assert result.code == 0, result.err
    workload = result.json().get("workload")
    if workload is not None:  # `rules explain` prints the rule's conditions only
        assert workload["input_shape"] == [3, 160, 160]
        assert workload["dataset_size"] == 1_280_000
        assert (workload["precision"], workload["optimizer"]) == ("bf16", "sgd")


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize(
    ("option", "value", "needle"),
    [
        ("--params", "-1", "--params"),
        ("--params", "0", "--params must be > 0, got 0"),
        ("--batch-size", "0", "--batch-size must be > 0, got 0"),
        ("--epochs", "nan", "--epochs must be a finite number"),
        ("--input-shape", "3,0,224", "--input-shape dimensions must be > 0, got 0"),
        ("--input-shape", "3;224", "--input-shape"),
        ("--precision", "fp64", "--precision"),
    ],
)
def test_every_workload_command_refuses_the_same_values(
    cli: Callable[..., Any], command: str, option: str, value: str, needle: str
) -> None:
    result = cli(*COMMANDS[command], "--model", "resnet50", option, value)
    assert result.code == 2
    assert needle in result.err and len(result.error_lines()) == 1, result.err
