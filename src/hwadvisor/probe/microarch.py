"""Guess the microarchitecture and vendor from CPUID family/model or Arm MIDR fields.

The guess names the core design (``zen3``, ``sapphirerapids``, ``neoverse_v1``) so that a
person and the peak-FLOPs table can tell which execution units exist; it never decides
which instructions may run (that comes from the flags). Model numbers follow the vendors'
published CPUID tables (Intel SDM vol. 4 "model-specific registers" tables by
DisplayFamily_DisplayModel; AMD family 17h/19h/1Ah processor programming references) and
the Arm MIDR part numbers in each core's technical reference manual, the same sources
archspec's microarchitectures.json uses.
"""

from __future__ import annotations

_INTEL_FAMILY6: dict[int, str] = {
    26: "nehalem", 30: "nehalem", 31: "nehalem", 46: "nehalem",
    37: "westmere", 44: "westmere", 47: "westmere",
    42: "sandybridge", 45: "sandybridge",
    58: "ivybridge", 62: "ivybridge",
    60: "haswell", 63: "haswell", 69: "haswell", 70: "haswell",
    61: "broadwell", 71: "broadwell", 79: "broadwell", 86: "broadwell",
    78: "skylake", 94: "skylake", 142: "skylake", 158: "skylake", 165: "skylake",
    102: "cannonlake",
    106: "icelake_server", 108: "icelake_server", 125: "icelake", 126: "icelake",
    140: "tigerlake", 141: "tigerlake",
    143: "sapphirerapids", 207: "emeraldrapids", 173: "graniterapids", 174: "graniterapids",
    151: "alderlake", 154: "alderlake",
    183: "raptorlake", 186: "raptorlake", 191: "raptorlake",
    170: "meteorlake", 172: "meteorlake", 189: "lunarlake",
    197: "arrowlake", 198: "arrowlake",
}  # fmt: skip

# Arm MIDR: implementer -> (vendor name, {part -> (microarchitecture, marketing name)}).
_ARM_PARTS: dict[int, tuple[str, dict[int, tuple[str, str]]]] = {
    0x41: (
        "ARM",
        {
            0xD03: ("cortex_a53", "Cortex-A53"),
            0xD07: ("cortex_a57", "Cortex-A57"),
            0xD08: ("cortex_a72", "Cortex-A72"),
            0xD0B: ("cortex_a76", "Cortex-A76"),
            0xD0C: ("neoverse_n1", "Neoverse-N1"),
            0xD40: ("neoverse_v1", "Neoverse-V1"),
            0xD49: ("neoverse_n2", "Neoverse-N2"),
            0xD4F: ("neoverse_v2", "Neoverse-V2"),
            0xD83: ("neoverse_v3ae", "Neoverse-V3AE"),
            0xD84: ("neoverse_v3", "Neoverse-V3"),
            0xD8E: ("neoverse_n3", "Neoverse-N3"),
        },
    ),
    0x43: ("Cavium", {0x0AF: ("thunderx2", "ThunderX2")}),
    0x46: ("Fujitsu", {0x001: ("a64fx", "A64FX")}),
    0x48: ("HiSilicon", {0xD01: ("tsv110", "Kunpeng 920")}),
    0x4E: ("NVIDIA", {}),
    0x51: ("Qualcomm", {}),
    0x61: (
        "Apple",
        {
            0x022: ("m1", "Apple M1"),
            0x023: ("m1", "Apple M1"),
            0x024: ("m1", "Apple M1 Pro/Max"),
            0x025: ("m1", "Apple M1 Pro/Max"),
            0x028: ("m1", "Apple M1 Max"),
            0x029: ("m1", "Apple M1 Max"),
            0x032: ("m2", "Apple M2"),
            0x033: ("m2", "Apple M2"),
        },
    ),
    0xC0: ("Ampere", {0xAC3: ("ampere1", "AmpereOne"), 0xAC4: ("ampere1a", "AmpereOne A")}),
}

_X86_VENDORS = {"GenuineIntel": "Intel", "AuthenticAMD": "AMD", "HygonGenuine": "Hygon"}

#: Microarchitectures whose every part has AMX tile units (AMX-TILE, AMX-BF16, AMX-INT8;
#: Granite Rapids adds AMX-FP16): Intel Architecture Instruction Set Extensions and
#: Future Features Programming Reference (Intel document 319433, chapter 3, "Intel AMX"),
#: and the 4th, 5th and 6th generation Xeon Scalable product briefs (2023-2024). When
#: such a CPU shows no AMX flag, the hypervisor or an old kernel hides it.
AMX_MICROARCHS = frozenset({"sapphirerapids", "emeraldrapids", "graniterapids"})


def has_amx(microarch: str | None) -> bool:
    """Whether every CPU of this microarchitecture has AMX tile units."""
    return microarch in AMX_MICROARCHS


def x86_vendor(vendor_id: str | None) -> str | None:
    """Short vendor name of a CPUID vendor string (``GenuineIntel`` -> ``Intel``)."""
    if not vendor_id:
        return None
    return _X86_VENDORS.get(vendor_id, vendor_id)


def _amd_family19(model: int) -> str:
    # Family 19h mixes Zen 3 and Zen 4 by model range (AMD PPR for family 19h).
    if 0x10 <= model <= 0x1F or 0x60 <= model <= 0xAF:
        return "zen4"
    return "zen3"


def x86_microarch(
    vendor_id: str | None, family: int | None, model: int | None, stepping: int | None = None
) -> str | None:
    """Microarchitecture of an x86 CPU from CPUID family, model (and stepping), or None."""
    if family is None or model is None:
        return None
    if vendor_id == "GenuineIntel" and family == 6:
        if model == 85:
            # One model number, three server generations told apart by stepping.
            step = stepping or 0
            return "cooperlake" if step >= 10 else "cascadelake" if step >= 5 else "skylake_avx512"
        return _INTEL_FAMILY6.get(model)
    if vendor_id in ("AuthenticAMD", "HygonGenuine"):
        if family == 0x10:
            return "k10"
        if family == 0x15:
            if model < 0x02:
                return "bulldozer"
            if model < 0x30:
                return "piledriver"
            return "steamroller" if model < 0x60 else "excavator"
        if family == 0x17:
            return "zen" if model < 0x30 else "zen2"
        if family == 0x18:
            return "zen"  # Hygon Dhyana is a Zen 1 derivative
        if family == 0x19:
            return _amd_family19(model)
        if family == 0x1A:
            return "zen5"
    return None


def arm_vendor(implementer: int | None) -> str | None:
    """Vendor name of an Arm MIDR implementer code (``0x41`` -> ``ARM``)."""
    if implementer is None:
        return None
    entry = _ARM_PARTS.get(implementer)
    return entry[0] if entry else f"implementer 0x{implementer:02x}"


def arm_core(implementer: int | None, part: int | None) -> tuple[str, str] | None:
    """(microarchitecture, marketing name) of an Arm core from its MIDR fields."""
    if implementer is None or part is None:
        return None
    entry = _ARM_PARTS.get(implementer)
    if entry is None:
        return None
    return entry[1].get(part)
