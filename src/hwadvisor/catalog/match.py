"""Which catalog device a detected GPU is, from the name the driver or torch reports.

Used wherever a measured or probed GPU meets the catalog: the microbenchmark's peaks,
the fleet's pricing, and ``recommend``'s estimates for a machine's own GPUs.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry

#: Form factors: parts of a catalog id a GPU's name need not contain.
_FORMS = {"sxm", "pcie"}
#: Words that make a bigger or smaller part of the same family (Apple M2 Pro / Max /
#: Ultra; a laptop part, Max-Q): a name with one the catalog id lacks is another device.
_TIERS = {"pro", "max", "ultra", "plus", "mini", "q", "laptop", "mobile"}
_MEMORY = re.compile(r"\d+gb")


def _tokens(text: str) -> set[str]:
    return {t for t in re.split(r"[^a-z0-9]+", text.lower()) if t}


def match_gpu(
    name: str | None, memory_bytes: int | None = None, extra_catalogs: list[Path] | None = None
) -> str | None:
    """The catalog id of the GPU called ``name``, or None when the catalog has no such GPU.

    A system-on-chip entry matches its GPU (``Apple M2 GPU (10-core)`` is ``apple-m2``),
    but not a bigger or smaller part of its family (``Apple M2 Max`` is not).

    Every token of the catalog id except memory sizes and form factors (``h100`` of
    ``h100-sxm``, ``rtx`` and ``4090`` of ``rtx-4090``) must be a word of the name
    (``NVIDIA H100 80GB HBM3``), so ``a10`` never matches an A100. Among several entries a
    "PCIe" name picks the PCIe one, then a memory size written in the name
    (``A100-SXM4-80GB``), then the entry that names more of the words (``H100 NVL`` is
    ``h100-nvl``, not ``h100-sxm``), then the memory size closest to ``memory_bytes``.
    """
    from hwadvisor.catalog import load_devices

    if not name:
        return None
    words = _tokens(name)
    ranked = [
        (key, entry.id)
        for entry in load_devices(extra_catalogs).values()
        if (key := _rank(entry, words, memory_bytes)) is not None
    ]
    # the first of equal keys, in catalog order
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


def _rank(
    entry: DeviceEntry, words: set[str], memory_bytes: int | None
) -> tuple[int, int, int, float] | None:
    """How well ``entry`` fits a GPU named with ``words`` (lower is better; see
    :func:`match_gpu`), or None when it is not that GPU."""
    from hwadvisor.catalog.schema import DeviceKind

    if entry.kind is DeviceKind.CPU:
        return None  # GPUs and the GPUs of SoCs (Apple M-series, Jetson) only
    parts = entry.id.lower().split("-")
    required = [p for p in parts if p not in _FORMS and not _MEMORY.fullmatch(p)]
    if not required or not all(p in words for p in required):
        return None
    if (words & _TIERS) - set(parts):
        return None  # "Apple M2 Max" is not the base M2
    form = 0 if ("pcie" in parts) == ("pcie" in words) else 1
    sizes = [p for p in parts if _MEMORY.fullmatch(p)]
    named = 0 if not sizes or any(s in words for s in sizes) else 1
    gap = abs(entry.memory_bytes - (memory_bytes or entry.memory_bytes))
    # The entry naming more of the name's words is the more specific part: "H100 NVL"
    # is h100-nvl (h100 and nvl), not h100-sxm (h100 alone).
    return (form, named, -len(required), float(gap))
