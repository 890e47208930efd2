"""The advice document (``hwadvisor recommend --json``): verdict, findings, checklist."""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from hwadvisor.models.band import TimeBand
from hwadvisor.models.bench import BenchReport
from hwadvisor.models.common import Document, Versioned
from hwadvisor.models.cost import Choice, Cost
from hwadvisor.models.estimate import DeviceEstimate, MemoryBreakdown
from hwadvisor.models.finding import Finding
from hwadvisor.models.llm import FinetuneFigures, ServingFigures
from hwadvisor.models.workload import Budget, Scenario, Team, Workload


class DeviceClass(str, Enum):
    """The class of hardware a verdict recommends."""

    CPU = "cpu"
    GPU = "gpu"
    MULTI_GPU = "multi_gpu"


class Confidence(str, Enum):
    """How far the verdict rests on measurements and estimates rather than defaults."""

    LOW = "low"
    MEDIUM = "medium"
    HIGH = "high"


class PlanSummary(Document):
    """How a job runs on GPUs, in brief: how many of which, the strategy, the fixes, named."""

    device: str | None = Field(
        None, description="the GPU's catalog id (local:<id>: this machine's)"
    )
    name: str | None = None
    gpus: int = Field(1, ge=1)
    strategy: str = Field(
        "single", description="single, DDP, ZeRO-1, ZeRO-2, FSDP (ZeRO-3) or tensor parallel"
    )
    fixes: list[str] = Field(default_factory=list, description="fixes applied, in order")
    text: str = Field(
        description='e.g. "4 × NVIDIA A100 SXM 80GB with FSDP (ZeRO-3) and activation checkpointing"'
    )


class ChosenOption(Document):
    """The row of the estimate table the verdict chose, and why that one."""

    device: str = Field(description="the row's device id (here, local:<id>, a catalog id)")
    name: str
    gpus: int = Field(1, ge=1)
    here: bool = Field(description="this machine's own CPU or GPUs")
    time_s: float | None = Field(None, description="the job's time there (serving: null)")
    usd: float | None = Field(None, description="what it costs there: per job, or a month")
    per: str = Field("job", description="what usd pays for: job, month or 1000 requests")
    hourly_usd: float | None = Field(
        None,
        description="the hourly price of what it runs on (the rank when the job's bill is not known)",
    )
    instance: str | None = Field(None, description="the instance type it is priced on")
    instances: int | None = Field(
        None, description="serving: instances billed for the month at the QPS"
    )
    concurrency: int | None = Field(
        None, description="serving: sequences decoded together on each replica"
    )
    why: str = Field(description="how it was chosen among the options that do the job")
    feasible: int = Field(ge=0, description="options in the table that fit and meet the job")


class Verdict(Document):
    """The recommendation in one place: the device class, whether this machine fits, why."""

    device: DeviceClass
    fits_here: bool | None = Field(
        None, description="this machine runs the job as recommended; null when it cannot be told"
    )
    confidence: Confidence
    summary: str = Field(description="one sentence")
    rule: str | None = Field(
        None, description="the rule that decided the device class, or null for the fallback"
    )
    fits_reasons: list[str] = Field(default_factory=list, description="why fits_here has its value")
    fixes: list[str] = Field(
        default_factory=list,
        description="the fixes fits_here assumes on this machine (mixed precision, activation checkpointing, an 8-bit optimizer, sharding across its GPUs, ...): the job as recommended; empty when it fits as written",
    )
    plan: PlanSummary | None = Field(
        None,
        description="how the recommended device class runs the job: N x GPU with its strategy and fixes (this machine's own GPUs when they hold it); null for a CPU, or when no plan is known",
    )
    option: ChosenOption | None = Field(
        None,
        description="the row the verdict chose: the class, the plan and fits_here follow from it; null when no row both fits and meets the job",
    )
    confidence_reasons: list[str] = Field(
        default_factory=list,
        description="why the confidence is lower than the deciding rule's: the measurements it rests on were taken on a busy machine, unreliable, or missing",
    )


class MigrationStep(Document):
    """One item of the CPU-to-GPU checklist, personalised to this machine."""

    rule: str
    title: str
    step: str
    source: list[str]


class MachineSummary(Document):
    """The facts the advice was drawn from, in brief."""

    hostname: str | None = None
    cpu_model: str | None = None
    usable_cores: int | None = None
    memory_total_bytes: int | None = None
    gpu_count: int = 0
    gpus: list[str] = Field(default_factory=list, description="GPU names with memory")
    torch: str | None = None
    from_file: str | None = Field(
        None, description="the --facts file, when advising for another machine"
    )


class Alternative(Document):
    """The workload on another device (catalog GPU, several GPUs)."""

    device: str
    name: str | None = None
    gpus: int = 1
    time_s: float | None = None
    memory_bytes: int | None = None
    memory_fit: bool | None = None
    basis: str | None = None
    cost: Cost | None = Field(None, description="what the job costs there, the price dated")
    serving: ServingFigures | None = Field(
        None, description="--task serve: tokens/s, time to first token, KV cache there"
    )
    finetune: FinetuneFigures | None = Field(
        None, description="--task finetune: method, tokens/s, the answers and fixes there"
    )
    memory: MemoryBreakdown | None = Field(
        None, description="the job's memory there by part (per GPU)"
    )
    device_memory_bytes: int | None = Field(None, description="one device's memory there")
    time_band_s: TimeBand | None = Field(
        None, description="time_s's error band for its class, with the command that checks it"
    )
    plan: PlanSummary | None = Field(
        None,
        description="a GPU that does not hold the job as written: the smallest plan on it that does (how many, the strategy, the fixes)",
    )
    fits_planned: bool | None = Field(
        None,
        description="the job as recommended fits these GPUs: as written, or with its fixes or a plan within their count; null when the bounds straddle the memory",
    )


class AdviceEstimates(Document):
    """Time and memory of the workload here and on alternatives."""

    here: DeviceEstimate | None = None
    alternatives: list[Alternative] = Field(default_factory=list)
    cheapest: Choice | None = Field(
        None, description="the cheapest priced option that meets the deadline (see the estimate)"
    )
    fastest: Choice | None = Field(None, description="the option with the shortest time")
    budget_low: Choice | None = Field(
        None, description="--budget low: spot, every GPU generation, CPU instances where S5 holds"
    )
    cheapest_cpu: Choice | None = Field(None, description="the cheapest CPU option meeting it")
    cheapest_gpu: Choice | None = Field(None, description="the cheapest GPU option meeting it")


class AdviceOptions(Document):
    """The options that shaped the advice."""

    budget: Budget = Budget.NORMAL
    team: Team | None = None
    rules_paths: list[str] = Field(
        default_factory=list, description="extra rule folders, in override order"
    )


class Advice(Versioned):
    """What ``hwadvisor recommend`` concluded, with the evidence and the reasons."""

    scenario: Scenario
    options: AdviceOptions = Field(default_factory=AdviceOptions)
    workload: Workload
    machine: MachineSummary = Field(default_factory=MachineSummary)
    verdict: Verdict
    estimates: AdviceEstimates = Field(default_factory=AdviceEstimates)
    findings: list[Finding] = Field(default_factory=list)
    migration: list[MigrationStep] = Field(default_factory=list)
    bench: BenchReport | None = None
    rules_evaluated: int = 0
