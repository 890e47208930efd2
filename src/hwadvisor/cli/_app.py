"""The typer application object every command module registers on."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="hwadvisor",
    help="What hardware a deep-learning job needs, and whether this machine is enough.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def _root(
    version: bool = typer.Option(False, "--version", help="Print the version and exit.", is_eager=True),
) -> None:
    """What hardware a deep-learning job needs, and whether this machine is enough."""
    if version:
        from hwadvisor import __version__

        typer.echo(f"hwadvisor {__version__}")
        raise typer.Exit(0)
