"""Shared helpers for the hardening tests: run the real CLI and judge how it failed.

Two ways to run a command, both through the real entry point :func:`hwadvisor.cli.main`:

- ``cli(...)`` in this process (fast: the fuzzers run hundreds of examples this way), the
  runner every test shares (``tests/conftest.py``); ``main`` turns any exception that is
  a bug of ours into "internal error", so the checks below look for that text as the
  in-process stand-in for a traceback.
- ``proc(...)`` as ``python -m hwadvisor`` in a child process, where a real traceback,
  a second stderr line, a hang or a wrong exit status would show exactly as a user sees it.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).parents[1]
FACTS = TESTS / "data" / "facts"


def _sigint_at_default() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.fixture
def as_at_a_terminal() -> Callable[[], None]:
    """A ``preexec_fn`` giving a child SIGINT at its default, as at a terminal: a suite
    started in the background by a non-interactive shell (``cmd &``) hands its children
    SIGINT ignored, and Python then installs no KeyboardInterrupt handler, so a test's
    Ctrl-C would never arrive."""
    return _sigint_at_default


@dataclass
class Result:
    """What one run of the CLI left behind."""

    code: int
    out: str
    err: str
    seconds: float = 0.0

    def error_lines(self) -> list[str]:
        return [ln for ln in self.err.splitlines() if ln.strip()]


def run_module(
    args: list[str],
    *,
    env: dict[str, str] | None = None,
    timeout: float = 120,
    cwd: Path | None = None,
) -> Result:
    """Run ``python -m hwadvisor ARGS`` as a user would; ``env`` is added to this one's."""
    import time

    full_env = {**os.environ, **(env or {})}
    full_env.pop("HWADVISOR_DEBUG", None)
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "hwadvisor", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=full_env,
        cwd=cwd,
        check=False,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr, time.monotonic() - started)


def assert_clean_error(result: Result, code: int, *needles: str, wants_json: bool = False) -> None:
    """Exit ``code``, exactly one stderr line naming the problem, no traceback; under
    ``--json`` a JSON error document on stdout carrying the same code."""
    assert result.code == code, (result.code, result.err, result.out[:500])
    assert "Traceback" not in result.err and "internal error" not in result.err, result.err
    lines = result.error_lines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("hwadvisor: error: "), lines
    for needle in needles:
        assert needle.lower() in lines[0].lower(), (needle, lines[0])
    if wants_json:
        doc = json.loads(result.out)
        assert doc["error"]["exit_code"] == code
        assert doc["error"]["message"] and doc["tool"]["name"] == "hwadvisor"
    else:
        assert result.out == "", result.out[:500]


@pytest.fixture(scope="session")
def proc() -> Callable[..., Result]:
    """``proc([args], env=..., timeout=...)`` runs ``python -m hwadvisor`` in a child."""
    return run_module


@pytest.fixture(scope="session")
def clean_error() -> Callable[..., None]:
    """:func:`assert_clean_error`: exit code, one stderr line, no traceback, JSON error."""
    return assert_clean_error


@pytest.fixture
def laptop_facts() -> dict[str, Any]:
    """A valid facts document (a recorded laptop), to corrupt."""
    data: dict[str, Any] = json.loads((FACTS / "laptop.json").read_text())
    return data
