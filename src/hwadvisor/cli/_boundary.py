"""The CLI's one error boundary: every way a run can end, mapped to its exit code in one place.

:func:`exit_code_for` turns whatever stopped a command (hwadvisor's own errors, typer's
usage errors, Ctrl-C, a reader that closed the pipe, a stray ``SystemExit``, a bug of
ours) into one line on stderr, the JSON error document on stdout under ``--json``, and
the exit code. :func:`hwadvisor.cli.main` is its only caller.

Typer (its own copy of click) handles some of these itself when they pass through its
command group (it exits 1 on a broken pipe, turns Ctrl-C into a silent 130), so the
group in ``_app.py`` wraps them in :class:`Escaped` and they reach this module untouched.

Nothing here imports typer: the fast ``check`` path runs through it too.
"""

from __future__ import annotations

import contextlib
import os
import sys

from hwadvisor.errors import ExitCode, HwadvisorError, UsageError


class Escaped(Exception):
    """An exception raised inside a command, carried past typer to the boundary."""

    def __init__(self, original: BaseException) -> None:
        super().__init__(repr(original))
        self.original = original


def _typer_kind(exc: BaseException) -> str | None:
    """ "usage", "abort" or "exit" for typer's own exceptions; None for anything else."""
    typer = sys.modules.get("typer")
    if typer is None:
        return None
    if isinstance(exc, typer.Exit):
        return "exit"
    if isinstance(exc, typer.Abort):
        return "abort"
    if isinstance(exc, typer.TyperException):
        return "usage"
    return None


def _system_exit_code(exc: SystemExit) -> int:
    """The status a ``SystemExit`` asks for, as the interpreter would give it."""
    if exc.code is None or isinstance(exc.code, int):
        return int(exc.code or 0)
    sys.stderr.write(f"{exc.code}\n")
    return 1


def exit_code_for(exc: BaseException, wants_json: bool) -> int:
    """Report ``exc`` (one stderr line, a JSON error document under ``--json``) and return
    its exit code. With ``HWADVISOR_DEBUG`` set, a bug of ours is re-raised instead."""
    from hwadvisor.cli._common import report_error, silence_stdout

    if isinstance(exc, Escaped):
        exc = exc.original
    kind = _typer_kind(exc)
    if isinstance(exc, HwadvisorError):
        return report_error(exc, wants_json)
    if isinstance(exc, (KeyboardInterrupt, EOFError)) or kind == "abort":
        return report_error(HwadvisorError("interrupted"), wants_json, code=ExitCode.INTERRUPTED)
    if isinstance(exc, BrokenPipeError):
        # `hwadvisor check --json | head` closed the pipe early: not an error of ours.
        # Point stdout at /dev/null so the final flush cannot fail again, and exit 0.
        silence_stdout()
        return int(ExitCode.OK)
    if isinstance(exc, SystemExit):
        return _system_exit_code(exc)
    if kind == "exit":
        return int(getattr(exc, "exit_code", 0) or 0)
    if kind == "usage":
        # Typer's own usage errors (unknown option, bad value, missing argument).
        message = " ".join(exc.format_message().split())  # type: ignore[attr-defined]
        code = getattr(exc, "exit_code", ExitCode.BAD_INPUT) or ExitCode.BAD_INPUT
        return report_error(UsageError(message), wants_json, code=code)
    if os.environ.get("HWADVISOR_DEBUG"):
        raise exc
    detail = (
        f"internal error: {type(exc).__name__}: {exc} (set HWADVISOR_DEBUG=1 for the traceback)"
    )
    return report_error(HwadvisorError(detail), wants_json, code=ExitCode.UNKNOWN)


def stdout_closed() -> bool:
    """Whether the program started with its stdout closed (``hwadvisor check >&-``).

    Python then sets ``sys.stdout`` to None, and the first file the command opens could
    take descriptor 1 and receive what was meant for stdout: the run stops before that.
    """
    if sys.stdout is None:
        return True
    try:
        os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return sys.__stdout__ is None
    return False


def start_program() -> int | None:
    """Checks and settings for the program itself (not for a library caller) before
    any command runs: an exit code when it cannot run, else None."""
    from hwadvisor.render.encoding import install

    install()
    if stdout_closed():
        sys.stderr.write("hwadvisor: error: standard output is closed; nothing can be written\n")
        sys.stderr.flush()
        return int(ExitCode.BAD_INPUT)
    return None


def leave_now(code: int) -> None:
    """End the process with ``code`` at once, without the interpreter's teardown.

    Only for the program itself, and only once torch is loaded: tearing down torch's
    thread pools and extension modules takes a second or more on a small machine and
    does nothing for a finished command. Every output file has already been written and
    synced (``io.atomic_write_text``); the streams are flushed here. Anything registered
    with ``atexit`` does not run, which is why it is limited to runs that loaded torch.
    """
    if "torch" not in sys.modules:
        return
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)
