"""The terminal chart of times: a log axis of at least a decade."""

from __future__ import annotations

from rich.console import Console

from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
from hwadvisor.models.workload import Workload
from hwadvisor.render.estimate import _chart


def _bars(*seconds: float) -> dict[str, int]:
    report = EstimateReport(
        workload=Workload(),
        estimates=[DeviceEstimate(device=f"d{i}", step_time_s=t) for i, t in enumerate(seconds)],
    )
    con = Console(record=True, width=100)
    _chart(con, report)
    rows = [ln for ln in con.export_text().splitlines() if "█" in ln]
    return {ln.split()[0]: ln.count("█") for ln in rows}


def test_close_times_get_bars_of_close_length() -> None:
    # An estimate and its measurement 0.5% apart: not a short bar and a long one.
    bars = _bars(2.11, 2.10)
    assert abs(bars["d0"] - bars["d1"]) <= 1 and bars["d0"] >= bars["d1"]


def test_times_decades_apart_keep_their_order_and_the_longest_is_full() -> None:
    bars = _bars(100.0, 1.0, 10.0)
    assert bars["d0"] > bars["d2"] > bars["d1"] >= 1
    assert _bars(5.0)["d0"] == bars["d0"]  # the longest bar is the full width either way
