"""What a process that waits on a child of its own needs from signals (standard library only).

A child started in its own session (``start_new_session=True``, so a terminal's Ctrl-C is
the parent's to pass on) would outlive its parent if SIGTERM ended the parent at once, as
Python's default handler does. :func:`terminate_raises` makes SIGTERM an exception for the
time of the wait, so the waiter kills the child before it exits. The NVML probe's child
(:mod:`hwadvisor.probe.nvml_process`) and the user-model child
(:mod:`hwadvisor.estimate.workload.contained`) both wait under it.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Iterator


@contextlib.contextmanager
def terminate_raises() -> Iterator[None]:
    """While a child runs, SIGTERM raises ``SystemExit(143)`` in this process.

    Only from the main thread (signal handlers can be set nowhere else), and only over
    the default handler (one the embedding program set is left alone).
    """
    import threading

    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL
    ):
        yield
        return

    def _raise(signum: int, frame: object) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, _raise)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
