"""The estimate document (``hwadvisor estimate --json``): time and memory per device."""

from __future__ import annotations

from pydantic import Field

from hwadvisor.models.common import Document, Versioned
from hwadvisor.models.finding import Finding
from hwadvisor.models.workload import Budget, Scenario, Team, Workload


class MemoryBreakdown(Document):
    """Bytes of each part of the job's memory; the total is their sum, not their maximum."""

    weights_bytes: int
    gradients_bytes: int = 0
    optimizer_bytes: int = 0
    activations_bytes: int | None = None
    kv_cache_bytes: int = 0
    runtime_bytes: int = 0
    total_bytes: int | None = None


class MemoryFix(Document):
    """One step of the ordered fixes when a job does not fit, and its effect."""

    fix: str
    memory_bytes: int
    fits: bool


class DeviceEstimate(Document):
    """Time and memory of the workload on one device (``here`` or a catalog id)."""

    device: str
    name: str | None = None
    gpus: int = Field(
        1,
        description="how many of the device the job is spread over: GPUs for a GPU; always 1 for a CPU or `here` (the whole processor, all its usable cores)",
    )
    step_time_s: float | None = None
    total_time_s: float | None = None
    throughput_samples_s: float | None = None
    memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    fits: bool | None = None
    memory: MemoryBreakdown | None = None
    fixes: list[MemoryFix] = Field(default_factory=list)
    basis: str | None = Field(
        None, description="measured here, or catalog peak x achieved fraction"
    )
    measured: bool = Field(
        False, description="true when step_time_s was measured by running the model"
    )
    time_breakdown_s: dict[str, float] = Field(
        default_factory=dict,
        description="seconds per step by part (gemm, conv, memory, optimizer, overhead, comm)",
    )
    assumptions: list[str] = Field(default_factory=list)


class EstimateReport(Versioned):
    """The estimates of one workload on several devices."""

    workload: Workload
    estimates: list[DeviceEstimate] = Field(default_factory=list)
    scenario: Scenario | None = Field(
        None, description="the scenario the guidance is for (from --scenario, else the task)"
    )
    budget: Budget | None = None
    team: Team | None = None
    guidance: list[Finding] = Field(
        default_factory=list,
        description="the findings `recommend` would give for this workload with this budget and team, on this machine (probed even when 'here' is not estimated)",
    )
