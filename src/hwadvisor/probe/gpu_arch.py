"""GPU architecture names and tensor-core data types, from an NVIDIA compute capability or an
AMD gfx target.

Pure tables: the probe reads the capability (``nvidia-smi --query-gpu=compute_cap``) or the
gfx target (``rocminfo | grep gfx``) and asks here what it means. Sources: NVIDIA's CUDA
programming guide (compute capabilities and per-generation tensor-core types) and AMD's
ROCm hardware-specification tables (gfx target per Instinct / Radeon generation).
"""

from __future__ import annotations

import re

from hwadvisor.models.facts import GpuSupports

# (major, minor) -> name. A minor not listed takes its major's entry (7.2 Xavier is Volta).
_NVIDIA_ARCH: dict[tuple[int, int | None], str] = {
    (3, None): "Kepler",
    (5, None): "Maxwell",
    (6, None): "Pascal",
    (7, None): "Volta",
    (7, 5): "Turing",
    (8, None): "Ampere",
    (8, 9): "Ada Lovelace",
    (9, None): "Hopper",
    (10, None): "Blackwell",
    (11, None): "Blackwell",
    (12, None): "Blackwell",
}

_CC_RE = re.compile(r"^\s*(\d+)\.(\d+)\s*$")


def parse_compute_capability(text: object) -> tuple[int, int] | None:
    """``"8.6"`` -> ``(8, 6)``; None for anything else (a number or a list included)."""
    if not isinstance(text, str):
        return None
    m = _CC_RE.match(text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def nvidia_architecture(cc: tuple[int, int] | None) -> str | None:
    """Architecture name of a compute capability, or None when unknown."""
    if cc is None:
        return None
    return _NVIDIA_ARCH.get(cc) or _NVIDIA_ARCH.get((cc[0], None))


def nvidia_supports(cc: tuple[int, int] | None) -> GpuSupports:
    """Tensor-core data types of a compute capability.

    Volta (7.0) brought FP16 tensor cores; Turing (7.5) added INT8; Ampere (8.x) BF16 and
    TF32; Ada (8.9) and Hopper (9.0) FP8; Blackwell (10.x, 12.x) keeps all of them. Pascal
    and older have no tensor cores. A capability newer than this table is assumed to keep
    every type of the newest known generation (each generation so far has).
    """
    if cc is None:
        return GpuSupports()
    return GpuSupports(
        fp16=cc >= (7, 0),
        bf16=cc[0] >= 8,
        tf32=cc[0] >= 8,
        fp8=cc >= (8, 9),
        int8_tensor=cc >= (7, 5),
    )


# gfx target -> (architecture, fp16, bf16, tf32, fp8, int8) matrix-core types.
# CDNA3 (MI300) runs TF32 ("XF32") and FP8 matrix ops; CDNA2/1 no TF32 or FP8; RDNA3 WMMA
# runs FP16/BF16/INT8, RDNA4 adds FP8; GCN (gfx906) and RDNA1/2 have no matrix cores.
_AMD_GFX: dict[str, tuple[str, bool, bool, bool, bool, bool]] = {
    "gfx950": ("CDNA 4", True, True, True, True, True),
    "gfx942": ("CDNA 3", True, True, True, True, True),
    "gfx941": ("CDNA 3", True, True, True, True, True),
    "gfx940": ("CDNA 3", True, True, True, True, True),
    "gfx90a": ("CDNA 2", True, True, False, False, True),
    "gfx908": ("CDNA", True, True, False, False, True),
    "gfx906": ("GCN 5 (Vega 20)", False, False, False, False, False),
    "gfx900": ("GCN 5 (Vega 10)", False, False, False, False, False),
}
_AMD_FAMILY: list[tuple[str, tuple[str, bool, bool, bool, bool, bool]]] = [
    ("gfx12", ("RDNA 4", True, True, False, True, True)),
    ("gfx11", ("RDNA 3", True, True, False, False, True)),
    ("gfx103", ("RDNA 2", False, False, False, False, False)),
    ("gfx101", ("RDNA 1", False, False, False, False, False)),
]


def gfx_name(target_version: int) -> str | None:
    """KFD ``gfx_target_version`` (e.g. 90402) -> gfx target (``gfx942``).

    The number is major*10000 + minor*100 + stepping; the name spells minor and stepping
    in hex (90010 -> ``gfx90a``). Zero (a CPU node) gives None.
    """
    if target_version <= 0:
        return None
    major, rest = divmod(target_version, 10000)
    minor, stepping = divmod(rest, 100)
    return f"gfx{major}{minor:x}{stepping:x}"


def _amd_entry(gfx: str) -> tuple[str, bool, bool, bool, bool, bool] | None:
    if gfx in _AMD_GFX:
        return _AMD_GFX[gfx]
    return next((entry for prefix, entry in _AMD_FAMILY if gfx.startswith(prefix)), None)


def amd_architecture(gfx: str | None) -> str | None:
    """Architecture name of a gfx target, or None when unknown."""
    entry = _amd_entry(gfx) if gfx else None
    return entry[0] if entry else None


def amd_supports(gfx: str | None) -> GpuSupports:
    """Matrix-core data types of a gfx target (all unknown for a target not in the table)."""
    entry = _amd_entry(gfx) if gfx else None
    if entry is None:
        return GpuSupports()
    _, fp16, bf16, tf32, fp8, int8 = entry
    return GpuSupports(fp16=fp16, bf16=bf16, tf32=tf32, fp8=fp8, int8_tensor=int8)
