"""Flag parsing over every recorded cpuinfo file in ``tests/data/cpuinfo`` (from archspec)."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.probe.cpu_features import (
    AMX_NOTE,
    ARM_FLAGS,
    X86_FLAGS,
    amx_note,
    normalise_features,
)
from hwadvisor.probe.cpuinfo_parse import first_value, flag_set, parse_cpuinfo, parse_int
from hwadvisor.probe.microarch import arm_core, x86_microarch

CPUINFO = Path(__file__).resolve().parents[1] / "data" / "cpuinfo"
FILES = sorted(p for p in CPUINFO.glob("linux-*"))

# File names carry archspec's name for the machine; where it differs from this probe's
# guess, the reason is written here.
NAME_DIFFERS = {
    "linux-rhel7-x86_64_v3": "haswell",  # a generic ISA level name for a Xeon E5 v3
    "linux-ubuntu24.04-alderlake": "arrowlake",  # the block is a Core Ultra 9 285 (model 198)
    "linux-ubuntu26.04-arrowlake_s": "arrowlake",
}


def _arch(blocks: list[dict[str, str]]) -> str | None:
    if first_value(blocks, "vendor_id"):
        return "x86_64"
    if first_value(blocks, "CPU implementer"):
        return "aarch64"
    return None


def test_every_shared_file_is_here() -> None:
    assert len(FILES) >= 40


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_features_follow_the_flags_line(path: Path) -> None:
    blocks = parse_cpuinfo(path.read_text(encoding="utf-8"))
    assert blocks, "no processor block"
    arch = _arch(blocks)
    flags = flag_set(blocks)
    features = normalise_features(flags, arch)
    table = ARM_FLAGS if arch == "aarch64" else X86_FLAGS
    for field, spelling in table.items():
        assert getattr(features, field) == (spelling in flags), field
    if arch == "x86_64":
        assert not features.neon and not features.sve
    if arch == "aarch64":
        assert not features.avx2 and not features.amx_tile
        assert features.fma == ("asimd" in flags)
    assert (amx_note(features) == AMX_NOTE) == any(f.startswith("amx_") for f in flags)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_microarchitecture_guess_matches_the_file_name(path: Path) -> None:
    blocks = parse_cpuinfo(path.read_text(encoding="utf-8"))
    arch = _arch(blocks)
    if arch == "x86_64":
        guess = x86_microarch(
            first_value(blocks, "vendor_id"),
            parse_int(first_value(blocks, "cpu family")),
            parse_int(first_value(blocks, "model")),
            parse_int(first_value(blocks, "stepping")),
        )
    elif arch == "aarch64":
        core = arm_core(
            parse_int(first_value(blocks, "CPU implementer"), 0),
            parse_int(first_value(blocks, "CPU part"), 0),
        )
        guess = core[0] if core else None
    else:
        pytest.skip("POWER and RISC-V have no microarchitecture table")
    wanted = NAME_DIFFERS.get(path.name, path.name.rsplit("-", 1)[1])
    assert guess == wanted


def test_sapphire_rapids_has_amx_and_zen3_has_not() -> None:
    spr = flag_set(parse_cpuinfo((CPUINFO / "linux-unknown-sapphirerapids").read_text()))
    zen3 = flag_set(parse_cpuinfo((CPUINFO / "linux-ubuntu20.04-zen3").read_text()))
    f_spr = normalise_features(spr, "x86_64")
    f_zen3 = normalise_features(zen3, "x86_64")
    assert f_spr.amx_tile and f_spr.amx_bf16 and f_spr.amx_int8 and f_spr.avx512_bf16
    assert f_zen3.avx2 and not f_zen3.avx512f and not f_zen3.amx_tile


def test_arm_sve_bf16_i8mm_spellings() -> None:
    v1 = flag_set(parse_cpuinfo((CPUINFO / "linux-amazon-neoverse_v1").read_text()))
    f = normalise_features(v1, "aarch64")
    assert f.neon and f.sve and f.i8mm and f.bf16 and not f.sve2
    # svebf16 / svei8mm are separate hwcaps and must not be mistaken for the plain ones.
    only_sve_variants = normalise_features(["asimd", "svebf16", "svei8mm"], "aarch64")
    assert not only_sve_variants.bf16 and not only_sve_variants.i8mm
