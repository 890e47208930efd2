"""The command-line interface: the only package that imports typer.

Each command lives in its own module here (``check.py``, ``bench.py``, ...) and
registers itself on the typer app; modules whose names start with ``_`` are helpers.
:func:`main` owns the exit codes: every :class:`~hwadvisor.errors.HwadvisorError` and
every usage error becomes one line on stderr (and a JSON error document on stdout under
``--json``), never a traceback. The app is built lazily so that the simple form of
``check`` (see ``_fast.py``) starts without typer.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import TYPE_CHECKING, Any

from hwadvisor.errors import ExitCode, HwadvisorError, UsageError

if TYPE_CHECKING:
    import typer

__all__ = ["app", "get_app", "main"]

_APP: typer.Typer | None = None


def get_app() -> typer.Typer:
    """The typer app with every command module registered (built once)."""
    global _APP
    if _APP is None:
        import importlib
        import pkgutil

        from hwadvisor.cli._app import app as built

        for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
            if not info.name.startswith("_"):
                importlib.import_module(f"{__name__}.{info.name}")
        _APP = built
    return _APP


def __getattr__(name: str) -> Any:
    if name == "app":
        return get_app()
    raise AttributeError(name)


_FAST_EXIT = False


def _exit(code: int) -> None:
    """Exit with ``code``; in a real run with torch loaded, skip interpreter teardown.

    Tearing down torch's thread pools and extension modules takes over a second on a
    small machine and does nothing useful for a finished command; every output file has
    already been written and synced, so flush the streams and leave at once. Only when
    :func:`main` runs as the program (no ``argv`` given), never inside a test process.
    """
    if _FAST_EXIT and "torch" in sys.modules:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the SPEC §4 code; never lets a traceback through."""
    from hwadvisor.cli._common import fail

    global _FAST_EXIT
    _FAST_EXIT = argv is None
    if argv is None:
        # hwadvisor uses no pydantic plugins; looking for them scans every installed
        # distribution's entry points when the first model is built (~20 ms of a start-up
        # budget of 250 ms). Only for the program itself, never for a library caller.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in args
    try:
        from hwadvisor.cli._fast import try_fast_check

        fast = try_fast_check(args)
        if fast is not None:
            sys.exit(fast)
        import typer

        try:
            rv = get_app()(args=args, prog_name="hwadvisor", standalone_mode=False)
        except typer.Exit as exc:
            _exit(int(exc.exit_code))
        except typer.Abort:
            fail(HwadvisorError("interrupted"), wants_json, code=ExitCode.INTERRUPTED)
        except typer.TyperException as exc:
            # Typer's own usage errors (unknown option, bad value, missing argument).
            message = " ".join(exc.format_message().split())
            fail(UsageError(message), wants_json, code=getattr(exc, "exit_code", 2) or 2)
    except HwadvisorError as exc:
        fail(exc, wants_json)
    except KeyboardInterrupt:
        fail(HwadvisorError("interrupted"), wants_json, code=ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # `hwadvisor check --json | head` closes the pipe early: not an error of ours.
        from hwadvisor.cli._common import silence_stdout

        silence_stdout()
        sys.exit(0)
    except Exception as exc:  # a bug of ours: still one line, never a traceback
        detail = (
            f"internal error: {type(exc).__name__}: {exc} (set HWADVISOR_DEBUG=1 for the traceback)"
        )
        if os.environ.get("HWADVISOR_DEBUG"):
            raise
        fail(HwadvisorError(detail), wants_json, code=ExitCode.UNKNOWN)
    _exit(rv if isinstance(rv, int) else 0)
