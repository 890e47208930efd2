"""The typer application object every command module registers on.

:class:`_Group` turns hwadvisor's own errors into one stderr line and the SPEC §4 exit
code inside the command group, so the behaviour is the same whether the CLI runs from
:func:`hwadvisor.cli.main` or from a test's ``CliRunner``.
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from hwadvisor.errors import ExitCode, HwadvisorError


class _Group(TyperGroup):
    """The root command group: maps domain errors and Ctrl-C to exit codes."""

    def invoke(self, ctx: typer.Context) -> Any:  # type: ignore[override]
        from hwadvisor.cli._common import report_error, silence_stdout

        wants_json = "--json" in [*getattr(ctx, "_protected_args", []), *ctx.args]
        try:
            return super().invoke(ctx)
        except HwadvisorError as exc:
            report_error(exc, wants_json)
            raise typer.Exit(int(exc.exit_code)) from None
        except KeyboardInterrupt:
            report_error(HwadvisorError("interrupted"), wants_json, code=ExitCode.INTERRUPTED)
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except BrokenPipeError:
            # The reader went away (`hwadvisor ... | head`): not an error of ours. Point
            # stdout at /dev/null so the final flush cannot fail again, and exit 0 (click
            # would exit 1, the code of a failed gate).
            silence_stdout()
            raise typer.Exit(0) from None


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
