"""The text forms of workload values, parsed once for the CLI and for Python callers.

Pure functions, no typer: each raises ``ValueError`` with a reason a person can act on;
the CLI (``cli/_workload.py``) turns that into a usage error naming the option. They
check spelling only: the limits (above zero, not absurd) are the ``Workload`` model's.
"""

from __future__ import annotations

import re
from decimal import Decimal

_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
#: Counts past 10^30 are refused here; the workload's own limits are far lower.
_MAX_DIGITS = 30

_DIM = r"[+-]?[0-9]+"
_SHAPE = re.compile(rf"^\s*{_DIM}(?:\s*[,x]\s*{_DIM})*\s*$", re.IGNORECASE)
_SHAPE_SEP = re.compile(r"\s*[,x]\s*", re.IGNORECASE)
#: Digits of one dimension past which the text is refused (the model allows far fewer).
_MAX_DIM_DIGITS = 30


def parse_count(text: str) -> int:
    """A count as people write it: ``125000000``, ``1.25e8``, ``125M``, ``7B``, ``1.5k``.

    The result must be a whole number; limits (above 0, not absurd) are the workload's.
    """
    m = _COUNT.match(text)
    if not m:
        raise ValueError(f"{text!r} is not a count (write e.g. 125000000, 1.25e8, 125M or 7B)")
    # Decimal, not float: 16.1k is 16100 exactly, where 16.1 * 1000 is 16100.000000000002.
    value = Decimal(m.group(1)) * _SCALE[m.group(2).lower()]
    if value.adjusted() > _MAX_DIGITS:
        raise ValueError(f"{text!r} is too large")
    if value != value.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number")
    return int(value)


def parse_shape(text: str) -> list[int]:
    """One sample's shape: ``3,224,224``, ``3x224x224`` or ``128`` -> a list of integers.

    Commas or ``x`` separate the dimensions, spaces around them are allowed. The sign of a
    dimension is kept, so that the workload can say a negative one is not positive.
    """
    if not _SHAPE.match(text) or any(
        len(part.lstrip("+-")) > _MAX_DIM_DIGITS for part in _SHAPE_SEP.split(text.strip())
    ):
        raise ValueError(f"{text!r} is not a shape (write e.g. 3,224,224, 3x224x224 or 128)")
    return [int(part) for part in _SHAPE_SEP.split(text.strip())]


def format_shape(shape: list[int] | tuple[int, ...]) -> str:
    """The shape as the options spell it: ``[3, 224, 224]`` -> ``3,224,224``."""
    return ",".join(str(d) for d in shape)


__all__ = ["format_shape", "parse_count", "parse_shape"]
