"""Counting the memory of a training step and an inference pass on fake tensors.

The model is built on the meta device (its factory runs, no weight is allocated) and its
parameters and buffers are turned into fake CPU tensors of one
``torch._subclasses.fake_tensor.FakeTensorMode``. Then ONE training step (forward and
loss, backward, optimizer step) and ONE inference pass (eval mode, ``no_grad``) run on
them, and a tracker follows the LIVE storage bytes: every storage is counted when an
operator creates it and uncounted when it is freed, so the peak is the true high-water
mark of live tensors, not the sum of everything ever allocated. At each peak the live
bytes are split into parameters (and buffers), gradients, optimizer state, activations
(everything kept from the forward pass, the input batch included) and temporaries
(backward and optimizer-step intermediates).

Two trackers, in order: torch's own ``torch.distributed._tools.mem_tracker.MemTracker``
(private API), and where it raises, a small dispatch-mode tracker of ours that records
storages by address with weak-reference callbacks and sorts them by what they are. The
result says which one counted. Building the model directly under ``FakeTensorMode`` (the
recipe in torch's documentation) fails on models that deep-copy their layers, such as
``nn.TransformerEncoder`` ("Mixing fake modes"): the copy lands in another fake mode.
Building on the meta device and converting afterwards avoids that.

Physics the single step shows: optimizer state is allocated lazily at the first step, so
from the second step on it is live through forward and backward as well; the steady
peak of a step is the largest of (forward + state), (backward + state) and the optimizer
step itself. Fake tensors are on the CPU device, so the optimizer runs as it does on a
CPU (PyTorch's for-loop AdamW; GPUs default to the foreach form, priced by
``estimate.memory``) and ``amp`` is CPU autocast to bfloat16.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.cpu_alloc import Event
from hwadvisor.estimate.workload.memjob import FakeJob, Live, fake_model, nbytes
from hwadvisor.estimate.workload.memtrackers import (
    OWN_TRACKER,
    TORCH_TRACKER,
    TorchTracker,
    own_tracker_class,
)

__all__ = ["OWN_TRACKER", "TORCH_TRACKER", "Live", "MemCount", "count_memory", "fake_model"]
PRECISIONS = ("fp32", "amp", "bf16", "fp16")


@dataclass(frozen=True)
class MemCount:
    """What one counted step and one inference pass held at their peaks."""

    batch: int
    precision: str
    optimizer: str
    params: int
    forward: Live
    backward: Live
    step: Live
    inference: Live
    state_bytes: int
    tracker: str
    leaf_modules: int
    train_events: tuple[Event, ...] = ()
    infer_events: tuple[Event, ...] = ()
    torch_peak: Live | None = None
    torch_failed: str | None = None

    @property
    def first_step_peak(self) -> Live:
        """The peak of the first step (no optimizer state before its optimizer step)."""
        return max((self.forward, self.backward, self.step), key=lambda live: live.total)

    @property
    def train_peak(self) -> Live:
        """The peak of a step once optimizer state exists (the second step on)."""
        options = [
            replace(self.forward, optimizer=self.state_bytes),
            replace(self.backward, optimizer=self.state_bytes),
            self.step,
        ]
        return max(options, key=lambda live: live.total)


def _run(own: Any, job: FakeJob, torch_tracker: TorchTracker | None) -> dict[str, Live]:
    """The inference pass, then one training step; returns each phase's peak."""
    mine: dict[str, Live] = {}
    theirs: dict[str, Live] = {}

    @contextmanager
    def phase(name: str) -> Iterator[None]:
        if torch_tracker is None:
            with own.phase(name, mine):
                yield
        else:
            with torch_tracker.phase(name, theirs), own.phase(name, mine):
                yield

    with job.mode:
        with phase("inference"):
            job.infer()
        with phase("forward"):
            loss = job.forward()
        with phase("backward"):
            loss.backward()
            del loss
        with phase("step"):
            job.step()
        with own.phase("zero_grad", mine):
            job.opt.zero_grad(set_to_none=True)
            job.release()
    if "step" in theirs:
        mine["torch"] = theirs["step"]
    return mine


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


#: How many times :func:`_repeated` runs a phase: its last repetition is the steady one.
REPEATS = 3


def _repeated(events: list[Event]) -> list[Event]:
    """A phase's events three times over, the second and third less what the first
    left allocated (the optimizer state, allocated lazily once and kept); the keys of a
    repetition are ``(repetition, key)``."""
    freed = {key for op, key, _ in events if op == "f"}
    kept = {key for op, key, _ in events if op != "f" and key not in freed}
    out = list(events)
    for again in range(2, REPEATS + 1):
        out += [(op, (again, key), n) for op, key, n in events if key not in kept]
    return out


def in_last_repeat(key: Hashable) -> bool:
    """Whether ``key`` is one of the last repetition's (:func:`_repeated`); no key of a
    tracker is a pair that starts with an int."""
    return isinstance(key, tuple) and len(key) == 2 and key[0] == REPEATS


def _sequences(own: Any) -> tuple[tuple[Event, ...], tuple[Event, ...]]:
    """The allocation sequences of three inference passes and of three training steps.

    A job runs many passes, and under glibc the heap a pass leaves shapes the next one's
    (the freed chunks it splits or reuses): the resident peak of one pass alone is below
    the steady one (a MobileNet at batch 8 peaked 39, 51 and 59 MB over its first three
    passes, traced on this project's machine)."""
    events = own.events
    prefix = events[: own.marks["inference"][0]]
    infer = prefix + _repeated(events[slice(*own.marks["inference"])])
    first, last = own.marks["forward"][0], own.marks["zero_grad"][1]
    train = prefix + _repeated(events[first:last])
    return tuple(infer), tuple(train)


def count_memory(
    build: Callable[[], Any],
    input_shape: list[int],
    batch: int,
    *,
    tokens: bool,
    precision: str = "fp32",
    optimizer: str = "adamw",
    spec: str = "model",
    trackers: tuple[str, ...] = (TORCH_TRACKER, OWN_TRACKER),
) -> MemCount:
    """Count one training step and one inference pass of the model ``build`` returns.

    ``build`` returns a fresh meta-device module each call (each try gets its own).
    ``trackers`` is the order to try; the first that completes counts. Our tracker runs
    beside torch's in every try: it gives the per-phase peaks and the allocation sequence,
    and torch's peak of the step (``torch_peak``) checks them. Where torch's raises, ours
    runs alone and ``torch_failed`` keeps the reason. A model whose fake run raises under
    every tracker is one UsageError line with the model's own error.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    failed: str | None = None
    if precision not in PRECISIONS:
        raise UsageError(f"memory counting needs one of {'|'.join(PRECISIONS)}, got {precision!r}")
    errors: list[str] = []
    for name in trackers:
        model = build()
        mode = FakeTensorMode()
        fake_model(model, mode, _half(precision))
        try:
            job = FakeJob(model, mode, batch, input_shape, tokens, precision, optimizer)
            own = own_tracker_class()(job)
            phases = _run(own, job, TorchTracker(job) if name == TORCH_TRACKER else None)
        except UsageError as exc:
            raise UsageError(f"model '{spec}': {exc.message}") from exc
        except Exception as exc:  # the model's (or the tracker's) own error
            errors.append(_one_line(exc))
            if name == TORCH_TRACKER:
                failed = errors[-1]
            continue
        infer, train = _sequences(own)
        return MemCount(
            batch=batch,
            precision=precision,
            optimizer=optimizer,
            params=sum(p.numel() for p in model.parameters()),
            forward=phases["forward"],
            backward=phases["backward"],
            step=phases["step"],
            inference=phases["inference"],
            state_bytes=nbytes(job.state()),
            tracker=name,
            torch_peak=phases.get("torch"),
            torch_failed=failed,
            leaf_modules=sum(1 for m in model.modules() if not list(m.children())),
            train_events=train,
            infer_events=infer,
        )
    shape = ",".join(str(d) for d in input_shape)
    raise UsageError(
        f"model '{spec}': a training step at input shape {shape} failed on fake tensors: "
        f"{errors[-1] if errors else 'no tracker'}"
    )


def _half(precision: str) -> Any:
    import torch

    return {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
