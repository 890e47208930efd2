"""The typer application object every command module registers on.

:class:`_Group` maps no error itself: it carries every exception a command raises past
typer (which would exit 1 on a broken pipe, or turn Ctrl-C into a silent 130) to the one
boundary, :func:`hwadvisor.cli.main`. Typer's own usage errors and exits pass as they
are: with ``standalone_mode=False`` typer raises or returns them to ``main`` too.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

import typer
from typer.core import TyperGroup

from hwadvisor.cli._boundary import Escaped
from hwadvisor.errors import ExitCode

#: Typer's own exceptions (usage errors, exits), which reach :func:`hwadvisor.cli.main`
#: without help: with ``standalone_mode=False`` typer raises or returns them as they are.
_TYPERS = (typer.Exit, typer.Abort, typer.TyperException)


class _Group(TyperGroup):
    """The root command group: hands what a command raised to the CLI's boundary."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except _TYPERS:
            raise
        except (Exception, KeyboardInterrupt) as exc:
            raise Escaped(exc) from exc


#: The help options of every command.
HELP_OPTIONS = ["-h", "--help"]

app = typer.Typer(
    name="hwadvisor",
    cls=_Group,
    help="What hardware a deep-learning job needs, and whether this machine is enough.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": HELP_OPTIONS},
)


def _print_version(value: bool) -> None:
    if value:
        from hwadvisor import __version__

        typer.echo(f"hwadvisor {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        help="Print the version and exit.",
        is_eager=True,
        callback=_print_version,
    ),
) -> None:
    """What hardware a deep-learning job needs, and whether this machine is enough."""


def bare_flags(command: Any) -> None:
    """Give every flag of ``command`` and its subcommands (``--help`` too) an empty metavar.

    Typer's help prints a type after every option, ``<bool>`` after each flag too,
    although a flag takes no value; an empty metavar leaves the flags bare.
    """
    help_option = command.get_help_option(typer.Context(command, help_option_names=HELP_OPTIONS))
    for param in [*command.params, help_option]:
        if param is not None and getattr(param, "is_flag", False) and param.metavar is None:
            param.metavar = ""
    for child in getattr(command, "commands", {}).values():
        bare_flags(child)


def names_a_group(root: Any, args: list[str]) -> bool:
    """Whether ``args`` name a command group and nothing else (``hwadvisor``, ``hwadvisor
    rules``): a group needs a command after it."""
    node = root
    for arg in args:
        if arg.startswith("-"):
            return False
        node = getattr(node, "commands", {}).get(arg)
        if node is None:
            return False
    return bool(getattr(node, "commands", None))


def usage(root: Any, args: list[str]) -> int:
    """Print the group's help on stderr (stdout stays for documents) and return 2, the code
    of a usage error, without an error line: the help says what is missing."""
    with contextlib.redirect_stdout(sys.stderr), contextlib.suppress(typer.Exit):
        root.main(args=[*args, "--help"], prog_name="hwadvisor", standalone_mode=False)
    return int(ExitCode.BAD_INPUT)
