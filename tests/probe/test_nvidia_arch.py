"""Compute capability / gfx target -> architecture name and tensor-core data types."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.probe.gpu_arch import (
    amd_architecture,
    amd_supports,
    gfx_name,
    nvidia_architecture,
    nvidia_supports,
    parse_compute_capability,
)

FIELDS = ("fp16", "bf16", "tf32", "fp8", "int8_tensor")


@pytest.mark.parametrize(
    ("cc", "arch", "types"),
    [
        ("6.1", "Pascal", ""),
        ("7.0", "Volta", "fp16"),
        ("7.5", "Turing", "fp16 int8_tensor"),
        ("8.0", "Ampere", "fp16 bf16 tf32 int8_tensor"),
        ("8.6", "Ampere", "fp16 bf16 tf32 int8_tensor"),
        ("8.7", "Ampere", "fp16 bf16 tf32 int8_tensor"),
        ("8.9", "Ada Lovelace", "fp16 bf16 tf32 fp8 int8_tensor"),
        ("9.0", "Hopper", "fp16 bf16 tf32 fp8 int8_tensor"),
        ("10.0", "Blackwell", "fp16 bf16 tf32 fp8 int8_tensor"),
        ("12.0", "Blackwell", "fp16 bf16 tf32 fp8 int8_tensor"),
    ],
)
def test_nvidia_generations(cc: str, arch: str, types: str) -> None:
    parsed = parse_compute_capability(cc)
    assert nvidia_architecture(parsed) == arch
    sup = nvidia_supports(parsed)
    assert {f for f in FIELDS if getattr(sup, f)} == set(types.split())


def test_unknown_capability_is_unknown_not_false() -> None:
    assert parse_compute_capability("sm_90") is None
    assert nvidia_architecture(None) is None
    assert all(getattr(nvidia_supports(None), f) is None for f in FIELDS)


@given(
    st.tuples(st.integers(3, 13), st.integers(0, 9)),
    st.tuples(st.integers(3, 13), st.integers(0, 9)),
)
def test_newer_capability_never_loses_a_type(a: tuple[int, int], b: tuple[int, int]) -> None:
    old, new = sorted([a, b])
    s_old, s_new = nvidia_supports(old), nvidia_supports(new)
    assert all(getattr(s_new, f) for f in FIELDS if getattr(s_old, f))


@given(st.integers(0, 99), st.integers(0, 99))
def test_capability_text_round_trips(major: int, minor: int) -> None:
    assert parse_compute_capability(f"{major}.{minor}") == (major, minor)


@pytest.mark.parametrize(
    ("version", "gfx", "arch", "tf32", "fp8"),
    [
        (90402, "gfx942", "CDNA 3", True, True),
        (90010, "gfx90a", "CDNA 2", False, False),
        (90008, "gfx908", "CDNA", False, False),
        (110000, "gfx1100", "RDNA 3", False, False),
        (120001, "gfx1201", "RDNA 4", False, True),
    ],
)
def test_amd_targets(version: int, gfx: str, arch: str, tf32: bool, fp8: bool) -> None:
    assert gfx_name(version) == gfx
    assert amd_architecture(gfx) == arch
    sup = amd_supports(gfx)
    assert (sup.fp16, sup.tf32, sup.fp8) == (True, tf32, fp8)


def test_amd_cpu_node_and_unknown_target() -> None:
    assert gfx_name(0) is None
    assert amd_architecture("gfx9999") is None
    assert amd_supports("gfx9999").bf16 is None
