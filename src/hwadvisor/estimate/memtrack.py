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

import functools
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.cpu_alloc import Event

TORCH_TRACKER = "torch MemTracker"
OWN_TRACKER = "hwadvisor storage tracker"
PRECISIONS = ("fp32", "amp", "bf16", "fp16")


@dataclass(frozen=True)
class Live:
    """Live storage bytes at one moment, by what they are."""

    parameters: int = 0
    gradients: int = 0
    optimizer: int = 0
    activations: int = 0
    temporaries: int = 0

    @property
    def total(self) -> int:
        """All live bytes."""
        return (
            self.parameters + self.gradients + self.optimizer + self.activations + self.temporaries
        )


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


def _storages(obj: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t.untyped_storage() for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def _nbytes(obj: Any) -> int:
    seen: dict[int, int] = {}
    for st in _storages(obj):
        seen[st._cdata] = st.nbytes()
    return sum(seen.values())


class _Job:
    """A fake model, its optimizer and input: what both trackers run."""

    def __init__(
        self,
        model: Any,
        mode: Any,
        batch: int,
        shape: list[int],
        tokens: bool,
        precision: str,
        optimizer: str,
    ) -> None:
        import torch

        self.model, self.mode, self.precision = model, mode, precision
        self.half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        params = list(model.parameters())
        with mode:
            if self.half is not None:
                # Mixed precision with fp32 master weights (the ZeRO paper's accounting):
                # 16-bit weights and gradients in the model, fp32 copies in the optimizer.
                self.masters = torch.nn.ParameterList(
                    [torch.nn.Parameter(p.detach().float()) for p in params]
                )
                opt_params = list(self.masters)
            else:
                self.masters = torch.nn.ParameterList()
                opt_params = params
            self.opt: Any
            if optimizer == "sgd":
                self.opt = torch.optim.SGD(opt_params, lr=0.01, momentum=0.9)
            else:
                self.opt = torch.optim.AdamW(opt_params)
            size = [batch, *shape]
            self.x = (
                torch.zeros(size, dtype=torch.long)
                if tokens
                else torch.zeros(size, dtype=self.half or torch.float32)
            )

    def _autocast(self) -> Any:
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "amp")

    def infer(self) -> None:
        """One inference pass: eval mode, no gradients."""
        import torch

        self.model.eval()
        with torch.no_grad(), self._autocast():
            out = self.model(self.x)
        del out
        self.model.train()

    def forward(self) -> Any:
        """Forward pass and a scalar loss over every floating output."""
        with self._autocast():
            out = self.model(self.x)
            floats = [t for t in _flat(out) if t.is_floating_point() and t.requires_grad]
            if not floats:
                raise UsageError("the model's output needs a floating tensor that requires grad")
            loss = sum(t.float().sum() for t in floats)
        return loss

    def step(self) -> None:
        """The optimizer step (16-bit gradients go to the fp32 masters one by one)."""
        if self.half is not None:
            for p, m in zip(self.model.parameters(), self.masters, strict=True):
                if p.grad is not None:
                    m.grad = p.grad.float()
                    p.grad = None
        self.opt.step()
        if self.half is not None:
            for p, m in zip(self.model.parameters(), self.masters, strict=True):
                p.data.copy_(m.data)
                m.grad = None

    def state(self) -> list[Any]:
        """Tensors of the optimizer state."""
        import torch

        return [
            v for s in self.opt.state.values() for v in s.values() if isinstance(v, torch.Tensor)
        ]


def _flat(out: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]


class _TorchTracker:
    """torch's MemTracker. Its peak is cumulative within one context and a module may run
    only once per context, so the inference pass gets a tracker of its own and the step's
    phases are read in turn: the peak after forward, after backward and after the
    optimizer step. That is enough for the steady peak: a phase that set no new peak
    cannot set the step's either, even with the optimizer state added."""

    name = TORCH_TRACKER

    def __init__(self, job: _Job) -> None:
        self.job = job
        self.mt: Any = None
        self.depth = 0

    def _new(self) -> Any:
        from torch.distributed._tools.mem_tracker import MemTracker

        mt = MemTracker()
        mt.track_external(self.job.model, self.job.masters, self.job.opt, self.job.x)
        return mt

    @contextmanager
    def phase(self, name: str, out: dict[str, Live]) -> Iterator[None]:
        """Count the peak (cumulative over the step) as phase ``name``."""
        if name in ("inference", "forward"):
            if self.mt is not None:
                self.mt.__exit__(None, None, None)
            self.mt = self._new()
            self.mt.__enter__()
        try:
            yield
        except BaseException:
            self.close()
            raise
        snaps: dict[Any, dict[Any, int]] = self.mt.get_tracker_snapshot("peak")
        snap = next(iter(snaps.values()), {})
        by = {getattr(k, "value", k): v for k, v in snap.items()}
        state = _nbytes(self.job.state()) if name == "step" else 0
        opt = int(by.get("Optstate", 0))
        out[name] = Live(
            parameters=int(by.get("Parameter", 0) + by.get("Buffer", 0)),
            gradients=int(by.get("Gradient", 0)),
            optimizer=min(opt, state),
            activations=int(by.get("Activation", 0) + by.get("Other", 0)),
            temporaries=int(by.get("Temp", 0)) + max(0, opt - state),
        )
        if name in ("inference", "step"):
            self.close()

    def close(self) -> None:
        """Leave the tracker's context (its global hooks go with it)."""
        if self.mt is not None:
            mt, self.mt = self.mt, None
            mt.__exit__(None, None, None)


def _own_tracker_class() -> type:
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Own(TorchDispatchMode):
        """Live storages by address, freed through weak-reference callbacks; it also
        records the allocation sequence (for the allocator replay) and sorts the live
        bytes by what they are at each new peak."""

        name = OWN_TRACKER

        def __init__(self, job: _Job) -> None:
            super().__init__()
            self.job = job
            self.live: dict[int, tuple[int, str, int, Any]] = {}
            self.current = 0
            self.kind = "a"
            self.peak = Live()
            self.events: list[tuple[str, int, int]] = []
            self.marks: dict[str, tuple[int, int]] = {}
            self.tokens = 0
            for st in _storages(
                [list(job.model.parameters()), list(job.model.buffers()), list(job.masters)]
            ):
                self._see(st, "p")
            for st in _storages(job.x):
                self._see(st, "a")

        def _see(self, st: Any, kind: str) -> None:
            key = st._cdata
            if key in self.live:
                return
            n = st.nbytes()
            self.tokens += 1
            token = self.tokens
            ref = weakref.ref(st, functools.partial(self._on_free, key, token))
            self.live[key] = (n, kind, token, ref)
            self.current += n
            self.events.append(("a", token, n))

        def _on_free(self, key: int, token: int, _ref: Any) -> None:
            entry = self.live.get(key)
            if entry is not None and entry[2] == token:
                del self.live[key]
                self.current -= entry[0]
                self.events.append(("f", token, 0))

        def split(self) -> Live:
            """The live bytes now, by what they are."""
            job = self.job
            grads = {
                s._cdata
                for s in _storages(
                    [p.grad for p in [*job.model.parameters(), *job.masters] if p.grad is not None]
                )
            }
            state = {s._cdata for s in _storages(job.state())}
            parts = {"p": 0, "g": 0, "o": 0, "a": 0, "t": 0}
            for key, (n, kind, _, _) in self.live.items():
                cat = (
                    kind if kind == "p" else "g" if key in grads else "o" if key in state else kind
                )
                parts[cat] += n
            return Live(parts["p"], parts["g"], parts["o"], parts["a"], parts["t"])

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            for st in _storages(out):
                self._see(st, self.kind)
            if self.current > self.peak.total:
                self.peak = self.split()
            return out

        @contextmanager
        def phase(self, name: str, out: dict[str, Live]) -> Iterator[None]:
            """Count the peak of the block as phase ``name`` and mark its events."""
            self.kind = "a" if name in ("inference", "forward") else "t"
            self.peak = self.split()
            first = len(self.events)
            with self:
                yield
            self.marks[name] = (first, len(self.events))
            out[name] = self.peak

    return _Own


def _run(own: Any, job: _Job, torch_tracker: _TorchTracker | None) -> dict[str, Live]:
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
    if "step" in theirs:
        mine["torch"] = theirs["step"]
    return mine


def fake_model(model: Any, mode: Any, dtype: Any = None) -> Any:
    """``model`` (on the meta device) with fake CPU parameters and buffers of ``mode``.

    Tied parameters stay tied. ``dtype`` casts floating parameters and buffers.
    """
    import torch
    from torch._subclasses.fake_tensor import FakeTensor

    memo: dict[int, Any] = {}

    def fake(t: Any) -> Any:
        if id(t) not in memo:
            dt = dtype if dtype is not None and t.is_floating_point() else t.dtype
            meta = torch.empty(t.shape, dtype=dt, device="meta")
            memo[id(t)] = FakeTensor(mode, meta, torch.device("cpu"))
        return memo[id(t)]

    params: dict[int, Any] = {}
    for mod in model.modules():
        for name, p in list(mod._parameters.items()):
            if p is not None:
                if id(p) not in params:
                    params[id(p)] = torch.nn.Parameter(fake(p), requires_grad=p.requires_grad)
                mod._parameters[name] = params[id(p)]
        for name, b in list(mod._buffers.items()):
            if b is not None:
                mod._buffers[name] = fake(b)
    return model


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


def _sequences(own: Any) -> tuple[tuple[Event, ...], tuple[Event, ...]]:
    """The allocation sequences of an inference pass and of three training steps.

    Steps two and three repeat the first, less what the first left allocated (the
    optimizer state, allocated lazily once and kept).
    """
    events = own.events
    prefix = events[: own.marks["inference"][0]]
    infer = prefix + events[slice(*own.marks["inference"])]
    first, last = own.marks["forward"][0], own.marks["zero_grad"][1]
    step = events[first:last]
    freed = {key for op, key, _ in step if op == "f"}
    kept = {key for op, key, _ in step if op == "a" and key not in freed}
    train: list[Event] = list(prefix) + list(step)
    for again in (2, 3):
        train += [(op, (again, key), n) for op, key, n in step if key not in kept]
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
            job = _Job(model, mode, batch, input_shape, tokens, precision, optimizer)
            own = _own_tracker_class()(job)
            phases = _run(own, job, _TorchTracker(job) if name == TORCH_TRACKER else None)
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
            state_bytes=_nbytes(job.state()),
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
