"""A user's own model (``module:callable``, ``file.py:callable``): its memory, counted.

:func:`user_memory_counts` runs :func:`estimate.memcount.count_user_model` for the job
(one training step and one inference pass on fake tensors, at the job's batch and the
next, in fp32 and the job's precision) and says in the assumptions what was counted and
which tracker counted it. The workload carries the counts (``Workload.memory_counts``)
and :func:`estimate.memory.breakdown` prices every plan from them: parameters,
gradients, optimizer state, activations and temporaries at the peak, not their sum.
"""

from __future__ import annotations

from hwadvisor.models.memory import MemoryCounts
from hwadvisor.models.workload import Optimizer, Precision

#: The precision each workload precision is counted in (int8 weights: no int8 training
#: step to count; the fp32 count prices their activations, as for catalog models).
_COUNTED = {
    Precision.FP32: "fp32",
    Precision.AMP: "amp",
    Precision.BF16: "bf16",
    Precision.FP16: "fp16",
    Precision.INT8: "fp32",
}


def user_memory_counts(
    spec: str,
    input_shape: list[int],
    batch: int,
    *,
    precision: Precision,
    optimizer: Optimizer,
) -> tuple[MemoryCounts, list[str]]:
    """The counted peaks of ``spec``'s model and the assumption lines that say how.

    A model whose fake-tensor run raises is one UsageError line with its own error.
    """
    from hwadvisor.estimate.workload.memcount import count_user_model

    counts, job = count_user_model(
        spec,
        input_shape,
        batch,
        precision=_COUNTED[precision],
        optimizer=optimizer.value,
    )
    counted = ", ".join(p for p in ("fp32", "amp", "bf16") if getattr(counts, p) is not None)
    a, b = counts.batches
    notes = [
        f"memory counted on fake tensors (one training step with {optimizer.value}, one "
        f"inference pass) at batch {a} and {b}, {counted}; tracker: {counts.tracker}; "
        "the peak of live tensors, split into parameters, gradients, optimizer state, "
        "activations and temporaries"
    ]
    if job.torch_failed:
        notes.append(
            f"torch's MemTracker failed on this model ({job.torch_failed}); "
            "hwadvisor's storage tracker counted it"
        )
    elif job.torch_peak is not None and not agrees(job.torch_peak.total, job.first_step_peak.total):
        notes.append(
            f"torch's MemTracker peaks at {job.torch_peak.total:,} bytes in the first step "
            f"where hwadvisor's storage tracker counts {job.first_step_peak.total:,}; "
            "the estimate uses hwadvisor's (it follows each phase and the real kernels' "
            "paths, docs/estimates.md section 2.1)"
        )
    return counts, notes


def agrees(theirs: int, ours: int) -> bool:
    """Whether torch's peak and ours agree: to within a 64-byte alignment slack or 1%."""
    return abs(theirs - ours) <= max(64, 0.01 * max(theirs, ours))
