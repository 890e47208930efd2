"""The pure text parsers behind the CPU probe: examples and properties."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.probe.cpuinfo_parse import (
    MAX_CPU_ID,
    first_value,
    flag_set,
    format_cpulist,
    ghz_in_model_name,
    parse_cpuinfo,
    parse_cpulist,
    parse_float,
    parse_int,
    parse_size,
    processor_blocks,
)

TWO_BLOCKS = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 fma\n\n"
    "processor\t: 1\nvendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 fma\n\n"
)


def test_cpuinfo_splits_blocks_and_strips_tab_padding() -> None:
    blocks = parse_cpuinfo(TWO_BLOCKS)
    assert [b["processor"] for b in blocks] == ["0", "1"]
    assert blocks[0]["vendor_id"] == "AuthenticAMD"
    assert flag_set(blocks) == ["avx2", "fma", "fpu"]


def test_cpuinfo_keeps_arm_trailer_but_not_as_a_processor() -> None:
    text = "processor : 0\nFeatures : fp asimd\n\nHardware : BCM2835\nRevision : a02082\n"
    blocks = parse_cpuinfo(text)
    assert len(blocks) == 2
    assert len(processor_blocks(blocks)) == 1
    assert first_value(blocks, "Hardware") == "BCM2835"
    assert flag_set(blocks) == ["asimd", "fp"]


def test_cpuinfo_value_may_contain_colons() -> None:
    blocks = parse_cpuinfo("model name : Foo: Bar @ 2.00GHz\n")
    assert blocks[0]["model name"] == "Foo: Bar @ 2.00GHz"


def test_no_flags_line_gives_no_flags() -> None:
    assert flag_set(parse_cpuinfo("processor : 0\ncpu : POWER9, altivec supported\n")) == []


@given(st.text())
def test_cpuinfo_never_raises_and_keys_are_stripped(text: str) -> None:
    for block in parse_cpuinfo(text):
        for key, value in block.items():
            assert key == key.strip() and key
            assert value == value.strip()


def test_cpulist_examples() -> None:
    assert parse_cpulist("0-3,8,10-11") == frozenset({0, 1, 2, 3, 8, 10, 11})
    assert parse_cpulist("0") == frozenset({0})
    assert parse_cpulist(" 0-1\n") == frozenset({0, 1})
    assert parse_cpulist("") == frozenset()


def test_cpulist_refuses_garbage_reversed_and_huge() -> None:
    for bad in ("a-b", "3-1", "0-", "-3", "1,,2", f"0-{MAX_CPU_ID + 1}", "0x3"):
        assert parse_cpulist(bad) is None, bad
    assert parse_cpulist(None) is None


@given(st.text())
def test_cpulist_never_raises(text: str) -> None:
    result = parse_cpulist(text)
    assert result is None or all(0 <= c <= MAX_CPU_ID for c in result)


@given(st.frozensets(st.integers(min_value=0, max_value=4096), max_size=200))
def test_cpulist_round_trips(cpus: frozenset[int]) -> None:
    assert parse_cpulist(format_cpulist(cpus)) == cpus


def test_sizes() -> None:
    assert parse_size("32K") == 32 * 1024
    assert parse_size("1M") == 1024 * 1024
    assert parse_size("512") == 512
    assert parse_size("107520K\n") == 107520 * 1024
    assert parse_size("big") is None
    assert parse_size(None) is None


@given(st.text())
def test_size_never_raises(text: str) -> None:
    size = parse_size(text)
    assert size is None or size >= 0


def test_clock_in_model_name() -> None:
    assert ghz_in_model_name("Intel(R) Xeon(R) Platinum 8260M CPU @ 2.40GHz") == 2400.0
    assert ghz_in_model_name("AMD EPYC 9654 96-Core Processor") is None
    assert ghz_in_model_name(None) is None


def test_numbers() -> None:
    assert parse_int("0x41", 0) == 0x41
    assert parse_int("12") == 12
    assert parse_int("x") is None
    assert parse_float("2445.402") == 2445.402
    assert parse_float("nan") is None
    assert parse_float("inf") is None
