"""Regenerate the saved facts of the machines the scenario tests advise for.

Run: ``.venv/bin/python tests/data/facts/make_facts.py``. See README.md beside it for
where each machine comes from; probed machines go through
``probe_machine(Seams.recorded(...))`` (with an NVML recording where the machine has
NVIDIA GPUs), and the software stack a recorded host cannot carry (torch is read from
site-packages, which a recording lacks) is set afterwards, as written in README.md.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from hwadvisor.models.bench import BenchDevice, BenchReport, BenchResult
from hwadvisor.models.facts import (
    Cpu,
    CpuFeatures,
    Facts,
    Gpu,
    GpuSupports,
    Host,
    Memory,
    PeakGflops,
    Software,
    TorchInfo,
)
from hwadvisor.probe import probe_machine
from hwadvisor.probe.seams import Seams

HERE = Path(__file__).parent
TESTS = HERE.parents[1]
HOSTS = TESTS / "data" / "hosts"
NVML = TESTS / "data" / "nvml"
GIB = 1024**3
STAMP = "2026-11-30T03:00:00+00:00"


def _probe(host: str, nvml: str | None = None) -> Facts:
    seams = Seams.recorded(HOSTS / host)
    if nvml is not None:
        env = dict(seams.system.env, HWADVISOR_FAKE_NVML=str(NVML / f"{nvml}.json"))
        seams = dataclasses.replace(seams, system=dataclasses.replace(seams.system, env=env))
    facts = probe_machine(seams, timeout=20.0)
    return facts.model_copy(update={"generated_at": STAMP})


def _with_torch(
    facts: Facts, version: str, cuda: str | None, issues: list[str] | None = None
) -> Facts:
    sw = facts.software.model_copy(
        update={"torch": TorchInfo(version=version, cuda=cuda), "issues": issues or []}
    )
    return facts.model_copy(update={"software": sw})


def _spr_bench() -> BenchReport:
    """The figures REFERENCE.md reports for torch 2.13 on the AMX (Sapphire Rapids) CPU."""

    def r(kernel: str, dtype: str, n: int, value: float, unit: str = "GFLOP/s") -> BenchResult:
        return BenchResult(
            device="cpu",
            kernel=kernel,
            dtype=dtype,
            shape=[n, n, n],
            value=value,
            unit=unit,
            median_s=0.0,
            iqr_s=0.0,
            runs=0,
            threads=2,
        )

    return BenchReport(
        generated_at=STAMP,
        torch_version="2.13.0+cpu",
        budget_s=10.0,
        elapsed_s=10.0,
        devices=[BenchDevice(device="cpu", name="Intel Xeon (Sapphire Rapids, KVM)", threads=2)],
        results=[
            r("matmul", "fp32", 2048, 308.0),
            r("matmul", "bf16", 2048, 1100.0),
            r("matmul", "int8", 512, 990.0, "GOP/s"),
        ],
    )


def _arm_edge() -> Facts:
    """A Raspberry Pi 4 class board: 4 x Cortex-A72 at 1.5 GHz, 4 GiB, no GPU."""
    cpu = Cpu(
        vendor="ARM",
        model="Cortex-A72",
        architecture="aarch64",
        microarchitecture="cortex_a72",
        sockets=1,
        physical_cores=4,
        logical_cores=4,
        affinity_cores=4,
        usable_cores=4,
        base_mhz=600.0,
        max_mhz=1500.0,
        numa_nodes=1,
        features=CpuFeatures(neon=True),
        flags=["fp", "asimd", "evtstrm", "crc32", "cpuid"],
        # 4 cores x 1.5 GHz x 8 fp32 FLOPs/cycle (one 128-bit FMA pipe: 4 lanes x 2)
        peak_gflops=PeakGflops(
            fp32=48.0, basis="4 cores x 1.5 GHz x 8 FLOPs/cycle (NEON, 1 FMA pipe)"
        ),
    )
    return Facts(
        generated_at=STAMP,
        host=Host(
            hostname="edge-box (hand-built)",
            os="Linux",
            kernel="6.6.31",
            python="3.11.2",
            shm_bytes=970 * 1024**2,
        ),
        cpu=cpu,
        memory=Memory(total_bytes=4 * GIB, available_bytes=3 * GIB),
        software=Software(
            python="3.11.2", torch=TorchInfo(version="2.5.1", cuda=None), onnxruntime="1.20.1"
        ),
    )


def _apple_m2() -> Facts:
    """A MacBook Air M2 with 16 GiB on macOS: 4 P + 4 E cores, a 10-core GPU, unified memory."""
    cpu = Cpu(
        vendor="Apple",
        model="Apple M2",
        architecture="arm64",
        microarchitecture="m2",
        sockets=1,
        physical_cores=8,
        logical_cores=8,
        affinity_cores=8,
        usable_cores=8,
        max_mhz=3504.0,
        features=CpuFeatures(neon=True, i8mm=True, bf16=True),
        flags=["neon", "i8mm", "bf16"],
        # Not measured: 4 P cores x 3.5 GHz x 32 (four 128-bit FMA pipes) + 4 E cores x
        # 2.4 GHz x 16 (two pipes), from the cores' published pipe counts.
        peak_gflops=PeakGflops(
            fp32=602.0,
            basis="4 x 3.5 GHz x 32 + 4 x 2.4 GHz x 16 FLOPs/cycle (NEON FMA pipes; assumed)",
        ),
    )
    gpu = Gpu(
        index=0,
        vendor="apple",
        name="Apple M2 GPU (10-core)",
        memory_total_bytes=int(16 * GIB * 0.67),
        architecture="apple8",
        supports=GpuSupports(fp16=True, bf16=True),
        unified_memory=True,
    )
    return Facts(
        generated_at=STAMP,
        host=Host(
            hostname="macbook-m2 (hand-built)", os="Darwin", kernel="24.1.0", python="3.11.9"
        ),
        cpu=cpu,
        memory=Memory(total_bytes=16 * GIB, available_bytes=9 * GIB),
        gpus=[gpu],
        software=Software(python="3.11.9", torch=TorchInfo(version="2.5.1", cuda=None)),
    )


def _regpu(facts: Facts, name: str, memory_gib: float, count: int, **gpu: object) -> Facts:
    """``facts`` with its GPU replaced by ``count`` of another board (made by hand: the
    recorded GPU's fields with the name, memory and the fields in ``gpu`` changed)."""
    first = facts.gpus[0]
    total = int(memory_gib * GIB)
    gpus = [
        first.model_copy(
            update={
                "index": i,
                "name": name,
                "uuid": f"GPU-00000000-0000-4000-8000-{i:012d}",
                "pci_bus_id": f"0000:{0x18 + i:02x}:00.0",
                "memory_total_bytes": total,
                "memory_free_bytes": total - 2**20,
                **gpu,
            }
        )
        for i in range(count)
    ]
    return facts.model_copy(update={"gpus": gpus})


def build() -> dict[str, Facts]:
    """Every saved machine, by file name."""
    t4 = _probe("epyc-milan-kvm", "t4_old_driver")
    gpu_box = _with_torch(_probe("laptop-avx2", "rtx4090"), "2.5.1+cu124", "12.4")
    cloud = _with_torch(t4, "2.5.1+cu121", "12.1")
    return {
        "laptop": _with_torch(_probe("laptop-avx2"), "2.5.1+cpu", None),
        "cpu-server-amx": _with_torch(_probe("spr-amx-kvm"), "2.13.0+cpu", None).model_copy(
            update={"bench": _spr_bench()}
        ),
        "rtx4090-workstation": _with_torch(_probe("laptop-avx2", "rtx4090"), "2.5.1+cu124", "12.4"),
        "t4-cloud": _with_torch(
            t4,
            "2.5.1+cu121",
            "12.1",
            [
                "torch 2.5.1+cu121 is built for CUDA 12.1 but the driver supports CUDA 11.2: GPU calls will fail",
            ],
        ),
        "h100x8-nvlink": _with_torch(
            _probe("spr-amx-kvm", "h100_sxm_8x_nvlink"), "2.5.1+cu124", "12.4"
        ),
        "rtx3090x2-workstation": _regpu(
            gpu_box,
            "NVIDIA GeForce RTX 3090",
            24.0,
            2,
            compute_capability="8.6",
            architecture="Ampere",
            power_limit_watts=350.0,
            supports=gpu_box.gpus[0].supports.model_copy(update={"fp8": False}),
        ),
        "a100-cloud": _regpu(
            cloud,
            "NVIDIA A100-SXM4-80GB",
            80.0,
            1,
            compute_capability="8.0",
            architecture="Ampere",
            power_limit_watts=400.0,
            driver_version="550.54.15",
            cuda_driver_version="12.4",
            pcie_generation=4,
            supports=cloud.gpus[0].supports.model_copy(update={"bf16": True, "tf32": True}),
        ),
        "arm-edge": _arm_edge(),
        "apple-m2": _apple_m2(),
    }


def main() -> None:
    """Write every machine's facts as ``<name>.json``."""
    for name, facts in build().items():
        (HERE / f"{name}.json").write_text(facts.model_dump_json(indent=2) + "\n", encoding="utf-8")
        print(f"{name}: {facts.cpu.model}, {len(facts.gpus)} GPU(s)")


if __name__ == "__main__":
    main()
