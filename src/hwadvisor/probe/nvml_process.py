"""Runs :mod:`hwadvisor.probe.nvml_child` under a deadline and reads what it said.

``subprocess.run(timeout=...)`` is not enough with a broken driver: it kills only the
direct child and then waits without bound. Here the child gets its own session (process
group); on expiry the whole group gets SIGKILL, the wait for it is bounded, and a child
stuck in the kernel (uninterruptible sleep inside the driver) is abandoned rather than
waited for. Whatever the child printed before the end is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import hwadvisor
from hwadvisor.probe.nvml_child import FAKE_ENV
from hwadvisor.processes import terminate_raises

#: How long to wait for a killed child to be reaped before abandoning it.
REAP_TIMEOUT_S = 1.0

# Children that would not die (stuck in the kernel). Held so that no ResourceWarning
# fires when their Popen objects are collected; the OS reaps them when they wake.
_ABANDONED: list[Any] = []


@dataclass
class ChildResult:
    """What the child reported: GPU records, notes, a fatal NVML error, or how it ended."""

    gpus: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    done: bool = False
    fatal: str | None = None
    fatal_message: str | None = None
    timed_out: bool = False
    abandoned: bool = False
    returncode: int | None = None
    signal_name: str | None = None
    bad_lines: int = 0
    stderr_tail: str = ""


def child_env(fake: str | None) -> dict[str, str]:
    """The child's environment: ours, the fake-NVML seam if set, and a path to this package.

    The path makes ``-m hwadvisor.probe.nvml_child`` work from a source checkout too.
    """
    env = dict(os.environ)
    env.pop(FAKE_ENV, None)  # only the seams decide whether the child replays a recording
    if fake:
        env[FAKE_ENV] = fake
    src = str(Path(hwadvisor.__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    return env


def parse_output(stdout: bytes, result: ChildResult) -> None:
    """Read the child's JSON Lines into ``result``; a line cut short by a kill is skipped."""
    for raw in stdout.decode("utf-8", errors="replace").splitlines():
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError:
            result.bad_lines += 1
            continue
        if not isinstance(obj, dict):
            result.bad_lines += 1
        elif isinstance(obj.get("gpu"), dict):
            result.gpus.append(obj["gpu"])
        elif obj.get("done"):
            result.done = True
            result.notes = [str(n) for n in obj.get("notes", [])]
        elif "fatal" in obj:
            result.fatal = str(obj["fatal"])
            result.fatal_message = str(obj.get("message", ""))
        else:
            result.bad_lines += 1


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone already, or not ours
        os.killpg(pid, signal.SIGKILL)


def run_child(
    timeout: float,
    env: dict[str, str],
    argv: list[str] | None = None,
    *,
    reap_timeout: float = REAP_TIMEOUT_S,
) -> ChildResult:
    """Run the NVML child (or ``argv``) for at most ``timeout`` seconds, plus a bounded reap.

    ``argv`` and ``reap_timeout`` are seams for tests: another program as the child, and
    a shorter wait before a child that will not end is abandoned.
    """
    import subprocess  # only on machines with an NVIDIA device; keeps the common path lean

    cmd = argv or [sys.executable, "-m", "hwadvisor.probe.nvml_child"]
    _ABANDONED[:] = [p for p in _ABANDONED if p.poll() is None]  # reap those that woke up
    result = ChildResult()
    # SIGTERM raises from before the child exists, so that no signal arriving just after
    # it started can end this process and leave the child running.
    with terminate_raises():
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,
            close_fds=True,
        )
        out, err = _wait(proc, timeout, result, reap_timeout)
    result.returncode = proc.returncode
    if proc.returncode is not None and proc.returncode < 0:
        try:
            result.signal_name = signal.Signals(-proc.returncode).name
        except ValueError:
            result.signal_name = f"signal {-proc.returncode}"
    parse_output(out or b"", result)
    result.stderr_tail = (err or b"").decode("utf-8", errors="replace").strip()[-500:]
    return result


def _wait(
    proc: Any, timeout: float, result: ChildResult, reap_timeout: float
) -> tuple[bytes, bytes]:
    """The child's output within ``timeout`` (then SIGKILL and a reap bounded by ``reap_timeout``)."""
    import subprocess

    try:
        out, err = proc.communicate(timeout=max(timeout, 0.0))
    except subprocess.TimeoutExpired:
        result.timed_out = True
        _kill_group(proc.pid)
        try:
            out, err = proc.communicate(timeout=reap_timeout)
        except subprocess.TimeoutExpired as again:
            # Output gathered so far travels on the exception; keep it and walk away.
            out, err = (again.output or b""), (again.stderr or b"")
            result.abandoned = True
            _ABANDONED.append(proc)
    except BaseException:
        # Ctrl-C (or any error) while waiting: the child runs in its own session, so the
        # terminal's SIGINT never reaches it and a hung driver call would outlive us.
        _kill_group(proc.pid)
        with contextlib.suppress(Exception):
            proc.wait(timeout=reap_timeout)  # reap it: no zombie left behind either
        raise
    return out, err
