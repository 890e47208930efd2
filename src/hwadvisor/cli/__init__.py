"""The command-line interface: the only package that imports typer.

Each command lives in its own module here (``check.py``, ``bench.py``, ...) and
registers itself on the typer app; modules whose names start with ``_`` are helpers.
:func:`main` is the one error boundary: it returns the exit code (the console script
passes it to ``sys.exit``), and every :class:`~hwadvisor.errors.HwadvisorError`, usage
error, Ctrl-C, broken pipe or bug becomes one line on stderr (and a JSON error document
on stdout under ``--json``), never a traceback (see ``_boundary.py``). Typer runs with
``standalone_mode=False``, so it never exits on its own. The app is built lazily so
that the simple form of ``check`` (see ``_fast.py``) starts without typer.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

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


_COMMAND: Any = None


def get_command() -> Any:
    """The click command typer builds from the app, built once per process.

    Typer converts the whole command tree on every call of the app; a process that runs
    many commands (the tests run hundreds) would rebuild it each time.
    """
    global _COMMAND
    if _COMMAND is None:
        import typer.main

        from hwadvisor.cli._app import bare_flags

        _COMMAND = typer.main.get_command(get_app())
        bare_flags(_COMMAND)
    return _COMMAND


def __getattr__(name: str) -> Any:
    if name == "app":
        return get_app()
    raise AttributeError(name)


def main(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code (:class:`~hwadvisor.errors.ExitCode`); the one
    place a run ends.

    Everything a command raises is mapped by :func:`~hwadvisor.cli._boundary.exit_code_for`
    to one stderr line (and a JSON error document under ``--json``), never a traceback.
    ``argv`` None means the program itself (the console script, ``python -m hwadvisor``):
    then, once torch has been loaded, it does not return but ends the process at once
    with the code (:func:`~hwadvisor.cli._boundary.leave_now`); with an ``argv`` (tests,
    Python callers) it always returns.
    """
    from hwadvisor.cli._boundary import exit_code_for, leave_now, start_program

    program = argv is None
    if program and (refused := start_program()) is not None:
        return refused
    if program:
        # hwadvisor uses no pydantic plugins; looking for them scans every installed
        # distribution's entry points when the first model is built (~20 ms of a start-up
        # budget of 250 ms). Only for the program itself, never for a library caller.
        os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        code = _run(args)
    except BaseException as exc:  # the boundary: every way a run can end
        code = exit_code_for(exc, "--json" in args)
    if program:
        leave_now(code)
    return code


def _run(args: list[str]) -> int:
    """The command's exit code: the fast ``check`` path, else the typer app."""
    from hwadvisor.cli._fast import try_fast_check

    fast = try_fast_check(args)
    if fast is not None:
        return fast
    from hwadvisor.cli._app import names_a_group, usage

    if names_a_group(get_command(), args):
        # `hwadvisor` or `hwadvisor rules` alone: the help on stderr, exit 2, no error line.
        return usage(get_command(), args)
    rv = get_command()(args=args, prog_name="hwadvisor", standalone_mode=False)
    # Non-standalone click returns the command's value, or the code of a typer.Exit.
    return rv if isinstance(rv, int) else 0
