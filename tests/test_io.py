"""Atomic writes and document reading: nothing half-written, every failure one line."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.errors import FactsError, OutputError
from hwadvisor.io import (
    NestingError,
    atomic_write_text,
    load_yaml,
    parse_json_document,
    read_json_document,
)
from hwadvisor.models.common import validate_document
from hwadvisor.models.facts import Facts


def test_atomic_write_replaces_whole_file(tmp_path: Path) -> None:
    target = tmp_path / "out.json"
    target.write_text("old")
    atomic_write_text(target, "new content")
    assert target.read_text() == "new content"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_atomic_write_sets_mode(tmp_path: Path) -> None:
    target = tmp_path / "hwadvisor.fact"
    atomic_write_text(target, "#!/bin/sh\n", mode=0o755)
    assert os.stat(target).st_mode & 0o777 == 0o755


def test_read_only_folder_is_output_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        # root ignores folder modes; /proc refuses new files to everyone.
        folder = Path("/proc")
        if not folder.is_dir():
            pytest.skip("no /proc")
    else:
        folder = tmp_path / "ro"
        folder.mkdir()
        folder.chmod(0o555)
    try:
        with pytest.raises(OutputError) as err:
            atomic_write_text(folder / "x.json", "{}")
        assert str(folder / "x.json") in err.value.line()
    finally:
        if folder != Path("/proc"):
            folder.chmod(0o755)


def test_missing_folder_is_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError):
        atomic_write_text(tmp_path / "missing" / "x.json", "{}")


def test_disk_full_leaves_old_file_and_no_temporary(tmp_path: Path) -> None:
    """A write that runs out of space (RLIMIT_FSIZE makes the kernel refuse it) is
    reported as one OutputError, the old file survives whole, no dot-file is left."""
    target = tmp_path / "facts.json"
    target.write_text("previous report")
    code = (
        "import resource, signal, sys\n"
        "signal.signal(signal.SIGXFSZ, signal.SIG_IGN)\n"
        "resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))\n"
        "from hwadvisor.io import atomic_write_text\n"
        "from hwadvisor.errors import OutputError\n"
        "try:\n"
        f"    atomic_write_text({str(target)!r}, 'x' * 100000)\n"
        "except OutputError as e:\n"
        "    print('ERR', e.line())\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("ERR "), proc.stdout
    assert target.read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["facts.json"]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("", "not valid JSON"),
        ('{"schema_version": "1.0", "cpu": ', "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ],
)
def test_bad_documents_are_one_line(tmp_path: Path, content: str, needle: str) -> None:
    path = tmp_path / "facts.json"
    path.write_text(content)
    with pytest.raises(FactsError) as err:
        read_json_document(path, what="facts")
    assert needle in err.value.line()
    assert "\n" not in err.value.line()


@pytest.mark.parametrize("libyaml", [True, False], ids=["libyaml", "pure-python"])
def test_yaml_is_plain_data_and_deep_nesting_is_one_error(
    monkeypatch: pytest.MonkeyPatch, libyaml: bool
) -> None:
    import yaml

    if not libyaml:
        monkeypatch.delattr(yaml, "CSafeLoader", raising=False)
    elif not hasattr(yaml, "CSafeLoader"):
        pytest.skip("PyYAML was built without libyaml")
    assert load_yaml("a: [1, 2.5, yes, null]\nb: {c: d}\n") == {
        "a": [1, 2.5, True, None],
        "b": {"c": "d"},
    }
    assert load_yaml("") is None
    with pytest.raises(yaml.YAMLError):
        load_yaml("!!python/object/apply:os.system [echo hi]")
    with pytest.raises(yaml.YAMLError):
        load_yaml("a: [1, 2")
    with pytest.raises(NestingError):
        load_yaml("[" * 1500 + "]" * 1500)


def test_missing_document(tmp_path: Path) -> None:
    with pytest.raises(FactsError, match="not found"):
        read_json_document(tmp_path / "nope.json")


def test_wrong_major_version_refused() -> None:
    with pytest.raises(FactsError, match="major version 1"):
        validate_document(Facts, {"schema_version": "2.0"}, where="f.json", what="facts")


def test_newer_minor_version_with_unknown_fields_loads() -> None:
    doc = {
        "schema_version": "1.7",
        "cpu": {"vendor": "GenuineIntel", "future_field": 3},
        "something_new": [],
    }
    facts = validate_document(Facts, doc, where="f.json", what="facts")
    assert facts.cpu.vendor == "GenuineIntel"
    assert facts.memory.total_bytes is None


def test_wrong_types_name_the_field() -> None:
    with pytest.raises(FactsError) as err:
        validate_document(
            Facts,
            {"schema_version": "1.0", "cpu": {"usable_cores": "many"}},
            where="f.json",
            what="facts",
        )
    assert "cpu.usable_cores" in err.value.line()


@pytest.mark.parametrize(
    ("section", "values", "line"),
    [
        ("memory", {"total_bytes": -1}, "field memory.total_bytes: Input should be greater than 0"),
        ("cpu", {"usable_cores": 0}, "field cpu.usable_cores: Input should be greater than or equal to 1"),
        ("cpu", {"base_mhz": float("inf")}, "field cpu.base_mhz: Input should be a finite number"),
        ("cpu", {"peak_gflops": {"fp32": float("nan")}}, "field cpu.peak_gflops.fp32: Input should be a finite number"),
        ("gpus", [{"index": 0, "vendor": "nvidia", "utilization_percent": 101}], "field gpus.0.utilization_percent: Input should be less than or equal to 100"),
        ("gpus", [{"index": 0}], "field gpus.0.vendor: Field required"),
        ("probes", [{"name": "cpu", "status": "exploded"}], "field probes.0.status: Input should be"),
    ],
)  # fmt: skip
def test_bounds_and_types_are_one_line_naming_the_field(
    section: str, values: object, line: str
) -> None:
    doc = {"schema_version": "1.0", section: values}
    with pytest.raises(FactsError) as err:
        validate_document(Facts, doc, where="f.json", what="facts")
    assert err.value.line().startswith(f"f.json: invalid facts: {line}")
    assert "\n" not in err.value.line()


def test_a_valid_document_reads_into_the_frozen_definition() -> None:
    doc = {"schema_version": "1.0", "cpu": {"usable_cores": 2.0, "base_mhz": 2400}}
    facts = validate_document(Facts, doc, where="f.json", what="facts")
    assert isinstance(facts, Facts) and type(facts.cpu.usable_cores) is int
    assert type(facts.cpu.base_mhz) is float
    with pytest.raises(AttributeError):
        facts.cpu.usable_cores = 3  # type: ignore[misc]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_never_raises_anything_but_facts_error(text: str) -> None:
    with contextlib.suppress(FactsError):
        parse_json_document(text, where="x")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["schema_version", "cpu", "memory", "gpus", "host", "probes", "x"]),
        json_values,
    )
)
def test_validate_facts_raises_only_facts_error(doc: dict[str, object]) -> None:
    with contextlib.suppress(FactsError):
        validate_document(Facts, json.loads(json.dumps(doc)), where="x", what="facts")


def test_default_mode_follows_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        atomic_write_text(tmp_path / "r.json", "{}")
    finally:
        os.umask(old)
    assert os.stat(tmp_path / "r.json").st_mode & 0o777 == 0o644


def test_an_existing_file_keeps_its_mode(tmp_path: Path) -> None:
    """A 0600 file stays 0600, and a format's mode (the Ansible fact's 0755) is for new
    files only: it never turns an existing file into a script."""
    target = tmp_path / "private.json"
    target.write_text("old")
    target.chmod(0o600)
    atomic_write_text(target, "{}", mode=0o755)
    assert (target.read_text(), target.stat().st_mode & 0o777) == ("{}", 0o600)


def test_a_new_file_with_a_format_mode_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o077)
    try:
        atomic_write_text(tmp_path / "hwadvisor.fact", "#!/bin/sh\n", mode=0o755)
    finally:
        os.umask(old)
    assert (tmp_path / "hwadvisor.fact").stat().st_mode & 0o777 == 0o700


@pytest.mark.parametrize("dangling", [False, True], ids=["link", "dangling-link"])
def test_a_symlink_is_refused_and_left_alone(tmp_path: Path, dangling: bool) -> None:
    real = tmp_path / "real.json"
    if not dangling:
        real.write_text("old")
    link = tmp_path / "out.json"
    link.symlink_to(real)
    with pytest.raises(OutputError, match="is a symbolic link"):
        atomic_write_text(link, "{}")
    assert link.is_symlink()
    assert (real.read_text() if not dangling else real.exists()) == (
        "old" if not dangling else False
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["out.json", *([] if dangling else ["real.json"])]
    )


def test_a_legal_long_name_is_written(tmp_path: Path) -> None:
    """A 255-byte name is legal; the temporary file's own name must stay short."""
    name = "a" * 250 + ".json"
    atomic_write_text(tmp_path / name, "{}")
    assert [p.name for p in tmp_path.iterdir()] == [name]
    with pytest.raises(OutputError):
        atomic_write_text(tmp_path / ("b" * 256), "{}")  # too long: one line, no leftovers
    assert [p.name for p in tmp_path.iterdir()] == [name]


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_devices_are_not_read_as_documents(device: str) -> None:
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    with pytest.raises(FactsError, match="not a regular file"):
        read_json_document(device, what="facts")


def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path: Path) -> None:
    """Opened non-blocking: with no writer, a blocking open would never return."""
    fifo = tmp_path / "facts.json"
    os.mkfifo(fifo)
    with pytest.raises(FactsError, match="not a regular file"):
        read_json_document(fifo, what="facts")


def test_dash_is_standard_input(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    stdin = io.TextIOWrapper(io.BytesIO(b'{"schema_version": "1.0"}'))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert read_json_document("-", what="facts") == {"schema_version": "1.0"}
