"""Counted memory of a model: what one training step and one inference pass held at peak.

These are the figures :mod:`hwadvisor.estimate.workload.memtrack` counts on fake tensors, kept in
a form the memory model scales to any batch: at the peak of forward and backward the job
holds its weights and optimizer state plus ``fixed + per_sample x batch`` bytes
(activations, the gradients already made, 16-bit weight copies, temporaries); the
optimizer step holds weights, gradients and state plus ``step_temporaries``; an inference
pass holds its weights plus ``infer_fixed + infer_per_sample x batch``. Catalog entries
carry them (``memory_counts``) as user models do once counted.

In a document (an estimate's or advice's workload) they ignore unknown fields like every
other part of a document (docs/json.md: a newer minor release's document still loads);
the catalog reads them through :class:`CatalogMemoryCounts`, which refuses them, so a
typo in a catalog file is still an error.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from hwadvisor.models.common import Document


class CountedPeak(Document):
    """Bytes at the peaks of one precision, as linear functions of the batch."""

    per_sample: float = Field(ge=0, description="bytes per sample at the forward/backward peak")
    fixed: float = Field(
        description="batch-independent bytes at that peak beyond the weights and optimizer "
        "state (gradients already made, 16-bit weight copies, temporaries); may be "
        "negative by rounding of the fit"
    )
    gradients_at_peak: float = Field(0.0, ge=0, description="of `fixed`, the gradients")
    step_temporaries: float = Field(
        0.0, ge=0, description="optimizer-step intermediates beyond its state (CPU for-loop)"
    )
    infer_per_sample: float = Field(ge=0, description="bytes per sample at the inference peak")
    infer_fixed: float = Field(0.0, description="batch-independent bytes beyond the weights")


class FaultPoint(BaseModel):
    """The page faults of a steady step and pass at one counted batch."""

    model_config = ConfigDict(extra="forbid")

    batch: int = Field(ge=1)
    train: float = Field(ge=0, description="bytes a training step faults in")
    infer: float = Field(ge=0, description="bytes an inference pass faults in")


class MemoryCounts(Document):
    """Counted peaks per precision, with what counted them and when."""

    fp32: CountedPeak
    amp: CountedPeak | None = Field(None, description="CPU autocast to bfloat16")
    bf16: CountedPeak | None = Field(None, description="16-bit weights, fp32 master copies")
    batches: tuple[int, int] = Field(description="the two batch sizes counted")
    leaf_modules: int = Field(1, ge=1, description="modules without children (checkpointing)")
    cpu_resident_ratio: float | None = Field(
        None,
        ge=1,
        description="resident over live bytes of three fp32 training steps at the larger "
        "batch, replayed through glibc's malloc (hwadvisor.estimate.workload.cpu_alloc)",
    )
    cpu_infer_resident_ratio: float | None = Field(
        None, ge=1, description="the same for the inference pass"
    )
    cpu_upper_ratio: float | None = Field(
        None,
        ge=1,
        description="the training steps replayed with every small fragment kept in use (no "
        "chunk merges across them): the CPU upper bound's allowance",
    )
    cpu_faults: list[FaultPoint] | None = Field(
        None,
        description="bytes of the pages a steady fp32 step faults in on a CPU, at each "
        "counted batch: the third of three steps (and of three inference passes) replayed "
        "through glibc's malloc (hwadvisor.estimate.workload.cpu_alloc.replay), the mean over its "
        "start states",
    )
    tracker: str = Field(description="torch MemTracker, or hwadvisor storage tracker")
    source: str = Field(min_length=3)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")

    def faults_at(self, batch: float, *, infer: bool = False) -> float | None:
        """Bytes a steady step (``infer``: pass) faults in at ``batch``: the lines between
        the counted batches, the last one's past them, never below zero; None where not
        counted."""
        if not self.cpu_faults:
            return None
        pts = sorted((p.batch, p.infer if infer else p.train) for p in self.cpu_faults)
        if len(pts) == 1:
            return max(0.0, pts[0][1])
        i = next((k for k in range(1, len(pts)) if batch <= pts[k][0]), len(pts) - 1)
        (a, fa), (b, fb) = pts[i - 1], pts[i]
        return max(0.0, fa + (fb - fa) * (batch - a) / (b - a))


class _StrictPeak(CountedPeak):
    """:class:`CountedPeak` refusing unknown fields (catalog files)."""

    model_config = ConfigDict(extra="forbid")


class CatalogMemoryCounts(MemoryCounts):
    """:class:`MemoryCounts` as a catalog file holds them: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")

    fp32: _StrictPeak
    amp: _StrictPeak | None = Field(None, description="CPU autocast to bfloat16")
    bf16: _StrictPeak | None = Field(None, description="16-bit weights, fp32 master copies")
