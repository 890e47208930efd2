"""Human output with rich: one module per document (check, bench, advice, estimate).

Tables and charts go to stdout; progress bars and warnings go to stderr, so that
``--json`` output stays clean and ``hwadvisor ... | less`` shows the report.
"""

from __future__ import annotations

import os
import sys
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


@lru_cache(maxsize=1)
def stdout_console() -> Console:
    """The console for reports (stdout)."""
    from rich.console import Console

    class _ReportConsole(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 here, the code SPEC §4 keeps for a failed gate. A reader that
            # stopped early (`hwadvisor check | head`) is no error: silence the rest, as
            # rich does, and let the CLI's BrokenPipeError handler exit 0 as for JSON.
            self.quiet = True
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            raise BrokenPipeError

    return _ReportConsole(highlight=False)


@lru_cache(maxsize=1)
def stderr_console() -> Console:
    """The console for progress and warnings (stderr)."""
    from rich.console import Console

    return Console(stderr=True, highlight=False)


def yes_no(value: bool | None) -> str:
    """'yes' in green, 'no' dimmed, 'unknown' in yellow: for feature tables."""
    if value is None:
        return "[yellow]unknown[/]"
    return "[bold green]yes[/]" if value else "[dim]no[/]"


def human_bytes(n: int | float | None) -> str:
    """Bytes as GiB/MiB/KiB with one decimal, or 'unknown'."""
    if n is None:
        return "unknown"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} TiB"
