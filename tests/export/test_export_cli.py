"""`hwadvisor export`: each format from a saved report, atomic output, one-line errors."""

from __future__ import annotations

import json
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from .conftest import REPORTS, parse_features

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


EPYC = str(REPORTS / "recorded-epyc-milan-kvm.json")


def test_nfd_to_file_is_atomic_and_readable(cli: Cli, tmp_path: Path) -> None:
    out = tmp_path / "hwadvisor"
    result = cli(
        *["export", "--format", "nfd", "--from", EPYC, "--output", str(out), "--expiry", "2"]
    )
    assert result.code == 0, result.err
    assert result.out == ""
    labels, expiry = parse_features(out.read_text())
    assert labels["hwadvisor.io/cpu.usable-cores"] == "2"
    assert expiry is not None
    assert [p.name for p in tmp_path.iterdir()] == ["hwadvisor"]  # no dot-file left behind
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_prometheus_to_stdout_parses(cli: Cli) -> None:
    result = cli(
        *[
            "export",
            "--format",
            "prometheus",
            "--from",
            str(REPORTS / "synthetic-t4-inference.json"),
        ],
    )
    assert result.code == 0, result.err
    names = {f.name for f in text_string_to_metric_families(result.out)}
    assert {
        "hwadvisor_gpu_memory_total_bytes",
        "hwadvisor_cpu_feature",
        "hwadvisor_cpu_usable_cores",
    } <= names


def test_ansible_fact_and_seeded_cache(cli: Cli, tmp_path: Path) -> None:
    fact, cache = tmp_path / "hwadvisor.fact", tmp_path / "cache" / "facts.json"
    cache.parent.mkdir()
    args = [
        "export",
        "-f",
        "ansible",
        "--from",
        EPYC,
        "-o",
        str(fact),
        "--cache",
        str(cache),
        "--seed-cache",
        "--json",
    ]
    result = cli(*args)
    assert result.code == 0, result.err
    summary = json.loads(result.out)
    assert summary["cache_written"] == str(cache)
    assert stat.S_IMODE(fact.stat().st_mode) == 0o755
    assert stat.S_IMODE(cache.stat().st_mode) == 0o644
    printed = json.loads(
        subprocess.run([str(fact)], capture_output=True, text=True, check=True, timeout=10).stdout
    )
    saved = json.loads(Path(EPYC).read_text())
    assert (printed["host"], printed["cpu"]) == (saved["host"], saved["cpu"])
    assert [r["value"] for r in printed["bench"]["results"]] == [
        r["value"] for r in saved["bench"]["results"]
    ]


def test_fresh_probe_when_no_report_is_given(cli: Cli) -> None:
    result = cli("export", "--format", "nfd", "--expiry", "0")
    assert result.code == 0, result.err
    labels, expiry = parse_features(result.out)
    assert expiry is None
    assert "hwadvisor.io/cpu.avx2" in labels


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["--format", "nfd", "--from", str(REPORTS / "bad-truncated.json")], 2, "not valid JSON"),
        (
            ["--format", "nfd", "--from", str(REPORTS / "bad-wrong-major.json")],
            2,
            "schema_version 2.0",
        ),
        (
            ["--format", "nfd", "--from", str(REPORTS / "bad-not-facts.json")],
            2,
            "not a facts document",
        ),
        (["--format", "nfd", "--from", EPYC, "--prefix", "nvidia.com"], 2, "nvidia.com"),
        (["--format", "nfd", "--from", EPYC, "--expiry", "-1"], 2, "--expiry"),
        (["--format", "nfd", "--from", EPYC, "--expiry", "1e12"], 2, "--expiry"),
        (["--format", "yaml", "--from", EPYC], 2, "yaml"),
    ],
)
def test_bad_input_is_one_line(cli: Cli, args: list[str], code: int, needle: str) -> None:
    result = cli("export", *args)
    assert result.code == code, result.err
    assert result.out == ""
    assert len(result.error_lines()) == 1
    assert needle in result.err


def test_unwritable_output_leaves_nothing(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "missing-folder" / "hwadvisor.prom"
    result = cli("export", "--format", "prometheus", "--from", EPYC, "--output", str(target))
    assert result.code == 2
    assert "missing-folder" in result.err
    assert not target.parent.exists()
