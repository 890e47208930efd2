"""A progress bar on stderr for long steps (the microbenchmark), as a plain callback."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def progress_callback(*, enabled: bool = True) -> Iterator[Callable[[str, float], None] | None]:
    """Yield ``progress(label, fraction)`` drawing a rich bar on stderr, or None when disabled.

    ``fraction`` runs from 0 to 1; the bar is transient so it leaves no trace in logs.
    """
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from hwadvisor.render import stderr_console

    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=stderr_console(),
        transient=True,
    ) as bar:
        task = bar.add_task("measuring", total=1.0)

        def update(label: str, fraction: float) -> None:
            bar.update(task, description=label, completed=max(0.0, min(1.0, fraction)))

        yield update
