"""The facts document as plain dataclasses, for the probe (generated: do not edit).

Written by ``scripts/gen_facts_plain.py`` from the pydantic models in
:mod:`hwadvisor.models.facts`, field for field and in the same order; a test fails when
the two differ. See :mod:`hwadvisor.models.plain` for why the probe needs them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from hwadvisor import __version__
from hwadvisor.models.plain import SCHEMA_VERSION, ProbeStatus, utc_now

__all__ = [
    "Cpu",
    "CpuFeatures",
    "Facts",
    "Gpu",
    "GpuSupports",
    "Host",
    "Memory",
    "PeakGflops",
    "ProbeRecord",
    "Software",
    "ToolInfo",
    "TorchInfo",
]


@dataclass(slots=True, kw_only=True)
class ToolInfo:
    """Which program wrote a document."""

    _coerce: ClassVar[dict[str, type]] = {}
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}

    name: str = "hwadvisor"
    version: str = __version__


@dataclass(slots=True, kw_only=True)
class Host:
    """The operating system and what the process runs inside."""

    _coerce: ClassVar[dict[str, type]] = {
        "shm_bytes": int,
    }
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {
        "shm_bytes": (("ge", 0),),
    }

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    python: str | None = None
    #: hypervisor name (kvm, vmware, wsl, ...) or null on bare metal
    virtualization: str | None = None
    #: container runtime (docker, podman, kubernetes, ...) or null
    container: str | None = None
    #: size of /dev/shm (data loader workers share tensors through it)
    shm_bytes: int | None = None


@dataclass(slots=True, kw_only=True)
class CpuFeatures:
    """Normalised instruction-set features that matter for deep learning (x86 and Arm)."""

    _coerce: ClassVar[dict[str, type]] = {}
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}

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


@dataclass(slots=True, kw_only=True)
class PeakGflops:
    """Theoretical peak of all usable cores: ISA FLOPs/cycle × cores × clock."""

    _coerce: ClassVar[dict[str, type]] = {
        "fp32": float,
        "bf16": float,
        "int8": float,
    }
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {
        "fp32": (("ge", 0), ("finite", 1)),
        "bf16": (("ge", 0), ("finite", 1)),
        "int8": (("ge", 0), ("finite", 1)),
    }

    fp32: float | None = None
    bf16: float | None = None
    #: GOP/s of int8 multiply-accumulate, counted as 2 ops
    int8: float | None = None
    #: how the peak was derived, for a person to check
    basis: str | None = None


@dataclass(slots=True, kw_only=True)
class Cpu:
    """The processor(s) and what this process may use of them."""

    _coerce: ClassVar[dict[str, type]] = {
        "sockets": int,
        "physical_cores": int,
        "logical_cores": int,
        "affinity_cores": int,
        "cgroup_quota_cores": float,
        "usable_cores": int,
        "base_mhz": float,
        "max_mhz": float,
        "numa_nodes": int,
        "l2_bytes": int,
        "l3_bytes": int,
    }
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {
        "sockets": (("ge", 1),),
        "physical_cores": (("ge", 1),),
        "logical_cores": (("ge", 1),),
        "affinity_cores": (("ge", 1),),
        "cgroup_quota_cores": (("gt", 0), ("finite", 1)),
        "usable_cores": (("ge", 1),),
        "base_mhz": (("gt", 0), ("finite", 1)),
        "max_mhz": (("gt", 0), ("finite", 1)),
        "numa_nodes": (("ge", 1),),
        "l2_bytes": (("ge", 0),),
        "l3_bytes": (("ge", 0),),
    }

    vendor: str | None = None
    model: str | None = None
    architecture: str | None = None
    #: a guess from vendor/family/model and flags
    microarchitecture: str | None = None
    sockets: int | None = None
    physical_cores: int | None = None
    logical_cores: int | None = None
    affinity_cores: int | None = None
    cgroup_quota_cores: float | None = None
    #: min(affinity, ceil(cgroup quota))
    usable_cores: int | None = None
    base_mhz: float | None = None
    max_mhz: float | None = None
    numa_nodes: int | None = None
    #: L2 per core
    l2_bytes: int | None = None
    #: L3 in total over all sockets
    l3_bytes: int | None = None
    features: CpuFeatures = field(default_factory=CpuFeatures)
    flags: list[str] = field(default_factory=list)
    peak_gflops: PeakGflops = field(default_factory=PeakGflops)
    #: AMX needs the OS to grant it per process
    amx_note: str | None = None


@dataclass(slots=True, kw_only=True)
class Memory:
    """System memory and the container's limit."""

    _coerce: ClassVar[dict[str, type]] = {
        "total_bytes": int,
        "available_bytes": int,
        "cgroup_limit_bytes": int,
    }
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {
        "total_bytes": (("gt", 0),),
        "available_bytes": (("ge", 0),),
        "cgroup_limit_bytes": (("gt", 0),),
    }

    total_bytes: int | None = None
    available_bytes: int | None = None
    cgroup_limit_bytes: int | None = None


@dataclass(slots=True, kw_only=True)
class GpuSupports:
    """Tensor-core data types the GPU runs natively."""

    _coerce: ClassVar[dict[str, type]] = {}
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}

    fp16: bool | None = None
    bf16: bool | None = None
    tf32: bool | None = None
    fp8: bool | None = None
    int8_tensor: bool | None = None


@dataclass(slots=True, kw_only=True)
class Gpu:
    """One GPU, keyed by UUID and PCI bus id (never by index alone)."""

    _coerce: ClassVar[dict[str, type]] = {
        "index": int,
        "memory_total_bytes": int,
        "memory_free_bytes": int,
        "multiprocessors": int,
        "pcie_generation": int,
        "pcie_width": int,
        "nvlink_active_links": int,
        "power_limit_watts": float,
        "temperature_c": float,
        "utilization_percent": float,
    }
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {
        "memory_total_bytes": (("ge", 0),),
        "memory_free_bytes": (("ge", 0),),
        "multiprocessors": (("ge", 1),),
        "pcie_generation": (("ge", 1),),
        "pcie_width": (("ge", 1),),
        "nvlink_active_links": (("ge", 0),),
        "power_limit_watts": (("ge", 0), ("finite", 1)),
        "temperature_c": (("ge", -273.15), ("finite", 1)),
        "utilization_percent": (("ge", 0), ("le", 100), ("finite", 1)),
    }

    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
    vendor: str
    name: str | None = None
    memory_total_bytes: int | None = None
    memory_free_bytes: int | None = None
    #: MAJOR.MINOR for NVIDIA, gfx target for AMD
    compute_capability: str | None = None
    architecture: str | None = None
    multiprocessors: int | None = None
    supports: GpuSupports = field(default_factory=GpuSupports)
    driver_version: str | None = None
    #: highest CUDA version the driver runs
    cuda_driver_version: str | None = None
    pcie_generation: int | None = None
    pcie_width: int | None = None
    nvlink_active_links: int | None = None
    mig_enabled: bool | None = None
    power_limit_watts: float | None = None
    temperature_c: float | None = None
    utilization_percent: float | None = None
    unified_memory: bool = False


@dataclass(slots=True, kw_only=True)
class TorchInfo:
    """The installed torch build, read from its metadata without importing it."""

    _coerce: ClassVar[dict[str, type]] = {}
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}

    version: str
    cuda: str | None = None
    hip: str | None = None
    cudnn: str | None = None


@dataclass(slots=True, kw_only=True)
class Software:
    """Deep-learning software found, and incompatibilities between it and the driver."""

    _coerce: ClassVar[dict[str, type]] = {}
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}

    python: str | None = None
    torch: TorchInfo | None = None
    onnxruntime: str | None = None
    openvino: str | None = None
    tensorflow: str | None = None
    issues: list[str] = field(default_factory=list)


@dataclass(slots=True, kw_only=True)
class ProbeRecord:
    """What one probe did: its status, where it read from, how long it took, why it failed."""

    _coerce: ClassVar[dict[str, type]] = {
        "elapsed_ms": float,
    }
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {
        "elapsed_ms": (("ge", 0), ("finite", 1)),
    }

    name: str
    status: ProbeStatus
    source: str | None = None
    elapsed_ms: float | None = None
    error: str | None = None


@dataclass(slots=True, kw_only=True)
class Facts:
    """Everything ``hwadvisor check`` found; every fact may be null, ``probes`` says why."""

    _coerce: ClassVar[dict[str, type]] = {}
    _bounds: ClassVar[dict[str, tuple[tuple[str, float], ...]]] = {}

    schema_version: str = SCHEMA_VERSION
    tool: ToolInfo = field(default_factory=ToolInfo)
    generated_at: str = field(default_factory=utc_now)
    host: Host = field(default_factory=Host)
    cpu: Cpu = field(default_factory=Cpu)
    memory: Memory = field(default_factory=Memory)
    gpus: list[Gpu] = field(default_factory=list)
    software: Software = field(default_factory=Software)
    probes: list[ProbeRecord] = field(default_factory=list)
    #: the microbenchmark report, with --bench
    bench: object | None = None
