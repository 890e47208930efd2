"""The theoretical peak rules: FLOPs/cycle by ISA, cores capped by physical cores."""

from __future__ import annotations

import dataclasses

from hwadvisor.models.facts import CpuFeatures
from hwadvisor.probe.cpu_peak import PeakInputs, peak_gflops

FEATURE_NAMES = {f.name for f in dataclasses.fields(CpuFeatures)}


def inputs(flags: set[str], **kw: object) -> PeakInputs:
    """Peak inputs for an x86 CPU with ``flags`` (features derived from them)."""
    features = CpuFeatures(**{f: True for f in flags if f in FEATURE_NAMES})
    base: dict[str, object] = {
        "features": features,
        "flags": frozenset(flags),
        "arm": False,
        "microarch": None,
        "model": None,
        "usable_cores": 4,
        "physical_cores": 4,
        "max_mhz": None,
        "base_mhz": 2000.0,
    }
    base.update(kw)
    return PeakInputs(**base)  # type: ignore[arg-type]


def test_avx2_fma_is_32_flops_per_cycle() -> None:
    peak = peak_gflops(inputs({"sse2", "avx", "avx2", "fma"}))
    assert peak.fp32 == 4 * 2.0 * 32
    assert peak.bf16 == peak.fp32  # no native bf16 on AVX2
    assert peak.int8 == 2 * peak.fp32
    assert peak.basis is not None and "base" in peak.basis


def test_max_clock_is_preferred_and_smt_does_not_double() -> None:
    peak = peak_gflops(
        inputs({"sse2", "avx", "avx2", "fma"}, usable_cores=8, physical_cores=4, max_mhz=3000.0)
    )
    assert peak.fp32 == 4 * 3.0 * 32


def test_two_fma_avx512_and_amx() -> None:
    flags = {
        "sse2",
        "avx",
        "avx2",
        "fma",
        "avx512f",
        "avx512_bf16",
        "avx512_vnni",
        "amx_bf16",
        "amx_int8",
        "amx_tile",
    }
    peak = peak_gflops(inputs(flags, microarch="sapphirerapids"))
    assert peak.fp32 == 4 * 2.0 * 64
    assert peak.bf16 == 4 * 2.0 * 1024
    assert peak.int8 == 4 * 2.0 * 2048


def test_one_fma_avx512_with_bf16_and_vnni() -> None:
    flags = {"sse2", "avx", "avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni"}
    peak = peak_gflops(inputs(flags, microarch="zen4", model="AMD EPYC 9654"))
    assert peak.fp32 == 4 * 2.0 * 32
    assert peak.bf16 == 2 * peak.fp32
    assert peak.int8 == 4 * peak.fp32


def test_gold_6_and_platinum_names_mean_two_fma() -> None:
    flags = {"sse2", "avx2", "fma", "avx512f"}
    gold6 = peak_gflops(
        inputs(flags, microarch="skylake_avx512", model="Intel(R) Xeon(R) Gold 6132 CPU")
    )
    silver = peak_gflops(
        inputs(flags, microarch="skylake_avx512", model="Intel(R) Xeon(R) Silver 4114 CPU")
    )
    assert gold6.fp32 == 2 * (silver.fp32 or 0)


def test_amx_flags_mean_two_fma_units_when_the_model_is_masked() -> None:
    # The project's Xeon guest: a generic model name, a model number no table maps to a
    # microarchitecture, and the AMX flags. Its bench measured 330 GFLOP/s fp32 on 2 cores
    # at 2.6 GHz: two FMA units, not the one a bare AVX-512 CPU is assumed to have.
    flags = {"sse2", "avx2", "fma", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8"}
    guest = peak_gflops(inputs(flags, model="Intel(R) Xeon(R) Processor", usable_cores=2,
                               physical_cores=2, base_mhz=2599.998))  # fmt: skip
    assert guest.fp32 == 332.8 and guest.basis is not None and "two FMA" in guest.basis
    bare = peak_gflops(inputs(flags - {"amx_tile", "amx_bf16", "amx_int8"}, usable_cores=2,
                              physical_cores=2, base_mhz=2599.998))  # fmt: skip
    assert bare.fp32 == 166.4


def test_older_x86() -> None:
    assert peak_gflops(inputs({"sse2", "avx"})).fp32 == 4 * 2.0 * 16
    assert peak_gflops(inputs({"sse2"})).fp32 == 4 * 2.0 * 8
    zen1 = peak_gflops(inputs({"sse2", "avx", "avx2", "fma"}, microarch="zen"))
    assert zen1.fp32 == 4 * 2.0 * 16


def test_arm_neon_sve_and_int8() -> None:
    def arm(flags: set[str], microarch: str | None) -> PeakInputs:
        feats = CpuFeatures(neon="asimd" in flags, i8mm="i8mm" in flags, bf16="bf16" in flags)
        return inputs(flags, arm=True, microarch=microarch, features=feats)

    n1 = peak_gflops(arm({"asimd", "asimddp"}, "neoverse_n1"))
    assert n1.fp32 == 4 * 2.0 * 16 and n1.bf16 == n1.fp32 and n1.int8 == 4 * n1.fp32
    v1 = peak_gflops(arm({"asimd", "sve", "bf16", "i8mm"}, "neoverse_v1"))
    assert v1.fp32 == 4 * 2.0 * 32 and v1.bf16 == 2 * v1.fp32 and v1.int8 == 8 * v1.fp32


def test_unknown_inputs_give_no_peak_with_a_reason() -> None:
    for peak in (
        peak_gflops(inputs({"avx2", "fma", "sse2"}, base_mhz=None)),
        peak_gflops(inputs({"avx2", "fma", "sse2"}, usable_cores=None)),
        peak_gflops(inputs(set())),  # POWER / RISC-V: no x86 or Arm flags
    ):
        assert peak.fp32 is None and peak.bf16 is None and peak.int8 is None
        assert peak.basis and peak.basis.startswith("unknown")
