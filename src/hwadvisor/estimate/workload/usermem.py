"""A user's own model (``module:callable``, ``file.py:callable``): its memory, counted.

:func:`count_user_model` counts one training step and one inference pass on fake
tensors (:mod:`.memtrack`), else, for a model that reads its tensors' values, by a real
run on the CPU (:mod:`.realrun`); only a model that runs neither way is refused.
:func:`user_memory_counts` adds the assumption line that says which way it was counted;
the workload carries the counts (``Workload.memory_counts``) and
:func:`estimate.memory.breakdown` prices every plan from them.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.counting import build_on_meta
from hwadvisor.estimate.workload.loading import load_callable
from hwadvisor.estimate.workload.memtrack import memory_counts, takes_tokens
from hwadvisor.models.memory import CountMethod, MemoryCounts
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


def count_user_model(
    spec: str,
    input_shape: list[int],
    batch: int,
    *,
    precision: str = "fp32",
    optimizer: str = "adamw",
) -> MemoryCounts:
    """A user's model counted at its batch: the linear counts, on fake tensors at
    ``batch`` and ``batch + 1``, else by a real run on the CPU at 1 and 2.

    Errors are one UsageError line with the model's own error.
    """
    from hwadvisor.estimate.workload.realrun import RealRunFailed, failed_both, one_line, run_real

    fn = load_callable(spec)

    def build() -> Any:
        return build_on_meta(fn, spec)

    tokens = takes_tokens(build())
    counted = "bf16" if precision == "fp16" else precision
    kwargs: dict[str, Any] = {"tokens": tokens, "precisions": (counted,), "optimizer": optimizer}
    try:
        return memory_counts(build, input_shape, batches=(batch, batch + 1), spec=spec, **kwargs)
    except UsageError as exc:
        raise UsageError(f"model '{spec}': {exc.message}") from exc
    except Exception as exc:
        fake_error = one_line(exc)
    try:
        counts: MemoryCounts = run_real("memory", spec, input_shape=input_shape, **kwargs)
    except RealRunFailed as exc:
        shape = ",".join(str(d) for d in input_shape)
        what = f"a training step at input shape {shape}"
        raise failed_both(spec, what, "on fake tensors", fake_error, exc) from exc
    return counts


def real_memory_counts(
    spec: str, *, input_shape: list[int], tokens: bool, precisions: tuple[str, ...], optimizer: str
) -> MemoryCounts:
    """The model ``spec`` names, counted by a real run at batch 1 and 2 (a real run's
    child calls this)."""
    fn = load_callable(spec)
    return memory_counts(
        fn, input_shape, tokens=tokens, batches=(1, 2), precisions=precisions,
        optimizer=optimizer, spec=spec, real=True,
    )  # fmt: skip


def user_memory_counts(
    spec: str,
    input_shape: list[int],
    batch: int,
    *,
    precision: Precision,
    optimizer: Optimizer,
) -> tuple[MemoryCounts, list[str]]:
    """The counted peaks of ``spec``'s model and the assumption line that says how."""
    counts = count_user_model(
        spec, input_shape, batch, precision=_COUNTED[precision], optimizer=optimizer.value
    )
    return counts, [method_note(counts, optimizer.value)]


def method_note(counts: MemoryCounts, optimizer: str) -> str:
    """The assumption line naming how ``counts`` were counted."""
    precisions = ", ".join(p for p in ("fp32", "amp", "bf16") if getattr(counts, p) is not None)
    a, b = counts.batches
    what = f"one training step with {optimizer} and one inference pass"
    if counts.method is CountMethod.REAL:
        how = (
            f"memory counted by a real run at batch {a} and {b} on the CPU, scaled linearly "
            f"to the job's batch (fake tensors cannot run this model: it reads its "
            f"tensors' values); {what}"
        )
    else:
        how = f"memory counted on fake tensors at batch {a} and {b}; {what}"
    return (
        f"{how}, {precisions}: the peak of live tensors, split into parameters, "
        "gradients, optimizer state, activations and temporaries"
    )
