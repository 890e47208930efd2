"""The facts document (``hwadvisor check --json``): what the machine has.

The one definition of the document: frozen dataclasses, with each field's bounds and
description as :class:`~hwadvisor.models.plain.Bound` and
:class:`~hwadvisor.models.plain.Doc` markers in its ``Annotated`` type. The probe fills
them and ``check --json`` prints them without importing pydantic; a document read from
a file is validated, and the JSON Schema published, by a pydantic ``TypeAdapter`` built
from the same classes on first use (:class:`Part`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar

from hwadvisor.errors import FactsError
from hwadvisor.models import bounds
from hwadvisor.models.plain import (
    SCHEMA_VERSION,
    Doc,
    FieldSpec,
    ProbeStatus,
    ToolInfo,
    field_specs,
    to_json_value,
    utc_now,
)

if TYPE_CHECKING:
    from hwadvisor.models.bench import BenchReport

P = TypeVar("P", bound="Part")

# Every number's limits are the table of :mod:`hwadvisor.models.bounds` (one place for them all).
#: Bytes of memory, cache or /dev/shm.
Bytes = Annotated[int | None, bounds.BYTES]
#: Cores, hardware threads.
Cores = Annotated[int | None, bounds.CORES]
#: Sockets, NUMA nodes.
Sockets = Annotated[int | None, bounds.SOCKETS]
#: A clock in MHz.
Clock = Annotated[float | None, bounds.CLOCK_MHZ]
#: A peak rate of the whole machine (GFLOP/s, GOP/s).
Gflops = Annotated[float | None, bounds.GFLOPS]


_ADAPTERS: dict[type, Any] = {}


def _adapter(cls: type) -> Any:
    """The pydantic validator and schema of dataclass ``cls``, built once, on first use."""
    found = _ADAPTERS.get(cls)
    if found is None:
        from pydantic import TypeAdapter

        # Pydantic resolves names the annotations use from the frame that builds the
        # adapter: this import is how ``Facts.bench`` finds its (pydantic) model.
        from hwadvisor.models.bench import BenchReport  # noqa: F401

        found = _ADAPTERS[cls] = TypeAdapter(cls)
    return found


class _FieldTable:
    """``model_fields`` of a facts class: each field's declared type and description."""

    def __get__(self, obj: object, owner: type) -> dict[str, FieldSpec]:
        return field_specs(owner)


class Part:
    """Base of the facts classes: the methods every hwadvisor document offers.

    The other documents are pydantic models; these methods keep their names and meaning,
    so a caller treats any document alike. Validating and the schema go through pydantic
    (imported then); printing, copying and reading the fields do not.
    """

    #: Read by pydantic: no float in the facts may be NaN or infinite.
    __pydantic_config__: ClassVar[dict[str, object]] = {"allow_inf_nan": False}
    model_fields: ClassVar[_FieldTable] = _FieldTable()

    @classmethod
    def model_validate(cls: type[P], obj: Any) -> P:
        """``obj`` (JSON values) validated into this class; raises pydantic's ``ValidationError``."""
        result: P = _adapter(cls).validate_python(obj)
        return result

    @classmethod
    def model_json_schema(cls, mode: str = "validation") -> dict[str, Any]:
        """The JSON Schema of this class (``mode`` as in pydantic)."""
        schema: dict[str, Any] = _adapter(cls).json_schema(mode=mode)
        return schema

    def model_dump(self, *, mode: str = "python") -> dict[str, Any]:
        """The fields as a dict (nested parts too); ``mode="json"``: JSON values."""
        out = to_json_value(self) if mode == "json" else dataclasses.asdict(self)  # type: ignore[call-overload]
        assert isinstance(out, dict)
        return out

    def model_dump_json(self, *, indent: int | None = None) -> str:
        """The document as JSON text."""
        return json.dumps(to_json_value(self), indent=indent, ensure_ascii=False)

    def model_copy(self: P, *, update: Mapping[str, Any] | None = None) -> P:
        """A copy with the fields in ``update`` replaced (not validated, as in pydantic)."""
        return dataclasses.replace(self, **(update or {}))  # type: ignore[type-var]


@dataclass(frozen=True, kw_only=True)
class Host(Part):
    """The operating system and what the process runs inside."""

    hostname: str | None = None
    os: str | None = None
    kernel: str | None = None
    python: str | None = None
    virtualization: Annotated[
        str | None, Doc("hypervisor name (kvm, vmware, wsl, ...) or null on bare metal")
    ] = None
    container: Annotated[
        str | None, Doc("container runtime (docker, podman, kubernetes, ...) or null")
    ] = None
    shm_bytes: Annotated[
        Bytes, Doc("size of /dev/shm (data loader workers share tensors through it)")
    ] = None


@dataclass(frozen=True, kw_only=True)
class CpuFeatures(Part):
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


@dataclass(frozen=True, kw_only=True)
class PeakGflops(Part):
    """Theoretical peak of all usable cores: ISA FLOPs/cycle × cores × clock."""

    fp32: Gflops = None
    bf16: Gflops = None
    int8: Annotated[Gflops, Doc("GOP/s of int8 multiply-accumulate, counted as 2 ops")] = None
    basis: Annotated[str | None, Doc("how the peak was derived, for a person to check")] = None


@dataclass(frozen=True, kw_only=True)
class Cpu(Part):
    """The processor(s) and what this process may use of them."""

    vendor: str | None = None
    model: str | None = None
    architecture: str | None = None
    microarchitecture: Annotated[str | None, Doc("a guess from vendor/family/model and flags")] = (
        None
    )
    sockets: Sockets = None
    physical_cores: Cores = None
    logical_cores: Cores = None
    affinity_cores: Cores = None
    cgroup_quota_cores: Annotated[float | None, bounds.QUOTA_CORES] = None
    usable_cores: Annotated[Cores, Doc("min(affinity, ceil(cgroup quota))")] = None
    base_mhz: Clock = None
    max_mhz: Clock = None
    numa_nodes: Sockets = None
    l2_bytes: Annotated[Bytes, Doc("L2 per core")] = None
    l3_bytes: Annotated[Bytes, Doc("L3 in total over all sockets")] = None
    features: CpuFeatures = field(default_factory=CpuFeatures)
    flags: list[str] = field(default_factory=list)
    peak_gflops: PeakGflops = field(default_factory=PeakGflops)
    amx_note: Annotated[str | None, Doc("AMX needs the OS to grant it per process")] = None


@dataclass(frozen=True, kw_only=True)
class Memory(Part):
    """System memory and the container's limit."""

    total_bytes: Annotated[int | None, bounds.SIZE] = None
    available_bytes: Bytes = None
    cgroup_limit_bytes: Annotated[int | None, bounds.SIZE] = None


@dataclass(frozen=True, kw_only=True)
class GpuSupports(Part):
    """Tensor-core data types the GPU runs natively."""

    fp16: bool | None = None
    bf16: bool | None = None
    tf32: bool | None = None
    fp8: bool | None = None
    int8_tensor: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Gpu(Part):
    """One GPU, keyed by UUID and PCI bus id (never by index alone)."""

    index: int
    uuid: str | None = None
    pci_bus_id: str | None = None
    vendor: str
    name: str | None = None
    memory_total_bytes: Bytes = None
    memory_free_bytes: Bytes = None
    compute_capability: Annotated[str | None, Doc("MAJOR.MINOR for NVIDIA, gfx target for AMD")] = (
        None
    )
    architecture: str | None = None
    multiprocessors: Annotated[int | None, bounds.UNITS] = None
    supports: GpuSupports = field(default_factory=GpuSupports)
    driver_version: str | None = None
    cuda_driver_version: Annotated[str | None, Doc("highest CUDA version the driver runs")] = None
    pcie_generation: Annotated[int | None, bounds.LINK_GEN] = None
    pcie_width: Annotated[int | None, bounds.LINK_GEN] = None
    nvlink_active_links: Annotated[int | None, bounds.LINKS] = None
    mig_enabled: bool | None = None
    power_limit_watts: Annotated[float | None, bounds.WATTS] = None
    temperature_c: Annotated[float | None, bounds.CELSIUS] = None
    utilization_percent: Annotated[float | None, bounds.PERCENT] = None
    unified_memory: bool = False


@dataclass(frozen=True, kw_only=True)
class TorchInfo(Part):
    """The installed torch build, read from its metadata without importing it."""

    version: str
    cuda: str | None = None
    hip: str | None = None
    cudnn: str | None = None


@dataclass(frozen=True, kw_only=True)
class Software(Part):
    """Deep-learning software found, and incompatibilities between it and the driver."""

    python: str | None = None
    torch: TorchInfo | None = None
    onnxruntime: str | None = None
    openvino: str | None = None
    tensorflow: str | None = None
    issues: list[str] = field(default_factory=list)


@dataclass(frozen=True, kw_only=True)
class ProbeRecord(Part):
    """What one probe did: its status, where it read from, how long it took, why it failed."""

    name: str
    status: ProbeStatus
    source: str | None = None
    elapsed_ms: Annotated[float | None, bounds.MILLISECONDS] = None
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class Facts(Part):
    """Everything ``hwadvisor check`` found; every fact may be null, ``probes`` says why."""

    schema_version: str = SCHEMA_VERSION
    tool: ToolInfo = field(default_factory=ToolInfo)
    generated_at: str = field(default_factory=utc_now)
    host: Host = field(default_factory=Host)
    cpu: Cpu = field(default_factory=Cpu)
    memory: Memory = field(default_factory=Memory)
    gpus: list[Gpu] = field(default_factory=list)
    software: Software = field(default_factory=Software)
    probes: list[ProbeRecord] = field(default_factory=list)
    bench: Annotated[BenchReport | None, Doc("the microbenchmark report, with --bench")] = None

    def probe(self, name: str) -> ProbeRecord | None:
        """The record of probe ``name``, if it ran."""
        return next((p for p in self.probes if p.name == name), None)

    def probe_ok(self, name: str) -> bool:
        """Whether probe ``name`` ran and succeeded."""
        rec = self.probe(name)
        return rec is not None and rec.status is ProbeStatus.OK


_FIELD_ADAPTERS: dict[tuple[type, str], Any] = {}


def checked_field(cls: type[Part], name: str, value: object) -> Any:
    """``value`` as field ``name`` of facts class ``cls`` takes it when the document is
    validated (the same pydantic rules: kind, limit, finite), else ``ValueError`` with
    pydantic's message. For checking the few fields that differ between reports of one
    machine without validating the whole document again.
    """
    adapter = _FIELD_ADAPTERS.get((cls, name))
    if adapter is None:
        import typing

        from pydantic import ConfigDict, TypeAdapter

        from hwadvisor.models.bench import BenchReport

        hints = typing.get_type_hints(
            cls, localns={"BenchReport": BenchReport}, include_extras=True
        )
        config = ConfigDict(allow_inf_nan=False)
        adapter = _FIELD_ADAPTERS[cls, name] = TypeAdapter(hints[name], config=config)
    from pydantic import ValidationError

    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        from hwadvisor.models.common import error_text

        raise ValueError(error_text(exc.errors()[0])) from None


def validate_facts(data: dict[str, Any], *, where: str, what: str = "facts") -> Facts:
    """A saved facts document, version-checked and validated (errors name the field).

    Every facts field is optional, so any versioned document would validate as empty
    facts; a document with neither ``cpu`` nor ``host`` is refused as not a facts
    document (an advice or bench document given by mistake).
    """
    from hwadvisor.models.common import validate_document

    if "cpu" not in data and "host" not in data:
        raise FactsError(
            "not a facts document (no 'cpu' or 'host' section); use `hwadvisor check --json` output",
            where=where,
        )
    return validate_document(Facts, data, where=where, what=what)
