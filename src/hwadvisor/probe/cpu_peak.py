"""Theoretical peak GFLOP/s of the usable cores: cores × clock × FLOPs per cycle.

FLOPs per cycle per core (one FMA = 2 FLOPs) follow the vendors' optimization manuals
(Intel 64 and IA-32 Architectures Optimization Reference Manual: FMA ports per core and
AMX tile throughput; AMD's Software Optimization Guide for Zen 4: AVX-512 on 256-bit
units):
AVX2 with two FMA units (Haswell and later, Zen 2/3) 32 fp32; AVX-512 with one FMA unit
(Xeon Silver/Bronze, client Ice/Tiger Lake, Zen 4) 32; AVX-512 with two FMA units (Xeon
Gold 6xxx/Platinum, Ice Lake-SP, Sapphire Rapids and so any CPU with AMX) 64; AMX 1024
bf16 and 2048 int8 per cycle. The rest are rules of this module, written in ``basis`` so a person can check:

- fp32 on cores outside those cases: AVX without FMA (Sandy/Ivy Bridge: one 256-bit add and
  one 256-bit multiply port) 16; Zen 1 (two 128-bit FMA pipes) 16; SSE only 8. Zen 5 is
  counted at 32 like Zen 4, a conservative floor until a sourced figure is in the table.
- Arm: NEON with two 128-bit FMA pipes 16 (Neoverse N1/N2, Cortex-A7x, Apple cores
  assumed at this floor); Neoverse V1 (two 256-bit SVE pipes) and V2/V3 (four 128-bit
  pipes) 32; A64FX (two 512-bit SVE pipes) 64 — from the Arm Neoverse V1/V2 software
  optimization guides and the A64FX microarchitecture manual.
- bf16: AMX 1024; ``avx512_bf16`` (VDPBF16PS does two products per fp32 lane) or Arm
  ``bf16`` (BFDOT) 2 × fp32; otherwise no native bf16 math, counted at the fp32 rate.
- int8 (ops, a multiply-accumulate counted as 2): AMX 2048; AVX-512 VNNI, AVX-VNNI or
  Arm dot product (VPDPBUSD/SDOT: four int8 products per 32-bit lane) 4 × fp32; Arm
  ``i8mm`` (SMMLA) 8 × fp32; otherwise 2 × fp32 (VPMADDUBSW + VPMADDWD pairs).
- Cores: the usable cores, but no more than the physical cores (SMT siblings share the
  vector units). Clock: the maximum (turbo) clock when known, else the base clock.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.models.facts import CpuFeatures, PeakGflops

# Microarchitectures whose AVX-512 parts have two 512-bit FMA units on every SKU.
_TWO_FMA_512 = {"icelake_server", "sapphirerapids", "emeraldrapids", "graniterapids"}
_ARM_FP32: dict[str, int] = {
    "neoverse_v1": 32,
    "neoverse_v2": 32,
    "neoverse_v3": 32,
    "neoverse_v3ae": 32,
    "a64fx": 64,
}


@dataclass(frozen=True)
class PeakInputs:
    """What the peak needs to know about the CPU."""

    features: CpuFeatures
    flags: frozenset[str]
    arm: bool
    microarch: str | None
    model: str | None
    usable_cores: int | None
    physical_cores: int | None
    max_mhz: float | None
    base_mhz: float | None


def _x86_fp32(inp: PeakInputs) -> tuple[int, str]:
    model = inp.model or ""
    if inp.features.avx512f:
        two_fma = inp.microarch in _TWO_FMA_512 or "Platinum" in model or "Gold 6" in model
        if two_fma or inp.features.amx_tile:
            # AMX ships only on Sapphire Rapids and later Xeons, every SKU with two FMA units
            # (_TWO_FMA_512): a guest that masks the model (family 6 model 167, "Intel(R)
            # Xeon(R) Processor") still shows the AMX flags, and measured 330 GFLOP/s fp32 on
            # 2 cores at 2.6 GHz, 64 FLOPs a cycle.
            return 64, "AVX-512 with two FMA units: 64 fp32 FLOPs/cycle"
        return 32, "AVX-512 with one FMA unit assumed: 32 fp32 FLOPs/cycle"
    if inp.features.avx2 and inp.features.fma:
        if inp.microarch == "zen":
            return 16, "Zen 1 AVX2 on two 128-bit FMA pipes: 16 fp32 FLOPs/cycle"
        return 32, "AVX2 with two FMA units: 32 fp32 FLOPs/cycle"
    if "avx" in inp.flags:
        return 16, "AVX without FMA (one add + one multiply port): 16 fp32 FLOPs/cycle"
    return 8, "SSE only: 8 fp32 FLOPs/cycle"


def _arm_fp32(inp: PeakInputs) -> tuple[int, str]:
    fpc = _ARM_FP32.get(inp.microarch or "")
    if fpc is not None:
        return fpc, f"{inp.microarch}: {fpc} fp32 FLOPs/cycle"
    return 16, "NEON on two 128-bit FMA pipes assumed: 16 fp32 FLOPs/cycle"


def _bf16(inp: PeakInputs, fp32: int) -> tuple[int, str]:
    f = inp.features
    if f.amx_bf16:
        return 1024, "bf16 on AMX: 1024 FLOPs/cycle"
    if f.avx512_bf16 or (inp.arm and f.bf16):
        return 2 * fp32, "native bf16 dot product: 2x fp32"
    return fp32, "no native bf16 math: at best the fp32 rate"


def _int8(inp: PeakInputs, fp32: int) -> tuple[int, str]:
    f = inp.features
    if f.amx_int8:
        return 2048, "int8 on AMX: 2048 ops/cycle"
    if inp.arm and f.i8mm:
        return 8 * fp32, "int8 matrix multiply (i8mm): 8x fp32"
    if f.avx512_vnni or f.avx_vnni or (inp.arm and "asimddp" in inp.flags):
        return 4 * fp32, "int8 dot product (VNNI/SDOT): 4x fp32"
    return 2 * fp32, "no int8 dot product: 2x fp32"


def peak_gflops(inp: PeakInputs) -> PeakGflops:
    """The theoretical peak for fp32, bf16 and int8, with the rules used in ``basis``.

    Returns an empty peak (all None) with a reason in ``basis`` when the core count or
    the clock is unknown, or for an architecture without a FLOPs table (POWER, RISC-V).
    """
    cores = inp.usable_cores
    if cores is not None and inp.physical_cores is not None:
        cores = min(cores, inp.physical_cores)
    mhz = inp.max_mhz or inp.base_mhz
    if not cores or not mhz:
        return PeakGflops(basis="unknown: core count or clock not found")
    if inp.arm:
        fp32, why = _arm_fp32(inp)
    elif inp.flags & {"sse2", "avx", "avx2"}:
        fp32, why = _x86_fp32(inp)
    else:
        return PeakGflops(basis="unknown: no FLOPs/cycle table for this architecture")
    bf16, why_bf16 = _bf16(inp, fp32)
    int8, why_int8 = _int8(inp, fp32)
    ghz = mhz / 1000.0
    clock = "max" if inp.max_mhz else "base"
    basis = f"{cores} cores x {ghz:.2f} GHz ({clock}) x FLOPs/cycle; {why}; {why_bf16}; {why_int8}"
    return PeakGflops(
        fp32=round(cores * ghz * fp32, 1),
        bf16=round(cores * ghz * bf16, 1),
        int8=round(cores * ghz * int8, 1),
        basis=basis,
    )
