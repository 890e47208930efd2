"""Bounds at the boundary (issue 44, class 2): every number read from a facts, bench or
``--catalog`` file, or given as an option, is finite and within its limit
(:mod:`hwadvisor.models.bounds`), and every string valid Unicode; otherwise one line and exit 2
naming the file (or option) and the field. Nothing ends in "internal error" (exit 3).

The documents corrupted here are the recorded facts of ``tests/data/facts`` and the
shipped catalog's own entries; the commands run in this process through the real entry
point (``cli``).
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from hwadvisor.catalog import load_devices
from hwadvisor.catalog.schema import DeviceEntry
from hwadvisor.models import bounds
from hwadvisor.models import facts as F
from hwadvisor.models.plain import Bound, field_specs

DATA = Path(__file__).parents[1] / "data"
LAPTOP = json.loads((DATA / "facts" / "laptop.json").read_text())
H100 = json.loads((DATA / "facts" / "h100x8-nvlink.json").read_text())
BENCH = json.loads((DATA / "bench" / "recorded-xeon-amx-kvm.json").read_text())

#: Where each facts part sits in the document (a GPU: the first of the list).
SECTIONS: dict[type, tuple[str | int, ...]] = {
    F.Host: ("host",),
    F.Cpu: ("cpu",),
    F.PeakGflops: ("cpu", "peak_gflops"),
    F.Memory: ("memory",),
    F.Gpu: ("gpus", 0),
    F.ProbeRecord: ("probes", 0),
}
#: Every bounded number field of the facts: (part, field, its bound, int or float).
FIELDS = [
    (cls, name, spec.bound, spec.kind)
    for cls in SECTIONS
    for name, spec in field_specs(cls).items()
    if spec.bound is not None and spec.kind is not None
]
RECOMMEND = ["recommend", "--json", "--no-bench", "-s", "training", "--model", "resnet50"]
FAST = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def _set(doc: dict[str, Any], path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    here: Any = out
    for step in path[:-1]:
        here = here[step]
    here[path[-1]] = value
    return out


def _write(folder: Path, name: str, doc: dict[str, Any]) -> Path:
    path = folder / name
    path.write_text(json.dumps(doc, allow_nan=True))  # NaN and Infinity as JSON extensions
    return path


def _dotted(path: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in path)


# -- the table -------------------------------------------------------------------------------


def test_every_limit_is_finite_and_in_the_table() -> None:
    doc = bounds.__doc__ or ""
    for name, limit in bounds.LIMITS.items():
        assert f"``{name}``" in doc, name
        assert limit.le is not None and math.isfinite(limit.le), name
        low = limit.ge if limit.ge is not None else limit.gt
        assert low is not None and low < limit.le, name


def test_every_number_of_a_facts_report_has_a_limit() -> None:
    """No number field of the facts is left unbounded, but a GPU's index (a name)."""
    loose = [
        f"{cls.__name__}.{name}"
        for cls in SECTIONS
        for name, spec in field_specs(cls).items()
        if spec.kind is not None and spec.bound is None
    ]
    assert loose == ["Gpu.index"]
    assert all(b.le is not None for _, _, b, _ in FIELDS)


# -- out of bounds: one line, exit 2, naming the file and the field ----------------------------


def _outside(bound: Bound, kind: type) -> st.SearchStrategy[Any]:
    """Values a field of ``bound`` must refuse: non-finite, below, above, absurd."""
    assert bound.le is not None
    low = bound.ge if bound.ge is not None else bound.gt
    assert low is not None
    above = [bound.le * 10 + 1, 10**300]
    below = [low - 1, -(10**300)] + ([low] if bound.gt is not None else [])
    bad: list[Any] = [*above, *below]
    if kind is float:
        bad += [math.nan, math.inf, -math.inf, 1e308]
    return st.sampled_from(bad)


@st.composite
def _bad_facts(draw: st.DrawFn) -> tuple[dict[str, Any], str, Any]:
    cls, name, bound, kind = draw(st.sampled_from(FIELDS))
    value = draw(_outside(bound, kind))
    if kind is int and isinstance(value, float) and math.isfinite(value):
        value = int(value)
    base = H100 if cls is F.Gpu else LAPTOP
    path = (*SECTIONS[cls], name)
    return _set(base, path, value), _dotted(path), value


@FAST
@given(case=_bad_facts())
def test_a_number_out_of_bounds_is_one_line_naming_file_and_field(
    cli: Callable[..., Any], tmp_path: Path, case: tuple[dict[str, Any], str, Any]
) -> None:
    doc, field, _ = case
    path = _write(tmp_path, "bad.json", doc)
    for args in (
        [*RECOMMEND, "--facts", str(path)],
        ["rules", "explain", "HW101", "--facts", str(path), "--model", "resnet50"],
    ):
        res = cli(*args)
        assert res.code == 2, (args[0], field, res.err)
        (line,) = res.error_lines()
        assert str(path) in line and field in line, line
        assert "internal error" not in line


def test_the_cases_the_issue_names(cli: Callable[..., Any], tmp_path: Path) -> None:
    """A 10^300-byte machine, fp32 NaN, a negative core count, an infinite clock."""
    cases = {
        ("memory", "total_bytes"): 10**300,
        ("cpu", "peak_gflops", "fp32"): math.nan,
        ("cpu", "usable_cores"): -4,
        ("cpu", "max_mhz"): math.inf,
        ("host", "shm_bytes"): 10**17,
    }
    for where, value in cases.items():
        path = _write(tmp_path, "case.json", _set(LAPTOP, where, value))
        res = cli(*RECOMMEND, "--facts", str(path))
        assert res.code == 2, (where, res.err)
        (line,) = res.error_lines()
        assert _dotted(where) in line and str(path) in line, line


# -- within bounds: never an internal error --------------------------------------------------


def _inside(bound: Bound, kind: type) -> st.SearchStrategy[Any]:
    """Values a field of ``bound`` admits, the extremes most of all."""
    assert bound.le is not None
    low = bound.ge if bound.ge is not None else bound.gt
    assert low is not None
    if kind is int:
        first = int(low) + (1 if bound.gt is not None else 0)
        return st.sampled_from([first, int(bound.le)]) | st.integers(first, int(bound.le))
    tiny = math.nextafter(low, math.inf) if bound.gt is not None else low
    return st.sampled_from([tiny, bound.le]) | st.floats(tiny, bound.le, allow_nan=False)


@st.composite
def _odd_facts(draw: st.DrawFn) -> dict[str, Any]:
    gpu = draw(st.booleans())
    doc = H100 if gpu else LAPTOP
    fields = [f for f in FIELDS if gpu or f[0] is not F.Gpu]
    for cls, name, bound, kind in draw(st.lists(st.sampled_from(fields), min_size=1, max_size=4)):
        doc = _set(doc, (*SECTIONS[cls], name), draw(_inside(bound, kind)))
    return doc


@FAST
@given(doc=_odd_facts())
def test_any_value_within_bounds_never_ends_in_an_internal_error(
    cli: Callable[..., Any], tmp_path: Path, doc: dict[str, Any]
) -> None:
    path = _write(tmp_path, "odd.json", doc)
    res = cli(*RECOMMEND, "--facts", str(path))
    assert res.code in (0, 2), res.err
    assert "internal error" not in res.err and "$inf" not in res.out and "NaN" not in res.out


# -- strings: valid Unicode -----------------------------------------------------------------


@pytest.mark.parametrize("where", [("host", "hostname"), ("cpu", "model"), ("gpus", 0, "name")])
def test_a_lone_surrogate_is_one_line_naming_the_field(
    cli: Callable[..., Any], tmp_path: Path, where: tuple[str | int, ...]
) -> None:
    path = _write(tmp_path, "surrogate.json", _set(H100, where, "A\ud800B"))
    assert "\\ud800" in path.read_text()  # the escape a JSON file carries
    for args in (
        [*RECOMMEND, "--facts", str(path)],
        ["rules", "explain", "HW101", "--facts", str(path), "--model", "resnet50"],
    ):
        res = cli(*args)
        assert res.code == 2, res.err
        (line,) = res.error_lines()
        assert _dotted(where) in line and "Unicode" in line, line


# -- bench files -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("results", 0, "value"), math.nan),
        (("results", 0, "value"), math.inf),
        (("results", 0, "value"), 1e300),
        (("results", 0, "median_s"), -1.0),
        (("results", 0, "runs"), 10**30),
        (("results", 0, "shape", 0), 10**20),
        (("elapsed_s",), math.inf),
        (("load_avg_1m",), math.nan),
        (("devices", 0, "threads"), 10**9),
        (("results", 0, "device"), "cpu\udc80"),
    ],
)
def test_a_bad_bench_file_is_one_line_naming_the_field(
    cli: Callable[..., Any], tmp_path: Path, where: tuple[str | int, ...], value: Any
) -> None:
    facts = _write(tmp_path, "facts.json", LAPTOP)
    bench = _write(tmp_path, "bench.json", _set(BENCH, where, value))
    args = [a for a in RECOMMEND if a != "--no-bench"]
    res = cli(*args, "--facts", str(facts), "--bench-file", str(bench))
    assert res.code == 2, res.err
    (line,) = res.error_lines()
    assert str(bench) in line and _dotted(where) in line, line


# -- --catalog entries -----------------------------------------------------------------------


def _entry(**changes: Any) -> dict[str, Any]:
    entry = load_devices()["t4"].model_dump(mode="json")
    entry.update(id="my-t4", name="My T4", aliases=[])
    for dotted, value in changes.items():
        here = entry
        *path, last = dotted.split("__")
        for step in path:
            here = here[step]
        here[last] = value
    return entry


@pytest.mark.parametrize(
    ("changes", "field"),
    [
        ({"peaks_tflops__fp32": float("nan")}, "peaks_tflops.fp32"),
        ({"peaks_tflops__fp16": 1e300}, "peaks_tflops.fp16"),
        ({"memory_bytes": 10**300}, "memory_bytes"),
        ({"bandwidth_gb_s": float("inf")}, "bandwidth_gb_s"),
        ({"tdp_watts": -70.0}, "tdp_watts"),
        ({"board_power_w": 1e9}, "board_power_w"),
        ({"peaks_tflops__fp32": 0.0}, "peaks_tflops.fp32"),  # was ZeroDivisionError
        ({"bandwidth_gb_s": 1e-300}, "bandwidth_gb_s"),  # was a step of 10^301 s
    ],
)
def test_a_bad_catalog_entry_is_one_line_naming_file_and_field(
    cli: Callable[..., Any], tmp_path: Path, changes: dict[str, Any], field: str
) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"devices": [_entry(**changes)]}, allow_unicode=False))
    res = cli("estimate", "--json", "--no-bench", "--model", "resnet50", "--catalog", str(path))
    assert res.code == 2, res.err
    (line,) = res.error_lines()
    assert str(path) in line and field in line, line


def test_a_lone_surrogate_in_a_catalog_entry_is_refused(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    """YAML refuses the character itself (one line naming the file); an entry built from
    other data is refused by the schema, naming the field."""
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"devices": [_entry()]}).replace("My T4", '"My \\ud800"'))
    res = cli("estimate", "--json", "--no-bench", "--model", "resnet50", "--catalog", str(path))
    assert res.code == 2, res.err
    (line,) = res.error_lines()
    assert str(path) in line
    with pytest.raises(ValidationError, match="name: not valid Unicode"):
        DeviceEntry.model_validate(_entry(name="My \ud800"))


def test_a_sound_catalog_entry_still_loads(cli: Callable[..., Any], tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text(yaml.safe_dump({"devices": [_entry()]}))
    res = cli(
        "estimate", "--json", "--no-bench", "--model", "resnet50", "--catalog", str(path),
        "--on", "my-t4",
    )  # fmt: skip
    assert res.code == 0, res.err
    assert [e["device"] for e in res.json()["estimates"]] == ["my-t4"]


# -- options ---------------------------------------------------------------------------------

ESTIMATE = ["estimate", "--json", "--no-bench", "--model", "resnet50", "--on", "h100-sxm"]
FLEET = ["fleet", str(DATA / "facts" / "laptop.json"), "--model", "resnet50"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ([*ESTIMATE, "--gpus", "1000000000"], "--gpus"),
        ([*ESTIMATE, "--gpus", "9" * 40], "--gpus"),
        ([*ESTIMATE, "--gpus", "1e9"], "--gpus"),
        ([*RECOMMEND, "--price-per-hour", "1e300"], "--price-per-hour must be at most"),
        ([*RECOMMEND, "--price-per-hour", "inf"], "--price-per-hour"),
        ([*RECOMMEND, "--price-per-hour", "nan"], "--price-per-hour"),
        ([*RECOMMEND, "--purchase-usd", "1e300", "--years", "3"], "--purchase-usd"),
        ([*RECOMMEND, "--purchase-usd", "1000", "--years", "1e9"], "--years"),
        ([*RECOMMEND, "--purchase-usd", "1000", "--years", "1e-300"], "--purchase-usd over"),
        (
            [*RECOMMEND, "--purchase-usd", "1", "--years", "1", "--electricity-usd-kwh", "1e300"],
            "--electricity-usd-kwh",
        ),
        ([*FLEET, "--price-per-hour", "1e300"], "--price-per-hour"),
        ([*FLEET, "--limit", "9" * 40], "--limit must be at most"),
    ],
)
def test_an_option_out_of_bounds_is_one_line_naming_it(
    cli: Callable[..., Any], args: list[str], needle: str
) -> None:
    res = cli(*args)
    assert res.code == 2, res.err
    lines = [ln for ln in res.error_lines() if "warning" not in ln]
    assert len(lines) == 1 and needle in lines[0], lines
    assert "internal error" not in res.err


def test_options_within_bounds_still_run(cli: Callable[..., Any]) -> None:
    res = cli(*ESTIMATE, "--gpus", "100000", "--price-per-hour", "1000000")
    assert res.code == 0, res.err
    (est,) = res.json()["estimates"]
    assert est["gpus"] == 100000
