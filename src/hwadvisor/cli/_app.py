"""The typer application object every command module registers on.

:class:`_Group` maps no error itself: it carries every exception a command raises past
typer (which would exit 1 on a broken pipe, or turn Ctrl-C into a silent 130) to the one
boundary, :func:`hwadvisor.cli.main`. Typer's own usage errors and exits pass as they
are: with ``standalone_mode=False`` typer raises or returns them to ``main`` too.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from hwadvisor.cli._boundary import Escaped

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


app = typer.Typer(
    name="hwadvisor",
    cls=_Group,
    help="What hardware a deep-learning job needs, and whether this machine is enough.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
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
