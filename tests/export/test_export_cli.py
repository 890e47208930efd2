"""`hwadvisor export`: each format from a saved report, atomic output, one-line errors."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from typer.testing import CliRunner

from hwadvisor.cli import app

from .conftest import REPORTS, parse_features

runner = CliRunner()
EPYC = str(REPORTS / "recorded-epyc-milan-kvm.json")


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """The real entry point in a child process, so exit codes and stderr are the user's."""
    return subprocess.run(
        [sys.executable, "-m", "hwadvisor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_nfd_to_file_is_atomic_and_readable(tmp_path: Path) -> None:
    out = tmp_path / "hwadvisor"
    result = runner.invoke(
        app, ["export", "--format", "nfd", "--from", EPYC, "--output", str(out), "--expiry", "2"]
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    labels, expiry = parse_features(out.read_text())
    assert labels["hwadvisor.io/cpu.usable-cores"] == "2"
    assert expiry is not None
    assert [p.name for p in tmp_path.iterdir()] == ["hwadvisor"]  # no dot-file left behind
    assert stat.S_IMODE(out.stat().st_mode) == 0o644


def test_prometheus_to_stdout_parses() -> None:
    result = runner.invoke(
        app,
        [
            "export",
            "--format",
            "prometheus",
            "--from",
            str(REPORTS / "synthetic-t4-inference.json"),
        ],
    )
    assert result.exit_code == 0, result.output
    names = {f.name for f in text_string_to_metric_families(result.stdout)}
    assert {
        "hwadvisor_gpu_memory_total_bytes",
        "hwadvisor_cpu_feature",
        "hwadvisor_cpu_usable_cores",
    } <= names


def test_ansible_fact_and_seeded_cache(tmp_path: Path) -> None:
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
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
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


def test_fresh_probe_when_no_report_is_given() -> None:
    result = runner.invoke(app, ["export", "--format", "nfd", "--expiry", "0"])
    assert result.exit_code == 0, result.output
    labels, expiry = parse_features(result.stdout)
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
def test_bad_input_is_one_line(args: list[str], code: int, needle: str) -> None:
    result = run_cli("export", *args)
    assert result.returncode == code, result.stderr
    assert result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1
    assert needle in result.stderr


def test_unwritable_output_leaves_nothing(tmp_path: Path) -> None:
    target = tmp_path / "missing-folder" / "hwadvisor.prom"
    result = run_cli("export", "--format", "prometheus", "--from", EPYC, "--output", str(target))
    assert result.returncode == 2
    assert "missing-folder" in result.stderr
    assert not target.parent.exists()
