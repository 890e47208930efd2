"""Counting a user's model by a real run on the CPU, where fake tensors cannot run it.

Some models read their tensors' values while they run: ``nn.TransformerEncoder`` given a
mask compares it with a causal one (``torch.equal``), a fast path checks a padding mask,
code branches on ``.item()``. Fake tensors and the meta device have no values, so such a
model is counted by running it for real, at small batches (1 and 2), on the CPU, with
real (random) weights, and its counts are scaled linearly in the batch.

The run happens in the contained child that counts the model
(:mod:`.contained`), under its deadline and address-space limit, so a model too large for
this machine fails there rather than taking the machine down; the torch random state is
seeded for the run and restored after it.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.errors import UsageError


class RealRunFailed(UsageError):
    """A model failed in its real run too: ``reason`` says how (one line)."""

    def __init__(self, spec: str, reason: str) -> None:
        super().__init__(f"model '{spec}': {reason}")
        self.reason = reason


def failed_both(spec: str, what: str, where: str, first: str, exc: RealRunFailed) -> UsageError:
    """One line for a model that failed ``where`` (with ``first``) and in its real run."""
    second = exc.reason.removeprefix("a real run on the CPU failed: ")
    said = f"{where} ({first}) and in a real run on the CPU ({second})"
    if second == first:
        said = f"{where} and in a real run on the CPU: {first}"
    return UsageError(f"model '{spec}': {what} failed {said}")


def run_real(task: str, spec: str, **kwargs: Any) -> Any:
    """Run ``task`` (a function of :data:`TASKS`) for the model ``spec`` by a real run on
    the CPU; its result, or a :class:`RealRunFailed` with the model's error."""
    import importlib

    import torch

    module, _, name = TASKS[task].partition(":")
    function = getattr(importlib.import_module(module), name)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            return function(spec, **kwargs)
    except UsageError as exc:
        raise RealRunFailed(spec, exc.message) from exc
    except MemoryError as exc:
        raise RealRunFailed(spec, "a real run on the CPU ran out of memory") from exc
    except Exception as exc:  # the model's own error
        raise RealRunFailed(spec, f"a real run on the CPU failed: {one_line(exc)}") from exc


#: What a real run may do: task name -> ``module:function``,
#: called with the model's spec and the task's keywords.
TASKS = {
    "memory": "hwadvisor.estimate.workload.usermem:real_memory_counts",
    "operators": "hwadvisor.estimate.workload.counting:count_real_spec",
}


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
