"""`hwadvisor check`: exit codes, the JSON contract, atomic output, and no torch import."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from hwadvisor.cli import app
from hwadvisor.models.schemas import schema_for

runner = CliRunner()


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run the real entry point in a child process, as a user would."""
    return subprocess.run(
        [sys.executable, "-m", "hwadvisor", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_check_json_validates_against_published_schema() -> None:
    result = runner.invoke(app, ["check", "--json"])
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, schema_for("facts"))
    assert doc["schema_version"].startswith("1.")
    assert doc["tool"]["name"] == "hwadvisor"
    names = {p["name"] for p in doc["probes"]}
    assert {"cpu", "memory", "host"} <= names


def test_check_json_matches_this_machine() -> None:
    doc = json.loads(runner.invoke(app, ["check", "--json"]).stdout)
    meminfo = Path("/proc/meminfo")
    if not meminfo.exists():
        pytest.skip("not Linux")
    total_kib = next(
        int(line.split()[1])
        for line in meminfo.read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    assert abs(doc["memory"]["total_bytes"] - total_kib * 1024) <= 0.01 * total_kib * 1024
    assert (
        doc["cpu"]["usable_cores"] == len(os.sched_getaffinity(0))
        or doc["cpu"]["cgroup_quota_cores"]
    )
    flags = set(doc["cpu"]["flags"])
    assert doc["cpu"]["features"]["avx2"] == ("avx2" in flags)
    assert doc["cpu"]["features"]["amx_bf16"] == ("amx_bf16" in flags)


def test_check_human_output_has_panels() -> None:
    result = runner.invoke(app, ["check"])
    assert result.exit_code == 0, result.output
    assert "CPU" in result.stdout
    assert "Memory & software" in result.stdout


def test_output_file_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "facts.json"
    result = runner.invoke(app, ["check", "--json", "--output", str(target)])
    assert result.exit_code == 0
    assert json.loads(target.read_text()) == json.loads(result.stdout)
    assert [p.name for p in tmp_path.iterdir()] == ["facts.json"]  # no dot-file left behind


def test_output_to_missing_folder_is_one_line(tmp_path: Path) -> None:
    proc = run_cli("check", "--output", str(tmp_path / "nope" / "facts.json"))
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1
    assert "nope" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["check", "--definitely-not-an-option"],
        ["check", "--timeout", "-1"],
        ["check", "--timeout", "nan"],
        ["check", "--timeout", "abc"],
        ["no-such-command"],
    ],
)
def test_bad_usage_is_exit_2_one_line(args: list[str]) -> None:
    proc = run_cli(*args)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("hwadvisor: error:")


def test_bad_usage_with_json_prints_error_document() -> None:
    proc = run_cli("check", "--json", "--timeout", "0")
    assert proc.returncode == 2
    doc = json.loads(proc.stdout)
    assert doc["error"]["exit_code"] == 2
    assert "--timeout" in doc["error"]["message"]


@pytest.mark.parametrize(
    "extra",
    [["--json"], ["--json", "--output", "facts.json"], []],
    ids=["stdout", "output", "terminal"],
)
def test_check_imports_neither_torch_nor_pydantic(extra: list[str], tmp_path: Path) -> None:
    """The start-up budget: torch, py-cpuinfo, pydantic and typer stay out of ``check``."""
    code = (
        "import sys\n"
        "from hwadvisor.cli import main\n"
        f"code = main(['check', *{extra!r}])\n"
        "assert code == 0, code\n"
        "bad = [m for m in ('torch', 'cpuinfo', 'pydantic', 'typer') if m in sys.modules]\n"
        "sys.stderr.write('IMPORTED:' + ','.join(bad))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    imported = proc.stderr.rsplit("IMPORTED:", 1)[1].strip()
    # Off Linux the CPU probe needs py-cpuinfo; nothing else may come in anywhere.
    expected = "" if sys.platform.startswith("linux") else "cpuinfo"
    assert imported == expected
    if "--output" in extra:
        assert json.loads((tmp_path / "facts.json").read_text(encoding="utf-8"))["cpu"]


def test_version_and_module_entry_point() -> None:
    proc = run_cli("--version")
    assert proc.returncode == 0
    assert proc.stdout.startswith("hwadvisor ")


def test_error_line_is_printable_and_bounded() -> None:
    from hwadvisor.cli._common import MAX_ERROR_CHARS, one_line

    line = one_line("bad value \x1b[31mred\x1b[0m\x07 " + "x" * 5000 + "\nsecond line")
    assert "\x1b" not in line and "\x07" not in line and "\n" not in line
    assert len(line) <= MAX_ERROR_CHARS
    assert line.startswith("bad value red x")
