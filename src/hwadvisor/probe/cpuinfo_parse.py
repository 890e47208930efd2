"""Pure parsers for the text formats the CPU probe reads; none of them ever raises.

``/proc/cpuinfo`` (what ``cat /proc/cpuinfo`` shows), kernel CPU lists such as
``0-3,8,10-11`` (``Cpus_allowed_list``, sysfs ``online``, ``shared_cpu_list``), sysfs cache
sizes (``32K``) and the clock printed in an x86 model name (``@ 2.40GHz``). Each takes
arbitrary text and returns ``None`` or an empty result for anything it cannot read, so a
strange kernel or a truncated file becomes a missing fact, never a crash.
"""

from __future__ import annotations

import re

#: A kernel CPU list longer than this is refused: no real machine has a CPU id near it,
#: and a garbage range like ``0-99999999999`` must not allocate a huge set.
MAX_CPU_ID = 1 << 16

_GHZ = re.compile(r"@\s*([0-9]+(?:\.[0-9]+)?)\s*GHz", re.IGNORECASE)
_SIZE = re.compile(r"^\s*([0-9]+)\s*([KMG]?)(?:i?B)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    """Split ``/proc/cpuinfo`` into one ``{key: value}`` dict per processor block.

    Blocks are separated by blank lines; keys are stripped of the tab padding the kernel
    uses (``"cpu MHz\\t\\t: 2445.402"``). Lines without a colon are ignored. Arm kernels
    print a trailing system block (``Hardware``/``Revision``) without ``processor``; it
    is kept, since callers look keys up across blocks.
    """
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        key = key.strip()
        if key:
            # A repeated key in one block (never seen, but cheap to guard) keeps the first.
            current.setdefault(key, value.strip())
    if current:
        blocks.append(current)
    return blocks


def processor_blocks(blocks: list[dict[str, str]]) -> list[dict[str, str]]:
    """The blocks that describe a processor (have a ``processor`` key)."""
    return [b for b in blocks if "processor" in b]


def first_value(blocks: list[dict[str, str]], *keys: str) -> str | None:
    """The first non-empty value of any of ``keys`` across ``blocks``."""
    for block in blocks:
        for key in keys:
            value = block.get(key)
            if value:
                return value
    return None


def flag_set(blocks: list[dict[str, str]]) -> list[str]:
    """Raw feature flags (x86 ``flags``, Arm ``Features``), sorted and de-duplicated.

    Taken from the first block that has them: a hybrid x86 part (P- and E-cores) reports
    the same flag line on every core, since the kernel exposes the common subset.
    """
    raw = first_value(blocks, "flags", "Features")
    if raw is None:
        return []
    return sorted(set(raw.split()))


def parse_int(text: str | None, base: int = 10) -> int | None:
    """An integer from ``text`` (``"0x41"`` with base 0 or 16), or None."""
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def parse_float(text: str | None) -> float | None:
    """A finite float from ``text``, or None."""
    if text is None:
        return None
    try:
        value = float(text.strip())
    except ValueError:
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def parse_cpulist(text: str | None) -> frozenset[int] | None:
    """CPU ids of a kernel list (``"0-3,8,10-11"``; empty text is the empty set).

    Returns None when the text is not a list (garbage, a reversed range, an id above
    :data:`MAX_CPU_ID`), so that a caller can fall back to another source.
    """
    if text is None:
        return None
    text = text.strip()
    if not text:
        return frozenset()
    cpus: set[int] = set()
    for part in text.split(","):
        lo_s, dash, hi_s = part.strip().partition("-")
        if not (lo_s.isascii() and lo_s.isdigit()) or (
            dash and not (hi_s.isascii() and hi_s.isdigit())
        ):
            return None
        lo = int(lo_s)
        hi = int(hi_s) if dash else lo
        if hi < lo or hi > MAX_CPU_ID:
            return None
        cpus.update(range(lo, hi + 1))
    return frozenset(cpus)


def format_cpulist(cpus: frozenset[int] | set[int]) -> str:
    """The kernel's compact form of a CPU set (inverse of :func:`parse_cpulist`)."""
    parts: list[str] = []
    ordered = sorted(cpus)
    i = 0
    while i < len(ordered):
        j = i
        while j + 1 < len(ordered) and ordered[j + 1] == ordered[j] + 1:
            j += 1
        parts.append(str(ordered[i]) if i == j else f"{ordered[i]}-{ordered[j]}")
        i = j + 1
    return ",".join(parts)


def parse_size(text: str | None) -> int | None:
    """Bytes of a sysfs cache size (``"32K"``, ``"1M"``, ``"512"``), or None."""
    if text is None:
        return None
    match = _SIZE.match(text)
    if match is None:
        return None
    return int(match.group(1)) * _UNITS[match.group(2).upper()]


def ghz_in_model_name(name: str | None) -> float | None:
    """MHz of the nominal clock printed in an Intel model name (``"... @ 2.40GHz"``)."""
    if not name:
        return None
    match = _GHZ.search(name)
    if match is None:
        return None
    mhz = float(match.group(1)) * 1000.0
    return mhz if mhz > 0 else None
