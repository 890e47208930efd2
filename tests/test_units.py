"""Durations and byte sizes are spelt one way, whoever prints them."""

from __future__ import annotations

import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.units import duration, human_bytes


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "unknown"),
        (math.nan, "unknown"),
        (math.inf, "unknown"),
        (0, "0 s"),
        (8.5e-4, "850 µs"),
        (0.0123, "12.3 ms"),
        (0.99996, "1 s"),  # rounded before the unit is chosen, never "1,000 ms"
        (4.561, "4.56 s"),
        (45.6, "45.6 s"),
        (90, "1.5 min"),
        (725, "12.1 min"),
        (5400, "1.5 h"),
        (7200, "2.0 h"),
        (2 * 86400, "2.0 days"),
        (1e9, "11,574.1 days"),
    ],
)
def test_durations(seconds: float | None, text: str) -> None:
    assert duration(seconds) == text


def test_5400_seconds_read_the_same_in_every_output() -> None:
    """The renderers, the rule messages and the fleet reasons all say 1.5 h."""
    from hwadvisor.engine.template import FILTERS
    from hwadvisor.export.fleet import _judge
    from hwadvisor.models.estimate import DeviceEstimate
    from hwadvisor.models.workload import Workload

    assert FILTERS["duration"](5400) == "1.5 h"
    est = DeviceEstimate(device="t4", name="T4", total_time_s=5400.0, fits=True)
    assert _judge(Workload(deadline_hours=2.0), est)[2].startswith("1.5 h within 2 h")


@pytest.mark.parametrize(
    ("n", "binary", "decimal"),
    [
        (None, "unknown", "unknown"),
        (0, "0 B", "0 B"),
        (512, "512 B", "512 B"),
        (1536, "1.5 KiB", "1.5 kB"),
        (3 * 2**30, "3.0 GiB", "3.2 GB"),
        (16e9, "14.9 GiB", "16.0 GB"),
        (5 * 2**60, "5,120.0 PiB", "5,764.6 PB"),
    ],
)
def test_byte_sizes(n: float | None, binary: str, decimal: str) -> None:
    assert human_bytes(n) == binary
    assert human_bytes(n, decimal=True) == decimal


_DURATION = re.compile(r"^[0-9][0-9,]*(\.[0-9]+)? (µs|ms|s|min|h|days)$")


@given(st.floats(min_value=1e-9, max_value=1e12))
def test_every_duration_is_a_number_and_a_unit_with_few_digits(seconds: float) -> None:
    text = duration(seconds)
    assert _DURATION.match(text), text
    digits = re.sub(r"[^0-9]", "", text.split()[0]).lstrip("0")
    assert len(digits) <= 3 or text.endswith(("h", "days")), text


@given(st.floats(min_value=1e-9, max_value=1e12), st.floats(min_value=1.0, max_value=1e3))
def test_longer_is_never_spelt_shorter(seconds: float, factor: float) -> None:
    """Reading the text back gives the order of the values (to the rounding shown)."""
    scale = {"µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "days": 86400.0}

    def back(text: str) -> float:
        number, unit = text.split()
        return float(number.replace(",", "")) * scale[unit]

    assert back(duration(seconds * factor)) >= back(duration(seconds)) * (1 - 0.06)
