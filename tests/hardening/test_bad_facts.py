"""Saved documents that are missing, broken or hostile, for every command that reads one.

Facts files (``check --json`` output) are read by ``recommend --facts``, ``rules explain
--facts``, ``export --from`` and ``fleet``; bench reports by ``--bench-file``. Each bad
file must be exit 2 with one stderr line naming the file and the problem (``fleet``
skips a bad report with its reason and exits 3 when nothing is left to rank), never a
traceback, and under ``--json`` a JSON error document on stdout.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.io import MAX_DOCUMENT_BYTES

FACTS = Path(__file__).parents[1] / "data" / "facts" / "laptop.json"


def _doc(mutate: Callable[[dict[str, Any]], object]) -> Callable[[dict[str, Any]], str]:
    def make(base: dict[str, Any]) -> str:
        doc = copy.deepcopy(base)
        mutate(doc)
        return json.dumps(doc)

    return make


def _set(path: str, value: object) -> Callable[[dict[str, Any]], object]:
    def apply(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[key]
        node[last] = value

    return apply


#: name -> (file text from a valid document, substring of the one error line)
BAD_FACTS: dict[str, tuple[Callable[[dict[str, Any]], str], str]] = {
    "empty": (lambda d: "", "not valid JSON"),
    "truncated": (lambda d: json.dumps(d)[:700], "not valid JSON"),
    "not-an-object": (lambda d: "[1, 2, 3]", "must be a JSON object, not list"),
    "nested-100000-arrays": (lambda d: "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    "nested-100000-objects": (lambda d: '{"a":' * 100_000 + "1" + "}" * 100_000, "nested too deeply"),
    "binary": (lambda d: "\udcff\x00garbage", "cannot read"),
    "no-version": (_doc(lambda d: d.pop("schema_version")), "no schema_version"),
    "version-not-a-string": (_doc(_set("schema_version", 1)), "no schema_version"),
    "major-version-2": (_doc(_set("schema_version", "2.0")), "major version 1"),
    "major-version-garbage": (_doc(_set("schema_version", "one.two")), "schema_version"),
    "wrong-type-int": (_doc(_set("cpu.usable_cores", "many")), "cpu.usable_cores"),
    "wrong-type-section": (_doc(_set("memory", [1, 2])), "memory"),
    "null-section": (_doc(_set("cpu", None)), "cpu"),
    "nan-number": (
        lambda d: json.dumps(d).replace('"total_bytes": ', '"total_bytes": NaN, "x": ', 1),
        "finite",
    ),
    "negative-memory": (_doc(_set("memory.total_bytes", -1)), "memory.total_bytes: Input should be greater than 0"),
    "zero-usable-cores": (_doc(_set("cpu.usable_cores", 0)), "cpu.usable_cores: Input should be greater than or equal to 1"),
    "infinite-clock": (
        lambda d: json.dumps(d).replace('"base_mhz": ', '"base_mhz": Infinity, "x": ', 1),
        "cpu.base_mhz: Input should be a finite number",
    ),
    "utilization-150": (
        _doc(_set("gpus", [{"index": 0, "vendor": "nvidia", "utilization_percent": 150}])),
        "gpus.0.utilization_percent: Input should be less than or equal to 100",
    ),
    "negative-probe-time": (
        _doc(_set("probes", [{"name": "cpu", "status": "ok", "elapsed_ms": -3}])),
        "probes.0.elapsed_ms",
    ),
    "gpu-missing-fields": (_doc(_set("gpus", [{"index": 0}])), "gpus.0"),
    "advice-not-facts": (
        lambda d: json.dumps({"schema_version": "1.0", "tool": d["tool"], "verdict": {"device": "cpu"}}),
        "not a facts",
    ),
    "bad-probe-status": (
        _doc(_set("probes", [{"name": "cpu", "status": "exploded", "source": "x"}])),
        "probes.0.status",
    ),
}  # fmt: skip

#: Each reader: argv before the file, argv after it.
READERS: dict[str, tuple[list[str], list[str]]] = {
    "recommend": (["recommend", "--json", "--no-bench", "--scenario", "training", "--facts"], []),
    "rules-explain": (["rules", "explain", "HW101", "--json", "--facts"], []),
    "export-nfd": (["export", "--format", "nfd", "--json", "--from"], []),
    "export-prometheus": (["export", "--format", "prometheus", "--json", "--from"], []),
}


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.json"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    return path


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("case", sorted(BAD_FACTS))
def test_bad_facts_file_is_exit_2_one_line(
    case: str,
    reader: str,
    tmp_path: Path,
    laptop_facts: dict[str, Any],
    cli: Callable[..., Any],
    clean_error: Callable[..., None],
) -> None:
    make, needle = BAD_FACTS[case]
    path = _write(tmp_path, case, make(laptop_facts))
    before, after = READERS[reader]
    result = cli(*before, str(path), *after)
    clean_error(result, 2, str(path), needle, wants_json=True)


@pytest.mark.parametrize("reader", sorted(READERS))
def test_missing_and_folder_paths(
    reader: str, tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    before, after = READERS[reader]
    clean_error(cli(*before, str(tmp_path / "nope.json"), *after), 2, "not found", wants_json=True)
    clean_error(cli(*before, str(tmp_path), *after), 2, "is a folder", wants_json=True)


def test_huge_facts_file_is_refused_before_reading(
    tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    """A sparse file past the limit: refused from its size, never read into memory."""
    path = tmp_path / "huge.json"
    with path.open("wb") as handle:
        handle.truncate(MAX_DOCUMENT_BYTES + 1)
    for before, after in READERS.values():
        clean_error(cli(*before, str(path), *after), 2, "over the", "byte limit", wants_json=True)


def test_unreadable_facts_file(
    tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    try:
        if path.open("rb").readable():  # root reads anything: use a path that cannot be read
            path = Path("/proc/self/mem")
    except OSError:
        pass
    result = cli("recommend", "--no-bench", "--scenario", "training", "--facts", str(path))
    clean_error(result, 2, str(path))


@pytest.mark.parametrize(
    "case", ["truncated", "major-version-2", "wrong-type-int", "nested-100000-arrays"]
)
def test_fleet_skips_bad_reports_with_their_reason(
    case: str, tmp_path: Path, laptop_facts: dict[str, Any], cli: Callable[..., Any]
) -> None:
    """fleet ranks what it can; a bad report is skipped with the reason, and when nothing
    given could be read the exit is 2 (bad input) with the first reason, not a traceback."""
    make, needle = BAD_FACTS[case]
    bad = _write(tmp_path, case, make(laptop_facts))
    mixed = cli("fleet", str(FACTS), str(bad), "--json")
    assert mixed.code == 0, mixed.err
    doc = json.loads(mixed.out)
    assert len(doc["machines"]) == 1
    assert any(needle.lower() in json.dumps(s).lower() for s in doc["skipped"]), doc["skipped"]
    alone = cli("fleet", str(bad), "--json")
    assert alone.code == 2
    (line,) = alone.err.strip().splitlines()
    assert line.startswith(f"hwadvisor: error: {bad}: no report could be read: ")
    assert needle.lower() in line.lower()
    assert json.loads(alone.out)["error"]["exit_code"] == 2


@pytest.mark.parametrize(
    "case", ["truncated", "not-an-object", "major-version-2", "nested-100000-arrays"]
)
@pytest.mark.parametrize(
    "command",
    [
        ["recommend", "--json", "--scenario", "training", "--facts", str(FACTS), "--bench-file"],
        ["estimate", "--json", "--model", "resnet50", "--on", "here", "--bench-file"],
    ],
    ids=["recommend", "estimate"],
)  # fmt: skip
def test_bad_bench_file(
    case: str,
    command: list[str],
    tmp_path: Path,
    laptop_facts: dict[str, Any],
    cli: Callable[..., Any],
    clean_error: Callable[..., None],
) -> None:
    make, needle = BAD_FACTS[case]
    path = _write(tmp_path, case, make(laptop_facts))
    clean_error(cli(*command, str(path)), 2, str(path), needle, wants_json=True)


def test_deep_nesting_in_a_real_process(
    tmp_path: Path, proc: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    """100,000 levels in a child process: the C recursion limit, not only Python's."""
    path = _write(tmp_path, "deep", "[" * 100_000 + "]" * 100_000)
    result = proc(
        ["recommend", "--json", "--no-bench", "--scenario", "training", "--facts", str(path)]
    )
    clean_error(result, 2, "nested too deeply", wants_json=True)


# Catalog files (--catalog) ------------------------------------------------------------


def _nine_fold(levels: int) -> str:
    lines = ['a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "\n".join(lines) + f"\ndevices: *a{levels - 1}\nmodels: *a{levels - 1}\n"


#: name -> (file text, substring of the error line)
BAD_CATALOGS: dict[str, tuple[str, str]] = {
    "malformed-yaml": ("devices:\n  - {id: x1, name: [unclosed\n", "not valid YAML at line"),
    "nested-5000": ("devices: " + "[" * 5000 + "]" * 5000 + "\n", "nested too deeply"),
    "binary": ("\udcff\udcfe\x00", "cannot read catalog file"),
    "not-entries": ("devices:\n  - 1\n  - 2\nmodels: [1]\n", "expected a list of entries"),
    "entry-missing-fields": (
        "devices:\n  - {id: zz9}\nmodels:\n  - {id: zz9}\n",
        "entry zz9: field",
    ),
    "alias-bomb": (_nine_fold(6), "expected a list of entries"),
}

CATALOG_READERS = {
    "catalog-devices": ["catalog", "devices", "--json", "--catalog"],
    "catalog-models": ["catalog", "models", "--json", "--catalog"],
    "estimate": ["estimate", "--json", "--no-bench", "--model", "resnet50", "--on", "t4", "--catalog"],
}  # fmt: skip


@pytest.mark.parametrize("reader", sorted(CATALOG_READERS))
@pytest.mark.parametrize("case", sorted(BAD_CATALOGS))
def test_bad_catalog_file_is_exit_2_one_line(
    case: str,
    reader: str,
    tmp_path: Path,
    cli: Callable[..., Any],
    clean_error: Callable[..., None],
) -> None:
    text, needle = BAD_CATALOGS[case]
    path = tmp_path / f"{case}.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    clean_error(cli(*CATALOG_READERS[reader], str(path)), 2, str(path), needle, wants_json=True)


def test_missing_huge_and_folder_catalogs(
    tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    huge = tmp_path / "huge.yaml"
    with huge.open("wb") as handle:
        handle.truncate(5 * 1024 * 1024)
    for path, needle in (
        (tmp_path / "nope.yaml", "not found"),
        (huge, "over the"),
        (tmp_path, "is a folder"),
    ):
        for command in CATALOG_READERS.values():
            clean_error(cli(*command, str(path)), 2, str(path), needle, wants_json=True)
