"""Dotted version strings (drivers, CUDA, compute capability) compared as numbers."""

from __future__ import annotations

import re

_NUMBERS = re.compile(r"^\s*v?(\d+(?:\.\d+){0,3})")

#: CUDA builds torch publishes wheels for (``--index-url .../whl/cuNNN``), oldest first.
#: A driver runs every CUDA up to the version it reports, so the newest tag not above it
#: is the build to install. Tags before cu118 exist only for torch 1.x releases: a driver
#: that old is better upgraded, which the rules say beside the tag.
TORCH_CUDA_TAGS: tuple[tuple[tuple[int, ...], str], ...] = (
    ((10, 2), "cu102"),
    ((11, 1), "cu111"),
    ((11, 3), "cu113"),
    ((11, 6), "cu116"),
    ((11, 7), "cu117"),
    ((11, 8), "cu118"),
    ((12, 1), "cu121"),
    ((12, 4), "cu124"),
    ((12, 6), "cu126"),
    ((12, 8), "cu128"),
    ((12, 9), "cu129"),
    ((13, 0), "cu130"),
)


def parse_version(text: object) -> tuple[int, ...] | None:
    """'12.2' -> (12, 2); '535.104.05' -> (535, 104, 5); a non-version -> None."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        text = str(text)
    if not isinstance(text, str):
        return None
    m = _NUMBERS.match(text)
    if m is None:
        return None
    return tuple(int(part) for part in m.group(1).split("."))


def compare(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    """-1, 0 or 1, padding the shorter with zeros (12 == 12.0)."""
    width = max(len(a), len(b))
    pa, pb = a + (0,) * (width - len(a)), b + (0,) * (width - len(b))
    return (pa > pb) - (pa < pb)


def newest_wheel_tag(cuda_driver: str) -> str | None:
    """The newest torch CUDA wheel tag a driver that runs CUDA ``cuda_driver`` can load."""
    have = parse_version(cuda_driver)
    if have is None:
        return None
    fits = [tag for ver, tag in TORCH_CUDA_TAGS if compare(ver, have) <= 0]
    return fits[-1] if fits else None
