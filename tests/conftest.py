"""Shared test fixtures: where recorded hosts live, and a CLI runner."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import pytest
from hypothesis import HealthCheck, settings

TESTS = Path(__file__).parent
DATA = TESTS / "data"
HOSTS = DATA / "hosts"
STANDIN_SOURCE = DATA / "nvml" / "standin" / "libnvidia-ml.c"


# Hypothesis budgets. -------------------------------------------------------------------
# A property test that names no max_examples of its own runs 50 examples in the default
# run; CI's second step (HWADVISOR_HYPOTHESIS=thorough, .ci/run) runs every property test
# again with 500. Neither profile times anything: no per-example deadline, and no
# too-slow health check, which a busy or shared machine trips. A test's own @settings
# (max_examples=300, the hardening profiles) keeps its numbers under both.
for _name, _examples in (("default-run", 50), ("thorough", 500)):
    settings.register_profile(
        _name, max_examples=_examples, deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
settings.load_profile(
    "thorough" if os.environ.get("HWADVISOR_HYPOTHESIS") == "thorough" else "default-run"
)


# No test keeps or reads this machine's remembered bench figures (bench.remembered): each
# test that wants them points HWADVISOR_CACHE_DIR at its own folder. Children inherit it.
os.environ["HWADVISOR_CACHE_DIR"] = "off"


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


# Child processes: none may outlive the test that started it. ---------------------------


@functools.cache
def _become_subreaper() -> None:
    """On Linux, adopt orphaned descendants (PR_SET_CHILD_SUBREAPER), so that a grandchild
    whose parent died is still this process's child and the fixture below still sees it."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)


def _has_children() -> bool:
    """Whether this process has any child at all: a cheap read of /proc (about 40 µs,
    where psutil's walk costs about 1 ms), so most tests pay nearly nothing."""
    tasks = Path(f"/proc/{os.getpid()}/task")
    try:
        return any((t / "children").read_text().strip() for t in tasks.iterdir())
    except OSError:
        return True  # no /proc, or no children files: ask psutil


def _descendants() -> dict[tuple[int, float], psutil.Process]:
    """This process's descendants, by (pid, start time) so that a reused pid is new."""
    if not _has_children():
        return {}
    found: dict[tuple[int, float], psutil.Process] = {}
    for child in psutil.Process().children(recursive=True):
        with contextlib.suppress(psutil.Error):
            found[(child.pid, child.create_time())] = child
    return found


def _kill_and_reap(procs: list[psutil.Process], within_s: float = 10.0) -> None:
    """SIGKILL each process, then reap those that are (or became) our children."""
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    left = {proc.pid for proc in procs}
    deadline = time.monotonic() + within_s
    while left and time.monotonic() < deadline:
        for pid in list(left):
            try:
                if os.waitpid(pid, os.WNOHANG)[0] == pid:
                    left.discard(pid)
            except ChildProcessError:  # not ours: done once it is gone
                if not psutil.pid_exists(pid):
                    left.discard(pid)
        if left:
            time.sleep(0.01)  # polling the reap, not timing anything


@pytest.fixture(autouse=True)
def no_leaked_children() -> Iterator[None]:
    """Fail a test that leaves a child process running, after killing and reaping it.

    Zombies (ended but not yet waited for) are reaped without failing the test.
    """
    _become_subreaper()
    before = _descendants()
    yield
    new = [p for key, p in _descendants().items() if key not in before]
    if not new:
        return
    running: list[str] = []
    for proc in new:
        with contextlib.suppress(psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE:
                running.append(f"{proc.pid} {' '.join(proc.cmdline())[:120]}")
    _kill_and_reap(new)
    if running:
        pytest.fail("the test left child processes running (killed): " + "; ".join(running))
