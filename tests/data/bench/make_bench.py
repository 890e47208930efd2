"""Regenerate the bench fixtures that exercise the edges of the advice (issue 14.4).

Run: ``.venv/bin/python tests/data/bench/make_bench.py``. Each file is a ``BenchReport``
built from the models, so it is a valid bench document of the current schema. They are
**synthetic**: the figures are set to sit on each side of the rules' thresholds, with
theoretical peaks from the probe's formula (cores x GHz x FLOPs/cycle), not measured.

- ``amx-all-faster.json``: an AMX server, bf16 4x and int8 7x fp32 (int8 the fastest);
- ``no-native-all-slower.json``: an AVX2 CPU without bf16/int8 instructions, where torch's
  fallback kernels run bf16 70x and int8 40x slower than fp32 (as measured on the
  development machine, docs/bench.md);
- ``int8-fast-bf16-slow.json``: int8 2.5x faster, bf16 0.3x (the HW208 case of issue 14);
- ``bf16-fast-int8-slow.json``: bf16 2.5x faster, int8 0.003x;
- ``busy-unreliable.json``: a busy machine (load 4 on 2 cores): every CPU figure unreliable,
  int8 stopped at a toy size;
- ``amx-int8-unreliable.json``: AMX, fp32 steady, int8 unsteady (spread 40%): the int8
  ratio falls back to the peaks;
- ``gpu-h100.json``: one H100 beside its host CPU.

One file here is **recorded**, not made by this script: ``recorded-xeon-amx-kvm.json``,
``hwadvisor bench --json`` on 2026-12-02 on the 2-vCPU Intel Xeon KVM guest with AMX of
``tests/data/hosts/xeon-amx-kvm`` (load 0.6 at the start): bf16 3.7x fp32 matmul, fp32
at 97% of the two-FMA peak, 11 figures unreliable (the int8 matmul and 10 of the memory
sweep's), the strided backward and max pooling's backward figures among the rest.
"""

from __future__ import annotations

from pathlib import Path

from hwadvisor.models.bench import BenchDevice, BenchReport, BenchResult

HERE = Path(__file__).parent
STAMP = "2026-12-01T10:00:00+00:00"


def fig(
    dtype: str,
    value: float,
    peak: float | None,
    *,
    kernel: str = "matmul",
    device: str = "cpu",
    n: int = 1024,
    spread: float = 0.02,
    runs: int = 8,
    reliable: bool = True,
    note: str | None = None,
) -> BenchResult:
    """One figure; its median time follows from the work and the value."""
    work = 2.0 * n**3 if kernel == "matmul" else 4.0 * n
    unit = {"matmul": "GOP/s" if dtype == "int8" else "GFLOP/s"}.get(kernel, "GB/s")
    median = work / (value * 1e9)
    return BenchResult(
        device=device,
        kernel=kernel,
        dtype=dtype,
        shape=[n, n, n] if kernel == "matmul" else [n],
        value=value,
        unit=unit,
        median_s=median,
        iqr_s=median * spread,
        runs=runs,
        threads=2 if device == "cpu" else None,
        efficiency=value / peak if peak else None,
        peak=peak,
        reliable=reliable,
        spread=spread if runs >= 4 else None,
        note=note,
    )


def cpu_set(
    fp32: float, bf16: float, int8: float, peaks: tuple[float, float, float]
) -> list[BenchResult]:
    """fp32, bf16 and int8 matmul plus copy and triad on the CPU."""
    p32, p16, p8 = peaks
    return [
        fig("fp32", fp32, p32),
        fig("bf16", bf16, p16),
        fig("int8", int8, p8),
        fig("fp32", 20.0, None, kernel="copy", n=1 << 25),
        fig("fp32", 22.0, None, kernel="triad", n=1 << 25),
    ]


def report(results: list[BenchResult], *, load: float = 0.3, cores: int = 2) -> BenchReport:
    """A report of ``results`` with the evidence the bench derives from them."""
    from hwadvisor.bench.derived import derive

    return BenchReport(
        generated_at=STAMP,
        torch_version="2.13.0+cpu",
        load_avg_1m=load,
        load_avg_1m_end=load,
        usable_cores=cores,
        budget_s=7.5,
        elapsed_s=8.0,
        torch_import_s=3.0,
        devices=[
            BenchDevice(device=d, threads=2 if d == "cpu" else None)
            for d in dict.fromkeys(r.device for r in results)
        ],
        results=results,
        derived=derive(results, None, load_1m=load),
    )


AMX = (2 * 2.0 * 64, 2 * 2.0 * 1024, 2 * 2.0 * 2048)  # 2 cores x 2.0 GHz x FLOPs/cycle
AVX2 = (2 * 2.45 * 32, 2 * 2.45 * 32, 2 * 2.45 * 64)
BUSY = "measured while the machine was busy (load average 4.0 on 2 cores)"


def fixtures() -> dict[str, BenchReport]:
    """Every fixture, by file name."""
    unsteady = "spread (IQR / median) 40%, over 10%: the machine was not steady"
    busy = [
        r.model_copy(update={"reliable": False, "note": BUSY})
        for r in cpu_set(35.0, 0.5, 0.47, AVX2)
    ]
    busy[2] = busy[2].model_copy(update={"shape": [128, 128, 128], "runs": 2, "spread": None})
    return {
        "amx-all-faster.json": report(cpu_set(200.0, 800.0, 1400.0, AMX)),
        "no-native-all-slower.json": report(cpu_set(130.0, 1.8, 3.3, AVX2)),
        "int8-fast-bf16-slow.json": report(cpu_set(100.0, 30.0, 250.0, AMX)),
        "bf16-fast-int8-slow.json": report(cpu_set(100.0, 250.0, 0.3, AMX)),
        "busy-unreliable.json": report(busy, load=4.0),
        "amx-int8-unreliable.json": report(
            [
                *cpu_set(200.0, 800.0, 0.47, AMX)[:2],
                fig("int8", 0.47, AMX[2], spread=0.4, reliable=False, note=unsteady),
                *cpu_set(200.0, 800.0, 0.47, AMX)[3:],
            ]
        ),
        "gpu-h100.json": report(
            [
                *cpu_set(130.0, 1.8, 3.3, AVX2),
                fig("fp32", 50000.0, 67000.0, device="cuda:0", n=8192),
                fig("tf32", 380000.0, 494500.0, device="cuda:0", n=8192),
                fig("bf16", 750000.0, 989000.0, device="cuda:0", n=8192),
                fig("fp16", 760000.0, 989000.0, device="cuda:0", n=8192),
                fig("fp32", 3000.0, 3350.0, kernel="copy", device="cuda:0", n=1 << 28),
            ]
        ),
    }


def main() -> None:
    """Write every fixture beside this script."""
    for name, doc in fixtures().items():
        (HERE / name).write_text(doc.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()
