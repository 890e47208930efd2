"""Shared test fixtures: where recorded hosts live, and a CLI runner."""

from __future__ import annotations

import contextlib
import io
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

TESTS = Path(__file__).parent
DATA = TESTS / "data"
HOSTS = DATA / "hosts"
STANDIN_SOURCE = DATA / "nvml" / "standin" / "libnvidia-ml.c"


# The CLI, run in this process through its one entry point. -----------------------------


class CliResult(NamedTuple):
    """What one run of :func:`hwadvisor.cli.main` left: its exit code and both streams.

    A named tuple, so ``code, out, err = cli(...)`` reads as well as ``result.code``.
    """

    code: int
    out: str
    err: str

    def error_lines(self) -> list[str]:
        """The non-blank lines on stderr."""
        return [ln for ln in self.err.splitlines() if ln.strip()]

    def json(self) -> Any:
        """stdout parsed as JSON."""
        return json.loads(self.out)


def run_main(args: list[str]) -> CliResult:
    """``main(args)`` with stdout and stderr captured; main returns the exit code."""
    from hwadvisor.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return CliResult(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="session")
def cli() -> Callable[..., CliResult]:
    """``cli("recommend", "--json", ...)``: the real entry point, in this process.

    Session-scoped (it holds no state) so hypothesis tests may use it too.
    """

    def run(*args: str) -> CliResult:
        return run_main(list(args))

    return run


@pytest.fixture
def hosts_dir() -> Path:
    """Folder of recorded machines (``tests/data/hosts/<name>/``)."""
    return HOSTS


@pytest.fixture
def data_dir() -> Path:
    """The tests' data folder."""
    return DATA


@pytest.fixture(scope="session")
def standin_nvml(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding the stand-in ``libnvidia-ml.so.1``, built from C once per run.

    Put it on ``LD_LIBRARY_PATH`` and the real pynvml path loads it; ``STANDIN_NVML_MODE``
    chooses its behaviour (hang, crash, version mismatch, ...).
    """
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler to build the stand-in NVML library")
    out = tmp_path_factory.mktemp("standin-nvml")
    subprocess.run(
        [cc, "-shared", "-fPIC", "-o", str(out / "libnvidia-ml.so.1"), str(STANDIN_SOURCE)],
        check=True,
        timeout=60,
    )
    return out
