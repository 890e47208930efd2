"""Counting a user's model by a real run on the CPU, where fake tensors cannot run it.

Some models read their tensors' values while they run: ``nn.TransformerEncoder`` given a
mask compares it with a causal one (``torch.equal``), a fast path checks a padding mask,
code branches on ``.item()``. Fake tensors and the meta device have no values, so such a
model is counted by running it for real, at small batches (1 and 2), on the CPU, with
real (random) weights, and its counts are scaled linearly in the batch.

The run happens in a child process (``python -m hwadvisor.estimate.workload.realrun``)
with a deadline (:data:`DEADLINE_S`, killed past it) and an address-space limit
(``resource.setrlimit(RLIMIT_AS)``, :func:`address_limit`), so a model too large for
this machine fails there rather than taking the machine down. The request and the
answer travel as pickles: the request on the child's stdin, the answer in a file.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError

#: Seconds a real run may take: importing torch and the model, then one training step
#: and one inference pass at batches 1 and 2 per precision counted.
DEADLINE_S = 300.0
#: Virtual address space the child may map beyond the memory available now: importing
#: torch alone maps about 1.5 GiB it never touches (its libraries, thread stacks).
ADDRESS_SLACK = 4 << 30


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


def address_limit() -> int | None:
    """Bytes of address space the child may map: the memory available now plus the
    slack (None where it cannot be read: no limit is set)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available) + ADDRESS_SLACK
    except Exception:
        return None


def run_child(task: str, spec: str, **kwargs: Any) -> Any:
    """Run ``task`` (a function of this module's :data:`TASKS`) for the model ``spec``
    in a bounded child process; its result, or a UsageError with the model's error."""
    request = {"task": task, "spec": spec, "limit": address_limit(), "kwargs": kwargs}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    with tempfile.TemporaryDirectory(prefix="hwadvisor-realrun-") as tmp:
        answer = Path(tmp) / "answer.pickle"
        request["answer"] = str(answer)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "hwadvisor.estimate.workload.realrun"],
                input=pickle.dumps(request),
                capture_output=True,
                timeout=DEADLINE_S,
                env=env,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise RealRunFailed(
                spec, f"a real run on the CPU took over {DEADLINE_S:.0f} s"
            ) from exc
        if not answer.is_file():
            lines = proc.stderr.decode(errors="replace").strip().splitlines()
            why = lines[-1] if lines else f"exit status {proc.returncode}"
            raise RealRunFailed(spec, f"a real run on the CPU failed: {why}")
        ok, value = pickle.loads(answer.read_bytes())
    if not ok:
        raise RealRunFailed(spec, value)
    return value


#: What a child may run: task name -> ``module:function`` (imported in the child alone),
#: called with the model's spec and the task's keywords.
TASKS = {
    "memory": "hwadvisor.estimate.workload.usermem:real_memory_counts",
    "operators": "hwadvisor.estimate.workload.counting:count_real_spec",
}


def one_line(exc: BaseException) -> str:
    """An exception as one line: its type and the first line of its message."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _main() -> None:
    """The child: read the request, bound this process, run the task, write the answer."""
    request = pickle.loads(sys.stdin.buffer.read())
    if request["limit"] is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (request["limit"], request["limit"]))
    sys.stdout = sys.stderr  # the user's prints stay out of the answer
    try:
        import importlib

        import torch

        torch.manual_seed(0)
        module, _, name = TASKS[request["task"]].partition(":")
        task = getattr(importlib.import_module(module), name)
        answer = (True, task(request["spec"], **request["kwargs"]))
    except UsageError as exc:
        answer = (False, exc.message)
    except MemoryError:
        answer = (False, "a real run on the CPU ran out of memory")
    except Exception as exc:  # the model's own error
        answer = (False, f"a real run on the CPU failed: {one_line(exc)}")
    Path(request["answer"]).write_bytes(pickle.dumps(answer))


if __name__ == "__main__":
    _main()
