"""Counting the memory of one training step and one inference pass: the peak of live bytes.

A model's parameters and buffers become fake CPU tensors of one
``torch._subclasses.fake_tensor.FakeTensorMode`` (it is built on the meta device first:
building under the fake mode fails on models that deep-copy their layers, such as
``nn.TransformerEncoder``, "Mixing fake modes"), or, for a real run, stay the real CPU
tensors they are. ONE training step (forward and loss, backward, optimizer step) and ONE
inference pass (eval mode, ``no_grad``) run under a dispatch mode that follows the LIVE
storage bytes: a storage is counted when an operator makes it and uncounted when it is
freed (a weak-reference callback), so the peak is the high-water mark of live tensors,
not the sum of everything allocated. At each new peak the live bytes are split into
parameters (and buffers), gradients, optimizer state, activations (what the forward pass
keeps, the input included) and temporaries (backward and optimizer-step intermediates).

Optimizer state is allocated lazily at the first step, so from the second step on it is
live through forward and backward as well: the steady peak is the largest of
(forward + state), (backward + state) and the optimizer step. The tensors are CPU ones,
so the optimizer runs as on a CPU (PyTorch's for-loop AdamW) and ``amp`` is CPU
autocast to bfloat16. :func:`memory_counts` fits the counts at two batches into the
linear :class:`~hwadvisor.models.memory.MemoryCounts` the memory model prices.
"""

from __future__ import annotations

import contextlib
import datetime
import functools
import weakref
from collections.abc import Callable, Iterator
from dataclasses import astuple, dataclass
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.models.memory import CountedPeak, CountMethod, MemoryCounts

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
        return sum(astuple(self))


@dataclass(frozen=True)
class MemCount:
    """What one counted step and one inference pass held at their peaks."""

    batch: int
    precision: str
    params: int
    forward: Live
    backward: Live
    step: Live
    inference: Live
    state_bytes: int
    leaf_modules: int


def tensors_of(obj: Any) -> list[Any]:
    """The tensors in ``obj`` (nested tuples, lists, dicts)."""
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def _storages(obj: Any) -> dict[int, Any]:
    """The distinct untyped storages of the tensors in ``obj``, by address."""
    return {st._cdata: st for st in (t.untyped_storage() for t in tensors_of(obj))}


class _Job:
    """A model, its optimizer and one input batch: one step and one pass to count.

    ``mode`` is the fake mode the tensors belong to (a null context for a real run).
    Mixed precision keeps fp32 master weights (the ZeRO paper's accounting,
    arXiv:1910.02054 §3.1): 16-bit weights and gradients in the model, fp32 copies in
    the optimizer.
    """

    def __init__(self, model: Any, mode: Any, batch: int, shape: list[int], tokens: bool,
                 precision: str, optimizer: str) -> None:  # fmt: skip
        import torch

        self.model, self.mode, self.precision = model, mode, precision
        self.half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        self.out: Any = None
        params = list(model.parameters())
        with mode:
            masters = [torch.nn.Parameter(p.detach().float()) for p in params] if self.half else []
            self.masters = torch.nn.ParameterList(masters)
            opt_params = masters or params
            self.opt: Any = (
                torch.optim.SGD(opt_params, lr=0.01, momentum=0.9)
                if optimizer == "sgd"
                else torch.optim.AdamW(opt_params)
            )
            dtype = torch.long if tokens else (self.half or torch.float32)
            self.x = torch.zeros([batch, *shape], dtype=dtype)

    def _autocast(self) -> Any:
        import torch

        return torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.precision == "amp")

    def infer(self) -> None:
        """One inference pass: eval mode, no gradients."""
        import torch

        self.model.eval()
        with torch.no_grad(), self._autocast():
            self.model(self.x)
        self.model.train()

    def forward(self) -> Any:
        """Forward pass and a scalar loss over every floating output; the output stays
        referenced through backward and the step, as in the usual loop."""
        with self._autocast():
            self.out = self.model(self.x)
            floats = [t for t in tensors_of(self.out) if t.is_floating_point() and t.requires_grad]
            if not floats:
                raise UsageError("the model's output needs a floating tensor that requires grad")
            return sum(t.float().sum() for t in floats)

    def step(self) -> None:
        """The optimizer step (16-bit gradients go to the fp32 masters one by one)."""
        pairs = list(zip(self.model.parameters(), self.masters, strict=False))
        for p, m in pairs:
            if p.grad is not None:
                m.grad, p.grad = p.grad.float(), None
        self.opt.step()
        for p, m in pairs:
            p.data.copy_(m.data)
            m.grad = None

    def state(self) -> list[Any]:
        """Tensors of the optimizer state."""
        return tensors_of([list(s.values()) for s in self.opt.state.values()])


def _tracker(job: _Job) -> Any:
    """The live-bytes tracker of ``job`` (made on first use: it subclasses a torch mode)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Tracker(TorchDispatchMode):
        """Live storages by address, freed through weak-reference callbacks."""

        def __init__(self) -> None:
            super().__init__()
            self.live: dict[int, tuple[int, str, int, Any]] = {}
            self.current = self.tokens = 0
            self.kind = "a"
            self.peak = Live()
            model = job.model
            for st in _storages([*model.parameters(), *model.buffers(), *job.masters]).values():
                self._see(st, "p")
            for st in _storages(job.x).values():
                self._see(st, "a")

        def _see(self, st: Any, kind: str) -> None:
            key = st._cdata
            if key not in self.live:
                self.tokens += 1
                ref = weakref.ref(st, functools.partial(self._free, key, self.tokens))
                self.live[key] = (st.nbytes(), kind, self.tokens, ref)
                self.current += st.nbytes()

        def _free(self, key: int, token: int, _ref: Any) -> None:
            entry = self.live.get(key)
            if entry is not None and entry[2] == token:
                del self.live[key]
                self.current -= entry[0]

        def split(self) -> Live:
            """The live bytes now, by what they are."""
            grads = [p.grad for p in [*job.model.parameters(), *job.masters]]
            grad_keys, state_keys = set(_storages(grads)), set(_storages(job.state()))
            parts = dict.fromkeys("pgoat", 0)
            for key, (n, kind, _, _) in self.live.items():
                if kind != "p":
                    kind = "g" if key in grad_keys else "o" if key in state_keys else kind
                parts[kind] += n
            return Live(parts["p"], parts["g"], parts["o"], parts["a"], parts["t"])

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            out = func(*args, **(kwargs or {}))
            for st in _storages(out).values():
                self._see(st, self.kind)
            if self.current > self.peak.total:
                self.peak = self.split()
            return out

        @contextlib.contextmanager
        def phase(self, name: str, out: dict[str, Live]) -> Iterator[None]:
            """Count the peak of the block as phase ``name``."""
            self.kind = "a" if name in ("inference", "forward") else "t"
            self.peak = self.split()
            with self:
                yield
            out[name] = self.peak

    return _Tracker()


def fake_model(model: Any, mode: Any, dtype: Any = None) -> Any:
    """``model`` (on the meta device) with fake CPU parameters and buffers of ``mode``;
    tied parameters stay tied, ``dtype`` casts the floating ones."""
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


def count_memory(
    build: Callable[[], Any],
    input_shape: list[int],
    batch: int,
    *,
    tokens: bool,
    precision: str = "fp32",
    optimizer: str = "adamw",
    real: bool = False,
) -> MemCount:
    """Count one training step and one inference pass of the model ``build`` returns.

    ``build`` returns a fresh module each call: on the meta device (counted on fake
    tensors), or with ``real`` a CPU module (run for real). A model that raises is the
    model's own exception; a model without a floating output is a UsageError.
    """
    import torch

    if precision not in PRECISIONS:
        raise UsageError(f"memory counting needs one of {'|'.join(PRECISIONS)}, got {precision!r}")
    half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    model = build()
    if real:
        mode: Any = contextlib.nullcontext()
        if half is not None:
            model = model.to(half)
    else:
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode()
        fake_model(model, mode, half)
    job = _Job(model, mode, batch, input_shape, tokens, precision, optimizer)
    tracker = _tracker(job)
    phases: dict[str, Live] = {}
    with mode:
        with tracker.phase("inference", phases):
            job.infer()
        with tracker.phase("forward", phases):
            loss = job.forward()
        with tracker.phase("backward", phases):
            loss.backward()
            del loss
        with tracker.phase("step", phases):
            job.step()
    return MemCount(
        batch=batch,
        precision=precision,
        params=sum(p.numel() for p in model.parameters()),
        forward=phases["forward"],
        backward=phases["backward"],
        step=phases["step"],
        inference=phases["inference"],
        state_bytes=sum(st.nbytes() for st in _storages(job.state()).values()),
        leaf_modules=sum(1 for m in model.modules() if not list(m.children())),
    )


def peak_from(a: MemCount, b: MemCount) -> CountedPeak:
    """The linear peak model through two counts of one precision at different batches."""
    if a.batch == b.batch:
        raise ValueError("two different batch sizes are needed")
    lo, hi = (a, b) if a.batch < b.batch else (b, a)

    def fb(c: MemCount) -> Live:
        return max((c.forward, c.backward), key=lambda live: live.total)

    def extra(c: MemCount) -> float:
        p = fb(c)
        return float(p.total - p.parameters - p.optimizer)

    def infer(c: MemCount) -> float:
        return float(c.inference.total - c.inference.parameters)

    span = hi.batch - lo.batch
    per = max(0.0, (extra(hi) - extra(lo)) / span)
    iper = max(0.0, (infer(hi) - infer(lo)) / span)
    step = hi.step
    return CountedPeak(
        per_sample=per,
        fixed=extra(hi) - per * hi.batch,
        gradients_at_peak=float(fb(hi).gradients),
        step_temporaries=float(step.total - step.parameters - step.gradients - step.optimizer),
        infer_per_sample=iper,
        infer_fixed=infer(hi) - iper * hi.batch,
    )


def memory_counts(
    build: Callable[[], Any],
    input_shape: list[int],
    *,
    tokens: bool,
    batches: tuple[int, int],
    precisions: tuple[str, ...] = ("fp32", "amp"),
    optimizer: str = "adamw",
    spec: str = "model",
    source: str | None = None,
    real: bool = False,
) -> MemoryCounts:
    """Count ``build``'s model at ``batches`` for each precision (fp32 always), on fake
    tensors or, with ``real``, by a real run on the CPU."""
    peaks: dict[str, CountedPeak] = {}
    leaves = 1
    for precision in dict.fromkeys(("fp32", *precisions)):
        kwargs: dict[str, Any] = {"precision": precision, "optimizer": optimizer, "real": real}
        runs = [count_memory(build, input_shape, b, tokens=tokens, **kwargs) for b in batches]
        peaks[precision] = peak_from(*runs)
        leaves = max(leaves, runs[0].leaf_modules)
    today = datetime.date.today().isoformat()
    method = CountMethod.REAL if real else CountMethod.FAKE
    how = "a real run on the CPU" if real else "fake tensors"
    return MemoryCounts(
        fp32=peaks["fp32"],
        amp=peaks.get("amp"),
        bf16=peaks.get("bf16"),
        batches=(min(batches), max(batches)),
        leaf_modules=leaves,
        method=method,
        source=source or f"counted with hwadvisor memtrack on {spec} ({how}) {today}",
        date=today,
    )


def takes_tokens(model: Any) -> bool:
    """Whether the first module holding parameters is an embedding (integer inputs)."""
    import torch

    for mod in model.modules():
        if not list(mod.children()) and any(True for _ in mod.parameters(recurse=False)):
            return isinstance(mod, torch.nn.Embedding)
    return False
