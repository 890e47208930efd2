"""The estimate document (``hwadvisor estimate --json``): time and memory per device."""

from __future__ import annotations

from pydantic import Field

from hwadvisor.models.band import TimeBand
from hwadvisor.models.common import Document, Versioned
from hwadvisor.models.cost import Choice, Cost
from hwadvisor.models.finding import Finding
from hwadvisor.models.llm import FinetuneFigures, ServingFigures
from hwadvisor.models.workload import Budget, Scenario, Team, Workload


class MemoryBreakdown(Document):
    """Bytes of each part of the job's memory at its peak; the total is their sum (what
    is live at the same moment), not the maximum of the stages."""

    weights_bytes: int
    gradients_bytes: int = 0
    optimizer_bytes: int = 0
    activations_bytes: int | None = None
    temporaries_bytes: int = Field(
        0, description="optimizer-step intermediates when the step is the peak"
    )
    kv_cache_bytes: int = 0
    runtime_bytes: int = 0
    total_bytes: int | None = None
    lower_bytes: int | None = Field(
        None,
        description="no job is smaller: weights + gradients + optimizer state + runtime (inference: weights + KV cache + runtime)",
    )
    upper_bytes: int | None = Field(
        None,
        description="activations at the stated batch and sequence without recomputation, optimizer temporaries and allocator fragmentation added",
    )
    basis: str | None = Field(None, description="what the activation memory rests on")
    settle: list[str] = Field(
        default_factory=list,
        description="options whose values were assumed; giving them settles a fit the bounds leave open",
    )


class MemoryFix(Document):
    """One step of the ordered fixes when a job does not fit, and its effect."""

    fix: str
    memory_bytes: int
    fits: bool


class MultiGpuPlan(Document):
    """The smallest number of one GPU that holds the job, with the strategy and fixes."""

    device: str
    name: str
    gpus: int = Field(ge=1)
    strategy: str = Field(description="single, DDP, ZeRO-1, ZeRO-2 or FSDP (ZeRO-3)")
    fixes: list[str] = Field(default_factory=list, description="fixes applied, in order")
    memory: MemoryBreakdown
    fits: bool
    plan: str = Field(
        description='e.g. "4 × A100 80GB with FSDP (ZeRO-3) and activation checkpointing"'
    )
    precision: str | None = Field(None, description="the precision the plan runs in")
    batch_per_gpu: int | None = Field(
        None, ge=1, description="samples per GPU per step (gradient accumulation keeps the rest)"
    )
    step_time_s: float | None = Field(
        None, description="one step of the plan (every GPU), recomputation and sharding included"
    )
    total_time_s: float | None = Field(None, description="the job on the plan")
    throughput_samples_s: float | None = None
    notes: list[str] = Field(default_factory=list)


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
    fit_reason: str | None = Field(None, description="why fits is what it is (bounds or estimate)")
    plan: MultiGpuPlan | None = Field(
        None, description="for a GPU the job does not fit alone: the smallest plan that holds it"
    )
    fits_planned: bool | None = Field(
        None,
        description="recommend: the job as recommended fits this device (or this row's GPUs): as written, or with the fixes or the plan that make it fit; null only when the bounds straddle the memory (or it is unknown)",
    )
    planned_reason: str | None = Field(
        None,
        description="why fits_planned is what it is: the fixes or plan it assumes, or the options that would settle it",
    )
    basis: str | None = Field(
        None, description="measured here, or catalog peak x achieved fraction"
    )
    measured: bool = Field(
        False, description="true when step_time_s was measured by running the model"
    )
    serving: ServingFigures | None = Field(
        None,
        description="--task serve: tokens/s, time to first token, KV cache and concurrency (step_time_s is one batch of --concurrency requests, throughput_samples_s requests/s)",
    )
    finetune: FinetuneFigures | None = Field(
        None, description="--task finetune: method, trainable parameters, tokens/s, lighter options"
    )
    time_breakdown_s: dict[str, float] = Field(
        default_factory=dict,
        description="seconds per step by part (gemm, conv, memory, first_touch, optimizer, overhead, comm)",
    )
    assumptions: list[str] = Field(default_factory=list)
    time_band_s: TimeBand | None = Field(
        None,
        description="step_time_s's error band for its class, from the project's validation runs, with the command that checks it",
    )
    total_time_band_s: TimeBand | None = Field(
        None, description="total_time_s's error band (same ratios as the step)"
    )
    throughput_band: TimeBand | None = Field(
        None, description="throughput_samples_s's error band (the inverse ratios)"
    )
    cost: Cost | None = Field(
        None,
        description="what the job costs on this device: the cheapest priced instance carrying it (or the instance named), own hardware for `here` with --price-per-hour; the energy at board power; every price with its date",
    )


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
    cheapest: Choice | None = Field(
        None,
        description="the cheapest priced option (instance, on demand) that meets the deadline, else the fastest priced one (meets_deadline false); serving: by the month",
    )
    fastest: Choice | None = Field(None, description="the option with the shortest estimated time")
    budget_low: Choice | None = Field(
        None,
        description="--budget low: the cheapest option meeting the deadline with spot instances, every GPU generation, and CPU instances where S5 holds; why and cites say what it rests on",
    )
    cheapest_cpu: Choice | None = Field(
        None,
        description="the cheapest priced CPU option (a CPU instance, or here) that meets the deadline",
    )
    cheapest_gpu: Choice | None = Field(
        None, description="the cheapest priced GPU option that meets the deadline"
    )
