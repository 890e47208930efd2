"""The fleet ranking's documents: each machine's place, its hardware group, the reports
skipped and the ranking itself (``hwadvisor fleet --json``).

Ranked by :func:`hwadvisor.export.fleet.rank_fleet`; defined here with the other
documents so that the terminal view (:mod:`hwadvisor.render.fleet`) reads them without
depending on the code that ranks.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from hwadvisor.models.common import Document, Versioned
from hwadvisor.models.cost import Cost
from hwadvisor.models.workload import Workload

__all__ = ["FleetEntry", "FleetGroup", "FleetReport", "FleetSkip", "FleetStatus", "RankBy"]


class FleetStatus(str, Enum):
    """How a machine stands for the workload, best first."""

    FITS = "fits"
    UNKNOWN = "unknown"
    TOO_SLOW = "too_slow"
    NO_FIT = "does_not_fit"


class RankBy(str, Enum):
    """What orders machines of equal status (``fleet --by``)."""

    TIME = "time"
    COST = "cost"
    ENERGY = "energy"


class FleetEntry(Document):
    """One machine's place in the ranking."""

    rank: int
    source: str = Field(description="the report file")
    hostname: str | None = None
    device: str = Field(description="what runs the job there: cpu, gpu or multi_gpu")
    gpus: list[str] = Field(default_factory=list, description="GPU names with memory")
    usable_cores: int | None = None
    status: FleetStatus
    fits_memory: bool | None = None
    time_s: float | None = Field(
        None, description="training: total time; inference: time per batch"
    )
    memory_bytes: int | None = None
    device_memory_bytes: int | None = None
    priced_as: str = Field(
        description="what was priced: 'here' (the CPU) or a catalog GPU id, x GPUs"
    )
    basis: str | None = Field(
        None, description="measured here, or catalog peak x achieved fraction"
    )
    recommended_device: str | None = Field(
        None, description="the rule engine's verdict for this machine, if known"
    )
    rules_fit: bool | None = Field(None, description="the rule engine's fits_here for this machine")
    advice: str | None = Field(None, description="the rule engine's one-sentence verdict")
    reason: str
    roles: list[str] = Field(default_factory=list)
    cost: Cost | None = Field(
        None, description="dollars and energy of the workload there (training: the job)"
    )
    group: int | None = Field(
        None, description="the rank of this machine's hardware group (FleetReport.groups)"
    )


class FleetGroup(Document):
    """Machines of identical hardware: one estimate, verdict and price for all of them."""

    rank: int = Field(description="the group's place, by its best machine's rank")
    count: int = Field(description="how many machines (nodes) the group has")
    first: int = Field(description="the rank of its best machine, which stands for it")


class FleetSkip(Document):
    """A report that was not ranked, and why."""

    source: str
    reason: str


class FleetReport(Versioned):
    """The ranking of a fleet for one workload."""

    scenario: str | None = None
    by: RankBy = Field(RankBy.TIME, description="what orders machines of equal status")
    workload: Workload
    machines: list[FleetEntry] = Field(default_factory=list)
    groups: list[FleetGroup] = Field(
        default_factory=list,
        description="identical hardware ranked once: each group's size and best machine",
    )
    skipped: list[FleetSkip] = Field(default_factory=list)
    warnings: list[str] = Field(
        default_factory=list, description="stale prices used, each with its date"
    )
