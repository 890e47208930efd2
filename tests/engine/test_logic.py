"""Three-valued evaluation, operators, versions and message templates."""

from __future__ import annotations

from typing import Any

import pytest

from hwadvisor.engine import Truth, evaluate
from hwadvisor.engine.template import placeholders, render
from hwadvisor.engine.versions import compare, newest_wheel_tag, parse_version, torch_cuda_tags
from hwadvisor.io import load_yaml
from hwadvisor.models.rules import Condition

T, F, U = Truth.TRUE, Truth.FALSE, Truth.UNKNOWN


def leaf(fact: str, op: str, value: Any = None, **extra: Any) -> dict[str, Any]:
    node: dict[str, Any] = {"fact": fact, "op": op, **extra}
    if value is not None:
        node["value"] = value
    return node


def ev(cond: dict[str, Any], ctx: dict[str, Any]) -> Truth:
    return evaluate(Condition.model_validate(cond), ctx)


@pytest.mark.parametrize(
    ("a", "b", "all_", "any_"),
    [(T, T, T, T), (T, F, F, T), (T, U, U, T), (F, U, F, U), (U, U, U, U), (F, F, F, F)],
)
def test_kleene_tables(a: Truth, b: Truth, all_: Truth, any_: Truth) -> None:
    ctx = {"x.a": {T: 1, F: 0, U: None}[a], "x.b": {T: 1, F: 0, U: None}[b]}
    kids = [leaf("x.a", "==", 1), leaf("x.b", "==", 1)]
    assert ev({"all": kids}, ctx) is all_
    assert ev({"any": kids}, ctx) is any_


def test_not_keeps_unknown() -> None:
    assert ev({"not": leaf("x.a", "==", 1)}, {}) is U
    assert ev({"not": leaf("x.a", "==", 1)}, {"x.a": 2}) is T


def test_exists_is_never_unknown() -> None:
    assert ev(leaf("x.a", "exists"), {}) is F
    assert ev(leaf("x.a", "exists", False), {}) is T
    assert ev(leaf("x.a", "exists"), {"x.a": 0}) is T


@pytest.mark.parametrize(
    ("op", "value", "actual", "expected"),
    [
        ("==", "CPU", "cpu", T),
        ("!=", 3, 3.0, F),
        ("<", 10, 3, T),
        (">=", 10, 10, T),
        ("in", ["gpu", "multi_gpu"], "gpu", T),
        ("not_in", ["gpu"], "cpu", T),
        ("contains", "avx2", ["fma", "avx2"], T),
        ("version_gt", "12.2", "12.10", T),
        ("version_lt", "12.2", "12.1", T),
        ("version_ge", "8.0", "8.0", T),
        ("==", True, 1, F),
        ("<", 5, "x", U),
        ("version_lt", "12.2", "not-a-version", U),
    ],
)
def test_operators(op: str, value: Any, actual: Any, expected: Truth) -> None:
    assert ev(leaf("x.a", op, value), {"x.a": actual}) is expected


def test_ref_compares_two_facts_and_unknown_ref_is_unknown() -> None:
    cond = {"fact": "x.a", "op": "version_gt", "ref": "x.b"}
    assert ev(cond, {"x.a": "12.4", "x.b": "12.2"}) is T
    assert ev(cond, {"x.a": "12.4"}) is U


def test_versions() -> None:
    v = parse_version("535.104.05")
    assert v is not None and v.release == (535, 104, 5)
    assert parse_version("gfx90a") is None
    assert parse_version(True) is None and parse_version(None) is None
    newer = [("12.10", "12.2"), ("2.5.0", "2.5.0rc1"), ("6.5.1-1018-aws", "6.5.0")]
    for a, b in newer:
        pa, pb = parse_version(a), parse_version(b)
        assert pa is not None and pb is not None and compare(pa, pb) == 1, (a, b)
    same = [("12", "12.0"), ("2.5.1+cu121", "2.5.1"), ("v1.2", "1.2")]
    for a, b in same:
        pa, pb = parse_version(a), parse_version(b)
        assert pa is not None and pb is not None and compare(pa, pb) == 0, (a, b)
    assert newest_wheel_tag("12.2") == "cu121"
    assert newest_wheel_tag("12.6") == "cu126"
    assert newest_wheel_tag("13.1") == "cu130"
    assert newest_wheel_tag("11.2") == "cu111"
    assert newest_wheel_tag("9.0") is None
    assert newest_wheel_tag("driver") is None


def test_wheel_tags_are_catalog_data_with_source_and_date() -> None:
    from importlib import resources

    text = resources.files("hwadvisor.catalog").joinpath("data", "cuda.yaml").read_text("utf-8")
    data = load_yaml(text)
    assert "download.pytorch.org" in data["source"] and data["date"]
    tags = torch_cuda_tags()
    assert [t for _, t in tags] == [row["tag"] for row in data["wheel_tags"]]
    assert all(tag == "cu" + "".join(str(p) for p in v.release) for v, tag in tags)


def test_template_fills_formats_and_filters() -> None:
    ctx = {"a.b": 2.345, "a.bytes": 3 * 2**30, "a.secs": 7200, "a.list": ["x", "y"], "a.flag": True}
    text = "{a.b:.1f} {a.bytes|gib} {a.secs|duration} {a.list|list} {a.flag} {a.none} {{x}}"
    assert render(text, ctx) == "2.3 3.0 GiB 2.0 h x, y yes unknown {x}"


@pytest.mark.parametrize(
    "bad", ["{a.b!r}", "{a.b.__class__}", "{__import__('os')}", "{a.b|evil}", "a } b", "{a.b"]
)
def test_template_refuses_anything_but_paths(bad: str) -> None:
    with pytest.raises(ValueError):
        placeholders(bad)
