"""``--html`` where the charts' JavaScript engine cannot start: one line, not a crash.

The page inlines the Vega bundle that vl-convert-python produces with its embedded V8
engine. V8 reserves a large virtual address space when it starts, and under an
address-space limit (``ulimit -v``) it aborts the whole process natively (SIGTRAP, exit
133, a V8 trace), taking the command's other outputs with it. So where such a limit is
set, the bundle is first produced in a child process: if V8 dies there, ``--html`` is
one error line (exit 2) instead, after the JSON ``--output`` was written
(:func:`hwadvisor.cli._common.emit` writes that first).
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

from hwadvisor.errors import OutputError

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.estimate import EstimateReport

#: Seconds the trial child may take to import vl-convert and build the bundle.
TRIAL_TIMEOUT_S = 120.0
_TRIAL = "from hwadvisor.render.html import javascript_bundle; javascript_bundle()"


def address_space_limited() -> bool:
    """Whether this process runs under an address-space limit (``ulimit -v``)."""
    try:
        import resource
    except ImportError:  # not POSIX
        return False
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    return soft != resource.RLIM_INFINITY


def check_chart_engine(path: str) -> None:
    """Raise :class:`OutputError` (naming ``path``) when V8 cannot start here."""
    if not address_space_limited():
        return
    try:
        done = subprocess.run(
            [sys.executable, "-c", _TRIAL],
            capture_output=True,
            timeout=TRIAL_TIMEOUT_S,
            check=False,
        )
        ok = done.returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    if not ok:
        raise OutputError(
            "the HTML report's charts need vl-convert's JavaScript engine (V8), which cannot "
            "start under this address-space limit (ulimit -v); the report was not written",
            where=path,
        )


def write_html(path: str | None, doc: Advice | EstimateReport | BenchReport) -> None:
    """:func:`hwadvisor.render.html.write_report`, after :func:`check_chart_engine`."""
    if not path:
        return
    from hwadvisor.render.html import write_report

    check_chart_engine(path)
    write_report(path, doc)
