"""Normalise raw kernel CPU flags into the feature set of the facts document (docs/json.md).

Features come from the flags the kernel prints (``grep flags /proc/cpuinfo`` on x86,
``grep Features /proc/cpuinfo`` on Arm), never from the model or microarchitecture name:
hypervisors mask flags, so a name can promise what the guest cannot use.
"""

from __future__ import annotations

from collections.abc import Iterable

from hwadvisor.models.facts import CpuFeatures

#: Feature field -> the kernel's x86 flag spelling (arch/x86/include/asm/cpufeatures.h).
X86_FLAGS: dict[str, str] = {
    "avx2": "avx2",
    "fma": "fma",
    "avx512f": "avx512f",
    "avx512_vnni": "avx512_vnni",
    "avx512_bf16": "avx512_bf16",
    "avx512_fp16": "avx512_fp16",
    "avx_vnni": "avx_vnni",
    "amx_tile": "amx_tile",
    "amx_bf16": "amx_bf16",
    "amx_int8": "amx_int8",
    "amx_fp16": "amx_fp16",
}

#: Feature field -> the kernel's arm64 hwcap spelling (arch/arm64/kernel/cpuinfo.c).
ARM_FLAGS: dict[str, str] = {
    "neon": "asimd",
    "sve": "sve",
    "sve2": "sve2",
    "sme": "sme",
    "i8mm": "i8mm",
    "bf16": "bf16",
}

AMX_NOTE = (
    "the OS must grant AMX per process via arch_prctl(ARCH_REQ_XCOMP_PERM); "
    "torch requests it itself"
)


def is_arm(architecture: str | None) -> bool:
    """Whether an architecture name (``uname -m``) is 64-bit Arm."""
    return (architecture or "").lower() in {"aarch64", "arm64", "armv8l", "armv8b"}


def normalise_features(flags: Iterable[str], architecture: str | None) -> CpuFeatures:
    """The normalised feature set of a flag list, for x86 or Arm.

    On Arm, ``fma`` is set with ``asimd``: fused multiply-add (FMLA) is part of every
    Armv8 Advanced SIMD unit, so the flag that says NEON is there also says FMA is.
    """
    present = set(flags)
    if is_arm(architecture):
        values = {field: spelling in present for field, spelling in ARM_FLAGS.items()}
        values["fma"] = "asimd" in present
    else:
        values = {field: spelling in present for field, spelling in X86_FLAGS.items()}
    return CpuFeatures(**values)


def amx_note(features: CpuFeatures) -> str | None:
    """The reminder that AMX is granted per process, when any AMX flag is present."""
    if features.amx_tile or features.amx_bf16 or features.amx_int8 or features.amx_fp16:
        return AMX_NOTE
    return None
