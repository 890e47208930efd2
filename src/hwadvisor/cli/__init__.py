"""The command-line interface: the only package that imports typer.

Each command lives in its own module here (``check.py``, ``bench.py``, ...) and
registers itself on :data:`app`; modules whose names start with ``_`` are helpers.
:func:`main` owns the exit codes: every :class:`~hwadvisor.errors.HwadvisorError` and
every usage error becomes one line on stderr (and a JSON error document on stdout under
``--json``), never a traceback.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

from hwadvisor.cli._app import app
from hwadvisor.cli._common import fail
from hwadvisor.errors import ExitCode, HwadvisorError, UsageError

__all__ = ["app", "main"]


def _register_commands() -> None:
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


_register_commands()


def main(argv: list[str] | None = None) -> None:
    """Run the CLI and exit with the SPEC §4 code; never lets a traceback through."""
    import typer

    args = list(sys.argv[1:] if argv is None else argv)
    wants_json = "--json" in args
    try:
        rv = app(args=args, prog_name="hwadvisor", standalone_mode=False)
    except HwadvisorError as exc:
        fail(exc, wants_json)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except typer.Abort:
        fail(HwadvisorError("interrupted"), wants_json, code=ExitCode.INTERRUPTED)
    except KeyboardInterrupt:
        fail(HwadvisorError("interrupted"), wants_json, code=ExitCode.INTERRUPTED)
    except typer.TyperException as exc:
        # Typer's own usage errors (unknown option, bad value, missing argument).
        message = exc.format_message().strip().replace("\n", " ")
        fail(UsageError(message), wants_json, code=getattr(exc, "exit_code", 2) or 2)
    except BrokenPipeError:
        # `hwadvisor check --json | head` closes the pipe early: not an error of ours.
        sys.stderr.close()
        sys.exit(0)
    code = rv if isinstance(rv, int) else 0
    sys.exit(code)
