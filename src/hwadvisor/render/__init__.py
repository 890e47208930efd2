"""Human output: one rich view per document (check, bench, advice, estimate, fleet, rules),
with ``layout`` (tables that fit the terminal), ``llm``, ``cost`` and ``chosen`` (the
row the verdict chose, in words); and the HTML report (``html``, ``charts``,
``llm_charts``, ``report_data``, ``report_sections``, ``report_llm``).

Tables and charts go to stdout; progress bars and warnings go to stderr, so that
``--json`` output stays clean and ``hwadvisor ... | less`` shows the report.
"""

from __future__ import annotations

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
            # rich exits 1 here, the code kept for a failed gate. A reader that
            # stopped early (`hwadvisor check | head`) is no error: stop printing and
            # raise, so the CLI's one boundary handles it as for JSON (exit 0).
            self.quiet = True
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
