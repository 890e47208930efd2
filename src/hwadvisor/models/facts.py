"""The facts document (``hwadvisor check --json``): what the machine has (SPEC §3)."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from hwadvisor.errors import FactsError
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.common import Document, ProbeRecord, ProbeStatus, Versioned, validate_document
from hwadvisor.models.plain import utc_now


class Host(Document):
    """The operating system and what the process runs inside."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    python: str | None = None
    virtualization: str | None = Field(
        None, description="hypervisor name (kvm, vmware, wsl, ...) or null on bare metal"
    )
    container: str | None = Field(
        None, description="container runtime (docker, podman, kubernetes, ...) or null"
    )
    shm_bytes: int | None = Field(
        None, ge=0, description="size of /dev/shm (data loader workers share tensors through it)"
    )


class CpuFeatures(Document):
    """Normalised instruction-set features that matter for deep learning (x86 and Arm)."""

    avx2: bool = False
    fma: bool = False
    avx512f: bool = False
    avx512_vnni: bool = False
    avx512_bf16: bool = False
    avx512_fp16: bool = False
    avx_vnni: bool = False
    amx_tile: bool = False
    amx_bf16: bool = False
    amx_int8: bool = False
    amx_fp16: bool = False
    neon: bool = False
    sve: bool = False
    sve2: bool = False
    sme: bool = False
    i8mm: bool = False
    bf16: bool = False


class PeakGflops(Document):
    """Theoretical peak of all usable cores: ISA FLOPs/cycle × cores × clock."""

    fp32: float | None = Field(None, ge=0, allow_inf_nan=False)
    bf16: float | None = Field(None, ge=0, allow_inf_nan=False)
    int8: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="GOP/s of int8 multiply-accumulate, counted as 2 ops",
    )
    basis: str | None = Field(None, description="how the peak was derived, for a person to check")


class Cpu(Document):
    """The processor(s) and what this process may use of them."""

    vendor: str | None = None
    model: str | None = None
    architecture: str | None = None
    microarchitecture: str | None = Field(
        None, description="a guess from vendor/family/model and flags"
    )
    sockets: int | None = Field(None, ge=1)
    physical_cores: int | None = Field(None, ge=1)
    logical_cores: int | None = Field(None, ge=1)
    affinity_cores: int | None = Field(None, ge=1)
    cgroup_quota_cores: float | None = Field(None, gt=0, allow_inf_nan=False)
    usable_cores: int | None = Field(None, ge=1, description="min(affinity, ceil(cgroup quota))")
    base_mhz: float | None = Field(None, gt=0, allow_inf_nan=False)
    max_mhz: float | None = Field(None, gt=0, allow_inf_nan=False)
    numa_nodes: int | None = Field(None, ge=1)
    l2_bytes: int | None = Field(None, ge=0, description="L2 per core")
    l3_bytes: int | None = Field(None, ge=0, description="L3 in total over all sockets")
    features: CpuFeatures = Field(default_factory=CpuFeatures)
    flags: list[str] = Field(default_factory=list)
    peak_gflops: PeakGflops = Field(default_factory=PeakGflops)
    amx_note: str | None = Field(None, description="AMX needs the OS to grant it per process")


class Memory(Document):
    """System memory and the container's limit."""

    total_bytes: int | None = Field(None, gt=0)
    available_bytes: int | None = Field(None, ge=0)
    cgroup_limit_bytes: int | None = Field(None, gt=0)


class GpuSupports(Document):
    """Tensor-core data types the GPU runs natively."""

    fp16: bool | None = None
    bf16: bool | None = None
    tf32: bool | None = None
    fp8: bool | None = None
    int8_tensor: bool | None = None


class Gpu(Document):
    """One GPU, keyed by UUID and PCI bus id (never by index alone)."""

    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
    vendor: str
    name: str | None = None
    memory_total_bytes: int | None = Field(None, ge=0)
    memory_free_bytes: int | None = Field(None, ge=0)
    compute_capability: str | None = Field(
        None, description="MAJOR.MINOR for NVIDIA, gfx target for AMD"
    )
    architecture: str | None = None
    multiprocessors: int | None = Field(None, ge=1)
    supports: GpuSupports = Field(default_factory=GpuSupports)
    driver_version: str | None = None
    cuda_driver_version: str | None = Field(
        None, description="highest CUDA version the driver runs"
    )
    pcie_generation: int | None = Field(None, ge=1)
    pcie_width: int | None = Field(None, ge=1)
    nvlink_active_links: int | None = Field(None, ge=0)
    mig_enabled: bool | None = None
    power_limit_watts: float | None = Field(None, ge=0, allow_inf_nan=False)
    temperature_c: float | None = Field(None, ge=-273.15, allow_inf_nan=False)
    utilization_percent: float | None = Field(None, ge=0, le=100, allow_inf_nan=False)
    unified_memory: bool = False


class TorchInfo(Document):
    """The installed torch build, read from its metadata without importing it."""

    version: str
    cuda: str | None = None
    hip: str | None = None
    cudnn: str | None = None


class Software(Document):
    """Deep-learning software found, and incompatibilities between it and the driver."""

    python: str | None = None
    torch: TorchInfo | None = None
    onnxruntime: str | None = None
    openvino: str | None = None
    tensorflow: str | None = None
    issues: list[str] = Field(default_factory=list)


class Facts(Versioned):
    """Everything ``hwadvisor check`` found; every fact may be null, ``probes`` says why."""

    generated_at: str = Field(default_factory=utc_now)
    host: Host = Field(default_factory=Host)
    cpu: Cpu = Field(default_factory=Cpu)
    memory: Memory = Field(default_factory=Memory)
    gpus: list[Gpu] = Field(default_factory=list)
    software: Software = Field(default_factory=Software)
    probes: list[ProbeRecord] = Field(default_factory=list)
    bench: BenchReport | None = Field(None, description="the microbenchmark report, with --bench")

    def probe(self, name: str) -> ProbeRecord | None:
        """The record of probe ``name``, if it ran."""
        return next((p for p in self.probes if p.name == name), None)

    def probe_ok(self, name: str) -> bool:
        """Whether probe ``name`` ran and succeeded."""
        rec = self.probe(name)
        return rec is not None and rec.status is ProbeStatus.OK


def validate_facts(data: dict[str, Any], *, where: str, what: str = "facts") -> Facts:
    """A saved facts document, version-checked and validated.

    Every facts field is optional, so any versioned document would validate as empty
    facts; a document with neither ``cpu`` nor ``host`` is refused as not a facts
    document (an advice or bench document given by mistake).
    """
    if "cpu" not in data and "host" not in data:
        raise FactsError(
            "not a facts document (no 'cpu' or 'host' section); use `hwadvisor check --json` output",
            where=where,
        )
    return validate_document(Facts, data, where=where, what=what)
