"""Accuracy of the CPU estimate without a bench ("theoretical"): published CPU figures.

A machine's facts without bench figures give its CPU a time model from the theoretical
peak (an assumed GEMM efficiency) and a stated memory bandwidth (the catalog's entry for
the processor, else the default memory of its class: laptop, desktop, workstation,
server, Arm board, Apple; :mod:`hwadvisor.estimate.timing.cpu_memory`). This benchmark
builds the facts each published machine's probe would give (its CPU name, cores, clocks
and flags through the probe's own peak rules; nothing about its DIMMs, which the facts do
not carry) and prices the published job with them, nothing run:

- **llama.cpp decode** on CPUs (batch 1, tokens/s of ``tg128`` or ``main``'s eval speed),
  through the serving path (``here_target`` -> ``decode_step_seconds``);
- **eager PyTorch inference latency** (BERT fp32, batch 1) through the step-time path
  (``estimate_workload(..., on=["here"])``).

None of the rows set any constant of the model (the one measured constant, the
bandwidth a core draws, comes from the project's own recorded bench). Each row prints
the estimate beside the published figure; the band line (measured / estimated time over
all rows) is what ``catalog/data/error_bands.yaml`` carries for ``cpu_theoretical``.

    python benchmarks/cpu_theoretical.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from catalog_cpu_accuracy import PUBLISHED as BERT_ROWS  # the published BERT latencies
from catalog_cpu_accuracy import PUBLISHED_SOURCE as BERT_SOURCE

from hwadvisor.estimate import build_workload, estimate_workload
from hwadvisor.estimate.llm.target import here_target
from hwadvisor.estimate.timing.cpu_memory import stated_memory_bandwidth
from hwadvisor.llm import find_engine, find_format, resolve_model
from hwadvisor.llm.serving import decode_step_seconds
from hwadvisor.models.facts import Facts, Host, Memory
from hwadvisor.probe.cpu_build import finish_cpu

NORMIE = (
    "brand-o/normiebench issue #{} (2026-03, llama-bench, Llama 3.1 8B Q4_K_M, CPU backend, tg128)"
)
LCPP34 = "ggml-org/llama.cpp issue #34, comment of 2023-08-12 (13900K, DDR5-6400, 7B, gen 128)"
AVX2 = ("sse2", "avx", "avx2", "fma")


@dataclass(frozen=True)
class Machine:
    """What a probe of a published machine reports (clocks in MHz)."""

    model: str
    microarch: str | None
    physical: int
    logical: int
    base_mhz: float | None
    max_mhz: float | None
    flags: tuple[str, ...]
    memory_gb: float
    vm: bool = False
    arm: bool = False


def facts_of(m: Machine, threads: int | None = None) -> Facts:
    """The facts a probe of ``m`` would give, on ``threads`` usable cores (all by default)."""
    usable = threads or m.logical
    cpu = finish_cpu(
        {
            "vendor": "ARM" if m.arm else "AMD" if "AMD" in m.model else "Intel",
            "model": m.model,
            "architecture": "aarch64" if m.arm else "x86_64",
            "microarchitecture": m.microarch,
            "sockets": 1,
            "physical_cores": min(m.physical, usable),
            "logical_cores": m.logical,
            "usable_cores": usable,
            "base_mhz": m.base_mhz,
            "max_mhz": m.max_mhz,
            "flags": list(m.flags),
        }
    )
    return Facts(
        host=Host(virtualization="kvm" if m.vm else None),
        cpu=cpu,
        memory=Memory(total_bytes=int(m.memory_gb * 1e9)),
    )


# Clocks and cores: the vendors' product pages (Intel ARK, AMD); microarchitecture: what the
# probe's CPUID table names for the part's family and model.
I5_9500 = Machine("Intel(R) Core(TM) i5-9500 CPU @ 3.00GHz", "skylake", 6, 6, 3000, 4400, AVX2, 16)
I5_1135G7 = Machine("11th Gen Intel(R) Core(TM) i5-1135G7 @ 2.40GHz", "tigerlake", 4, 8, 2400, 4200,
                    (*AVX2, "avx512f", "avx512_vnni"), 16)  # fmt: skip
N100 = Machine("Intel(R) N100", None, 4, 4, 800, 3400, AVX2, 16)
I7_7820HQ = Machine(
    "Intel(R) Core(TM) i7-7820HQ CPU @ 2.90GHz", "skylake", 4, 8, 2900, 3900, AVX2, 40
)
I7_8550U = Machine(
    "Intel(R) Core(TM) i7-8550U CPU @ 1.80GHz", "skylake", 4, 8, 1800, 4000, AVX2, 16
)
I3_14100 = Machine(
    "Intel(R) Core(TM) i3-14100", "raptorlake", 4, 8, 3500, 4700, (*AVX2, "avx_vnni"), 16
)
TR_3970X = Machine(
    "AMD Ryzen Threadripper 3970X 32-Core Processor", "zen2", 32, 64, 3700, 4500, AVX2, 64
)
# The 13900K's 8 performance cores (the rows run 4 and 8 threads on them).
I9_13900K = Machine("13th Gen Intel(R) Core(TM) i9-13900K", "raptorlake", 24, 32, 3000, 5800,
                    (*AVX2, "avx_vnni"), 64)  # fmt: skip
R7_8840U = Machine("AMD Ryzen 7 8840U w/ Radeon 780M Graphics", "zen4", 8, 16, 3300, 5100,
                   (*AVX2, "avx512f", "avx512_vnni", "avx512_bf16"), 30)  # fmt: skip
# Raspberry Pi 5: BCM2712, 4 x Cortex-A76 at 2.4 GHz (Raspberry Pi product brief).
PI5 = Machine(
    "Cortex-A76", "cortex_a76", 4, 4, 1500, 2400, ("fp", "asimd", "asimddp"), 16, arm=True
)
XEON_8380 = Machine("Intel(R) Xeon(R) Platinum 8380 CPU @ 2.30GHz", "icelake_server", 40, 80, 2300,
                    3400, (*AVX2, "avx512f", "avx512_vnni"), 256)  # fmt: skip
XEON_8375C = Machine("Intel(R) Xeon(R) Platinum 8375C CPU @ 2.90GHz", "icelake_server", 4, 8, 2900,
                     None, (*AVX2, "avx512f", "avx512_vnni"), 16, vm=True)  # fmt: skip

PI = (
    "geerlingguy/ai-benchmarks issue #7 (2025-01-09, Ollama on a Raspberry Pi 5 16GB, "
    "Test 2: no NUMA/SDRAM tweaks; Ollama's default weights: Q4_K_M for llama3.1:8b, Q4_0 "
    "for llama2:13b)"
)
#: (label, machine, threads or None for the probe's usable cores, model, weights,
#: published tokens/s, source). llama-bench's default threads are the physical cores.
#: Rows of the first run (before the Intel AVX-512 clock and the products' size curve were
#: taken from the catalog path) come first; ``HELD_OUT_AFTER`` names the rows added after
#: those changes, never seen before them.
DECODE: list[tuple[str, Machine, int | None, str, str, float, str]] = [
    ("i5-9500 desktop", I5_9500, None, "llama-3-8b", "q4_k_m", 6.51, NORMIE.format(34)),
    ("i5-1135G7 laptop", I5_1135G7, None, "llama-3-8b", "q4_k_m", 6.86, NORMIE.format(46)),
    ("N100 mini PC", N100, None, "llama-3-8b", "q4_k_m", 3.01, NORMIE.format(38)),
    ("i7-7820HQ laptop", I7_7820HQ, None, "llama-3-8b", "q4_k_m", 5.62, NORMIE.format(42)),
    ("i7-8550U laptop", I7_8550U, None, "llama-3-8b", "q4_k_m", (4.42 + 4.70) / 2,
     NORMIE.format("41 and #43, two runs,") ),
    ("i3-14100 desktop", I3_14100, None, "llama-3-8b", "q4_k_m", 9.40, NORMIE.format(36)),
    ("Threadripper 3970X", TR_3970X, None, "llama-3-8b", "q4_k_m", 16.78, NORMIE.format(52)),
    ("i9-13900K 4 threads", I9_13900K, 4, "llama-7b", "q4_0", 12.65, LCPP34),
    ("i9-13900K 8 threads", I9_13900K, 8, "llama-7b", "q4_0", 18.27, LCPP34),
    ("Ryzen 7 8840U laptop", R7_8840U, None, "llama-3-8b", "q4_k_m", 9.63, NORMIE.format(8)),
    ("Raspberry Pi 5 8B", PI5, None, "llama-3-8b", "q4_k_m", 2.05, PI),
    ("Raspberry Pi 5 13B", PI5, None, "llama-2-13b", "q4_0", 1.35, PI),
]  # fmt: skip
HELD_OUT_AFTER = {"Ryzen 7 8840U laptop", "Raspberry Pi 5 8B", "Raspberry Pi 5 13B"}


def decode_rows() -> list[dict[str, Any]]:
    """Each published decode figure beside the estimate from its machine's facts."""
    engine = find_engine("llama.cpp")
    out = []
    for label, machine, threads, model, quant, published, source in DECODE:
        facts = facts_of(machine, threads)
        target = here_target(facts, None)
        assert target.spec is not None, label
        step, _ = decode_step_seconds(
            resolve_model(model).arch, find_format(quant), engine, target.spec, context=64
        )
        found = stated_memory_bandwidth(facts)
        out.append({"kind": "llama.cpp decode", "label": label, "unit": "tok/s",
                    "published": published, "estimate": 1 / step,
                    "ratio": (1 / step) / published,  # measured time / estimated time
                    "bandwidth": found.text if found else None,
                    "cpu_class": found.cpu_class.value if found else None,
                    "band_class": target.band_class, "source": source})  # fmt: skip
    return out


def bert_rows() -> list[dict[str, Any]]:
    """The published BERT latencies of the catalog CPU benchmark, priced "here" from the
    facts of the machine they ran on (Xeon Platinum 8380 bare metal at 1-40 cores, a
    c6i.2xlarge guest with 4 cores / 8 vCPUs of a Xeon Platinum 8375C)."""
    out = []
    for label, ident, cores, model, seq, batch, ms in BERT_ROWS:
        machine = XEON_8380 if ident == "xeon-8380" else XEON_8375C
        threads = cores if ident == "xeon-8380" else machine.logical
        facts = facts_of(machine, threads)
        wl = build_workload(model=model, task="infer", batch_size=batch, seq_len=seq, precision="fp32")  # fmt: skip
        est = estimate_workload(wl, facts=facts, bench=None, on=["here"]).estimates[0]
        band = est.time_band_s.band_class if est.time_band_s else None
        estimate = (est.step_time_s or float("nan")) * 1e3
        found = stated_memory_bandwidth(facts)
        out.append({"kind": "BERT latency", "label": label, "unit": "ms", "published": ms,
                    "estimate": estimate, "ratio": ms / estimate,
                    "bandwidth": found.text if found else None,
                    "cpu_class": found.cpu_class.value if found else None,
                    "band_class": band, "source": BERT_SOURCE})  # fmt: skip
    return out


ROOT = Path(__file__).resolve().parent.parent
RECORDED = ("xeon-amx-kvm", "recorded-xeon-amx-kvm.json")


def recorded_parts() -> list[str]:
    """The theoretical model's parts beside the recorded bench of the machine it was
    recorded on (tests/data/hosts/xeon-amx-kvm, tests/data/bench/recorded-xeon-amx-kvm.json):
    the bandwidth (which set the bandwidth a core draws, so not a check of it) and the
    fp32 product rate at 2048."""
    from hwadvisor.estimate.timing.cpu import here_model
    from hwadvisor.models.bench import BenchReport
    from hwadvisor.models.workload import Precision

    host, bench_file = RECORDED
    raw = json.loads((ROOT / "tests/data/hosts" / host / "expected.json").read_text())
    facts = Facts.model_validate(raw)
    bench = BenchReport.model_validate_json((ROOT / "tests/data/bench" / bench_file).read_text())
    rates = here_model(facts, None, Precision.FP32)
    triad = max(r.value for r in bench.results if r.kernel == "triad")
    matmul = max(r.value for r in bench.results if r.kernel == "matmul" and r.dtype == "fp32")
    product = (rates.gemm(2048.0) or 0.0) / 1e9
    return [
        f"{host}: bandwidth {(rates.bandwidth or 0) / 1e9:.1f} GB/s stated, triad {triad:.1f} "
        "GB/s recorded (this figure set the bandwidth a core draws)",
        f"{host}: fp32 product at 2048 {product:.0f} GFLOP/s stated, {matmul:.0f} recorded "
        f"({product / matmul - 1:+.0%})",
    ]


def summary(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Median and worst |error| of the estimate, and the band of measured / estimated time."""
    errors = [abs(r["estimate"] / r["published"] - 1) for r in rows]
    ratios = [r["ratio"] for r in rows]
    return {"n": len(rows), "median_error": statistics.median(errors), "worst_error": max(errors),
            "low_ratio": min(ratios), "high_ratio": max(ratios)}  # fmt: skip


def main() -> int:
    """Print every row, each section's errors and the band over all rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sections = {"llama.cpp decode": decode_rows(), "BERT latency": bert_rows()}
    for name, rows in sections.items():
        print(f"\n{name}")
        print(f"{'machine':22s} {'published':>10s} {'estimate':>10s} {'error':>7s}  class")
        for r in rows:
            err = r["estimate"] / r["published"] - 1
            print(f"{r['label']:22s} {r['published']:7.2f}{r['unit']:>3s} {r['estimate']:7.2f}"
                  f"{r['unit']:>3s} {err:+7.1%}  {r['cpu_class']}: {r['bandwidth']}")  # fmt: skip
        s = summary(rows)
        print(f"median |error| {s['median_error']:.1%}, worst {s['worst_error']:.1%}; "
              f"measured/estimated time {s['low_ratio']:.3f}-{s['high_ratio']:.3f}")  # fmt: skip
    every = [r for rows in sections.values() for r in rows]
    late = [r for r in every if r["label"] in HELD_OUT_AFTER]
    if late:
        s = summary(late)
        print(f"\nthe {s['n']} rows added after the model was last changed: median |error| "
              f"{s['median_error']:.1%}, worst {s['worst_error']:.1%}; measured/estimated time "
              f"{s['low_ratio']:.3f}-{s['high_ratio']:.3f}")  # fmt: skip
    s = summary(every)
    print(f"\nall {s['n']} rows: median |error| {s['median_error']:.1%}, worst "
          f"{s['worst_error']:.1%}; band (measured/estimated time) {s['low_ratio']:.3f}-"
          f"{s['high_ratio']:.3f}")  # fmt: skip
    print("\nrecorded machine, parts of the model:\n  " + "\n  ".join(recorded_parts()))
    print("sources:\n  " + "\n  ".join(sorted({r["source"] for r in every})))
    if args.json:
        args.json.write_text(json.dumps({"rows": every, "summary": s}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
