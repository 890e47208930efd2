"""Durations and byte sizes as people read them, spelt one way in every output.

Pure functions, no rich: the terminal renderers, the rule messages (``|duration``,
``|gib``, ``|gb``) and the fleet ranking's reasons all call these, so 5,400 s is
"1.5 h" everywhere. ``humanize`` was considered and not taken: its ``naturaldelta``
says "an hour" for 5,400 s and it would be one more dependency for two functions.
"""

from __future__ import annotations

import math

UNKNOWN = "unknown"

#: (below this many seconds, unit, seconds per unit, format): up to minutes three
#: significant figures (step times need them), hours and days one decimal.
_DURATION_UNITS = (
    (1e-3, "µs", 1e-6, "sig"),
    (1.0, "ms", 1e-3, "sig"),
    (90.0, "s", 1.0, "sig"),
    (90.0 * 60, "min", 60.0, "sig"),
    (48.0 * 3600, "h", 3600.0, ".1f"),
)
_BINARY_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_DECIMAL_UNITS = ("B", "kB", "MB", "GB", "TB", "PB")


def duration(seconds: float | None) -> str:
    """``'850 µs'``, ``'12.3 ms'``, ``'4.56 s'``, ``'12.1 min'``, ``'1.5 h'``, ``'2.1 days'``.

    'unknown' for None or a value that is not a finite number.
    """
    if seconds is None or not math.isfinite(seconds):
        return UNKNOWN
    if seconds == 0:
        return "0 s"
    s = float(f"{seconds:.3g}")  # rounded first, so 0.99996 s is "1 s", not "1,000 ms"
    for below, unit, size, form in _DURATION_UNITS:
        if abs(s) < below:
            value = s / size
            text = _significant(value) if form == "sig" else format(value, form)
            return f"{text} {unit}"
    return f"{s / 86400:,.1f} days"


def human_bytes(n: float | None, *, decimal: bool = False) -> str:
    """``'512 B'``, ``'1.5 KiB'``, ``'14.6 GiB'`` in powers of 1024 (``decimal``: powers of
    1000, ``'16.0 GB'``); one decimal above bytes; 'unknown' for None or not finite."""
    if n is None or not math.isfinite(n):
        return UNKNOWN
    base, units = (1000.0, _DECIMAL_UNITS) if decimal else (1024.0, _BINARY_UNITS)
    value = float(n)
    for unit in units:
        if abs(value) < base or unit == units[-1]:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:,.1f} {unit}"
        value /= base
    raise AssertionError("unreachable: the last unit returns")


def _significant(value: float) -> str:
    """Three significant figures, never in exponent form: 0.0123, 4.56, 45.6, 850."""
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    digits = 2 - math.floor(math.log10(abs(value)))
    return f"{value:.{digits}f}".rstrip("0").rstrip(".")


__all__ = ["UNKNOWN", "duration", "human_bytes"]
