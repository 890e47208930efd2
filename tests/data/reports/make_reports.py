"""Regenerate the saved reports used by the fleet and export tests.

Run: ``.venv/bin/python tests/data/reports/make_reports.py``. Each report is built from
the pydantic models, so it is a valid facts document of the current schema.

- ``recorded-*.json`` are the recorded hosts of ``tests/data/hosts/`` (all CPU-only) put
  through the real probe. ``recorded-epyc-milan-kvm.json`` is the development container
  these tests were written in (AMD EPYC Zen 3 KVM guest, docker, 2 cores, 24 GiB,
  AVX2/FMA, no AVX-512, no AMX, no GPU) and carries figures measured there with torch 2.13
  (``torch.utils.benchmark``, 2 threads, 2026-11-30): fp32 1024^3 matmul 35.8 GFLOP/s,
  bf16 0.55 GFLOP/s (no native bf16), 32 MiB copy 5.6 GB/s. The machine was shared and
  busy: the figures are low and noisy. The other recorded hosts carry no measurements.
- ``synthetic-*.json`` are GPU machines (none is recorded yet), marked as such in
  ``comment`` and in the hostname: GPU memory comes from the vendor figures in
  ``shared/REFERENCE.md``, CPU peaks from its formula (cores x GHz x FLOPs/cycle). They
  carry no invented measurements.
- The ``bad-*`` files are broken on purpose and ``partial-host-only.json`` knows too little
  to estimate anything on (``fleet`` skips them all, with the reason).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

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

HERE = Path(__file__).parent
HOSTS = HERE.parent / "hosts"
GIB = 1024**3
STAMP = "2026-11-30T02:45:00+00:00"
SYNTHETIC = "synthetic: built from the REFERENCE.md figures, not probed or measured"


def _cpu(
    model: str,
    vendor: str,
    uarch: str,
    cores: int,
    mhz: float,
    feats: CpuFeatures,
    fp32: float,
    bf16: float | None,
) -> Cpu:
    return Cpu(
        vendor=vendor,
        model=model,
        architecture="x86_64",
        microarchitecture=uarch,
        sockets=1,
        physical_cores=cores,
        logical_cores=cores,
        affinity_cores=cores,
        usable_cores=cores,
        base_mhz=mhz,
        max_mhz=mhz,
        numa_nodes=1,
        features=feats,
        peak_gflops=PeakGflops(
            fp32=fp32, bf16=bf16, basis="cores x GHz x FLOPs/cycle (REFERENCE.md CPU peaks)"
        ),
    )


def _nvidia(i: int, name: str, gib: float, cc: str, arch: str, bf16: bool, nvlink: int = 0) -> Gpu:
    return Gpu(
        index=i,
        uuid=f"GPU-5a1e0000-0000-4000-8000-{i:012d}",
        pci_bus_id=f"00000000:{0x18 + i:02X}:00.0",
        vendor="nvidia",
        name=name,
        memory_total_bytes=int(gib * GIB),
        memory_free_bytes=int(gib * GIB * 0.98),
        compute_capability=cc,
        architecture=arch,
        supports=GpuSupports(fp16=True, bf16=bf16, tf32=bf16, fp8=cc >= "8.9", int8_tensor=True),
        driver_version="550.54.15",
        cuda_driver_version="12.4",
        nvlink_active_links=nvlink,
        mig_enabled=False,
    )


def recorded(name: str) -> Facts:
    """Facts of a recorded host (``tests/data/hosts/<name>``) through the real probe."""
    from hwadvisor.probe import probe_machine
    from hwadvisor.probe.seams import Seams

    return probe_machine(Seams.recorded(HOSTS / name)).model_copy(update={"generated_at": STAMP})


def epyc() -> Facts:
    """This development container (recorded as epyc-milan-kvm), with figures measured here."""
    results = [
        BenchResult(
            device="cpu",
            kernel="matmul",
            dtype="fp32",
            shape=[1024, 1024, 1024],
            value=35.8,
            unit="GFLOP/s",
            median_s=0.0600,
            iqr_s=0.0131,
            runs=17,
            threads=2,
        ),
        BenchResult(
            device="cpu",
            kernel="matmul",
            dtype="bf16",
            shape=[1024, 1024, 1024],
            value=0.55,
            unit="GFLOP/s",
            median_s=3.936,
            iqr_s=0.0,
            runs=1,
            threads=2,
        ),
        BenchResult(
            device="cpu",
            kernel="copy",
            dtype="fp32",
            shape=[8388608],
            value=5.61,
            unit="GB/s",
            median_s=0.01196,
            iqr_s=0.00171,
            runs=91,
            threads=2,
        ),
    ]
    bench = BenchReport(
        generated_at=STAMP,
        torch_version="2.13.0+cpu",
        budget_s=10.0,
        elapsed_s=6.2,
        devices=[BenchDevice(device="cpu", name="AMD EPYC", threads=2)],
        results=results,
    )
    return recorded("epyc-milan-kvm").model_copy(update={"bench": bench})


def _zen4(cores: int) -> Cpu:
    feats = CpuFeatures(avx2=True, fma=True, avx512f=True, avx512_vnni=True, avx512_bf16=True)
    return _cpu(
        "AMD Ryzen 9 7950X",
        "AuthenticAMD",
        "zen4",
        cores,
        4500.0,
        feats,
        fp32=cores * 4.5 * 32,
        bf16=cores * 4.5 * 64,
    )


def workstation() -> Facts:
    """A synthetic workstation: 16-core Zen 4 and one RTX 4090 (24 GB)."""
    return Facts(
        generated_at=STAMP,
        host=Host(hostname="synthetic-rtx4090-workstation", os="Linux"),
        cpu=_zen4(16),
        memory=Memory(total_bytes=64 * GIB, available_bytes=60 * GIB),
        gpus=[_nvidia(0, "NVIDIA GeForce RTX 4090", 23.99, "8.9", "ada", bf16=True)],
        software=Software(python="3.11", torch=TorchInfo(version="2.13.0", cuda="12.4")),
    )


def t4() -> Facts:
    """A synthetic cloud inference box: 8 vCPUs and one T4 (16 GB, about 15 GiB usable)."""
    feats = CpuFeatures(avx2=True, fma=True, avx512f=True, avx512_vnni=True)
    return Facts(
        generated_at=STAMP,
        host=Host(hostname="synthetic-t4-inference", os="Linux", virtualization="kvm"),
        cpu=_cpu(
            "Intel(R) Xeon(R) CPU @ 2.20GHz",
            "GenuineIntel",
            "cascadelake",
            8,
            2200.0,
            feats,
            fp32=8 * 2.2 * 64,
            bf16=None,
        ),
        memory=Memory(total_bytes=32 * GIB, available_bytes=30 * GIB),
        gpus=[_nvidia(0, "Tesla T4", 15.0, "7.5", "turing", bf16=False)],
        software=Software(python="3.11", torch=TorchInfo(version="2.13.0", cuda="12.4")),
    )


def dgx() -> Facts:
    """A synthetic 8 x H100 SXM 80 GB server with NVLink 4 (18 links per GPU)."""
    feats = CpuFeatures(
        avx2=True,
        fma=True,
        avx512f=True,
        avx512_vnni=True,
        avx512_bf16=True,
        avx512_fp16=True,
        amx_tile=True,
        amx_bf16=True,
        amx_int8=True,
    )
    cpu = _cpu(
        "Intel(R) Xeon(R) Platinum 8480+",
        "GenuineIntel",
        "sapphirerapids",
        112,
        2000.0,
        feats,
        fp32=14336.0,
        bf16=229376.0,
    )
    return Facts(
        generated_at=STAMP,
        host=Host(hostname="synthetic-dgx-h100x8", os="Linux"),
        cpu=cpu.model_copy(update={"sockets": 2, "numa_nodes": 2}),
        memory=Memory(total_bytes=2048 * GIB, available_bytes=2000 * GIB),
        gpus=[
            _nvidia(i, "NVIDIA H100 80GB HBM3", 79.6, "9.0", "hopper", bf16=True, nvlink=18)
            for i in range(8)
        ],
        software=Software(python="3.11", torch=TorchInfo(version="2.13.0", cuda="12.4")),
    )


def _write(name: str, data: dict[str, Any] | str) -> None:
    text = data if isinstance(data, str) else json.dumps(data, indent=2) + "\n"
    (HERE / name).write_text(text, encoding="utf-8")


def main() -> None:
    """Write every report into this folder."""
    _write("recorded-epyc-milan-kvm.json", json.loads(epyc().model_dump_json()))
    for host in ("spr-amx-kvm", "laptop-avx2", "arm-sve-server", "container-cgv2-1.5cpu"):
        _write(f"recorded-{host}.json", json.loads(recorded(host).model_dump_json()))
    for name, facts in [
        ("synthetic-rtx4090-workstation.json", workstation()),
        ("synthetic-t4-inference.json", t4()),
        ("synthetic-dgx-h100x8.json", dgx()),
    ]:
        _write(name, {"comment": SYNTHETIC, **json.loads(facts.model_dump_json())})
    partial = Facts(
        generated_at=STAMP,
        host=Host(hostname="partial-host-only", os="Linux"),
        cpu=Cpu(vendor="GenuineIntel"),
    )
    _write(
        "partial-host-only.json",
        {
            "comment": "partial on purpose: the probe of cpu and memory failed",
            **json.loads(partial.model_dump_json()),
        },
    )
    good = json.loads(epyc().model_dump_json())
    _write("bad-truncated.json", json.dumps(good, indent=2)[:700])
    _write("bad-wrong-major.json", {**good, "schema_version": "2.0"})
    _write(
        "bad-not-facts.json",
        {"schema_version": "1.0", "tool": {"name": "hwadvisor"}, "verdict": {"device": "cpu"}},
    )
    _write("bad-field.json", {**good, "cpu": {**good["cpu"], "usable_cores": "many"}})


if __name__ == "__main__":
    main()
