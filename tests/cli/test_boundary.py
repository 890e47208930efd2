"""The CLI's one error boundary: ``main(argv)`` returns the SPEC §4 code for every ending."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.cli import main
from hwadvisor.cli._boundary import exit_code_for
from hwadvisor.errors import FactsError

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["schema", "facts"], 0),
        (["--version"], 0),
        (["rules", "show", "--help"], 0),
        (["schema", "nope"], 2),
        (["check", "--no-such-option"], 2),
        (["rules", "show", "HW999"], 2),
    ],
)
def test_main_returns_the_code_and_never_exits(
    args: list[str], code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(args) == code  # a SystemExit would fail this test with a traceback
    if code:
        (line,) = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert line.startswith("hwadvisor: error: ")


def test_ctrl_c_inside_a_command_is_130_with_one_line_and_a_document(
    cli: Cli, tmp_path: Path
) -> None:
    model = tmp_path / "interrupting.py"
    model.write_text("def build():\n    raise KeyboardInterrupt\n")
    args = ["estimate", "--no-bench", "--on", "t4", "--input-shape", "4"]
    result = cli(*args, "--model", f"{model}:build", "--json")
    assert result.code == 130
    assert result.error_lines() == ["hwadvisor: error: interrupted"]
    assert result.json()["error"]["exit_code"] == 130


def test_each_ending_has_its_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert exit_code_for(FactsError("bad", where="f.json"), True) == 2
    out, err = capsys.readouterr()
    assert err == "hwadvisor: error: f.json: bad\n"
    assert json.loads(out)["error"] == {
        "kind": "facts",
        "message": "bad",
        "where": "f.json",
        "exit_code": 2,
    }
    assert exit_code_for(SystemExit(143), False) == 143  # SIGTERM while waiting on NVML
    assert exit_code_for(SystemExit(None), False) == 0
    assert exit_code_for(KeyboardInterrupt(), False) == 130
    assert capsys.readouterr().err == "hwadvisor: error: interrupted\n"


def test_a_bug_is_one_line_unless_debugging(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HWADVISOR_DEBUG", raising=False)
    assert exit_code_for(ZeroDivisionError("division by zero"), False) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "internal error: ZeroDivisionError: division by zero" in err
    monkeypatch.setenv("HWADVISOR_DEBUG", "1")
    with pytest.raises(ZeroDivisionError):
        exit_code_for(ZeroDivisionError("division by zero"), False)


@pytest.mark.parametrize(
    "args",
    [["rules", "list", "--json"], ["rules", "list"], ["check", "--json"], ["check"]],
    ids=" ".join,
)
def test_a_reader_that_went_away_is_not_an_error(args: list[str]) -> None:
    """``hwadvisor ... | head``: stdout is a pipe nobody reads, so every write fails."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # closed before the child starts: the first write gets EPIPE
    proc = subprocess.Popen(
        [sys.executable, "-m", "hwadvisor", *args],
        stdout=write_end,
        stderr=subprocess.PIPE,
        text=True,
    )
    os.close(write_end)
    _, err = proc.communicate(timeout=120)
    assert (proc.returncode, err) == (0, "")


def test_bench_takes_seconds_and_budget_as_one_option(cli: Cli) -> None:
    """``--seconds`` is bench's time budget; ``--budget`` (SPEC's name) is the same option."""
    seconds = cli("bench", "--seconds", "0")
    assert seconds.code == 2
    assert seconds.error_lines() == [
        "hwadvisor: error: --seconds must be a positive number of seconds, not 0.0"
    ]
    budget = cli("bench", "--budget", "-1")
    assert budget.code == 2 and "--budget must be a positive number" in budget.err
    both = cli("bench", "--seconds", "2", "--budget", "2", "--json")
    assert both.code == 2 and "same option" in both.err
    assert both.json()["error"]["exit_code"] == 2
