"""Counted memory of a model: what one training step and one inference pass held at peak.

These are the figures :mod:`hwadvisor.estimate.workload.memtrack` counts (on fake
tensors, or by a real run on the CPU where fake tensors cannot run the model), kept in a
form the memory model scales to any batch: at the peak of forward and backward the job
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

from enum import Enum

from pydantic import ConfigDict, Field

from hwadvisor.models.common import Document


class CountMethod(str, Enum):
    """How a model's peaks were counted."""

    FAKE = "fake"
    REAL = "real"


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


class MemoryCounts(Document):
    """Counted peaks per precision, with how and when they were counted."""

    fp32: CountedPeak
    amp: CountedPeak | None = Field(None, description="CPU autocast to bfloat16")
    bf16: CountedPeak | None = Field(None, description="16-bit weights, fp32 master copies")
    batches: tuple[int, int] = Field(description="the two batch sizes counted")
    leaf_modules: int = Field(1, ge=1, description="modules without children (checkpointing)")
    method: CountMethod = Field(
        CountMethod.FAKE,
        description="fake: one step and one pass on fake tensors; real: one step and one "
        "pass run for real on the CPU at two small batches, the peaks scaled linearly",
    )
    source: str = Field(min_length=3)
    date: str = Field(pattern=r"^\d{4}-\d{2}(-\d{2})?$")


class _StrictPeak(CountedPeak):
    """:class:`CountedPeak` refusing unknown fields (catalog files)."""

    model_config = ConfigDict(extra="forbid")


class CatalogMemoryCounts(MemoryCounts):
    """:class:`MemoryCounts` as a catalog file holds them: unknown fields are an error."""

    model_config = ConfigDict(extra="forbid")

    fp32: _StrictPeak
    amp: _StrictPeak | None = Field(None, description="CPU autocast to bfloat16")
    bf16: _StrictPeak | None = Field(None, description="16-bit weights, fp32 master copies")
