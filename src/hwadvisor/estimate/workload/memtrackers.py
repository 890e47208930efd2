"""The two trackers memtrack runs: torch's MemTracker, and a storage tracker of ours that
also records the allocation sequence (see :mod:`hwadvisor.estimate.workload.memtrack`)."""

from __future__ import annotations

import functools
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hwadvisor.estimate.workload import cpu_autograd as ag
from hwadvisor.estimate.workload.cpu_alloc import STORAGE_IMPL, Event
from hwadvisor.estimate.workload.cpu_kernels import (
    Partial,
    Step,
    in_place_bias,
    kernel_script,
    output_sizes,
)
from hwadvisor.estimate.workload.memjob import FakeJob, Live, flat_tensors, nbytes, storages

TORCH_TRACKER = "torch MemTracker"
OWN_TRACKER = "hwadvisor storage tracker"


class TorchTracker:
    """torch's MemTracker. Its peak is cumulative within one context and a module may run
    only once per context, so the inference pass gets a tracker of its own and the step's
    phases are read in turn: the peak after forward, after backward and after the
    optimizer step. That is enough for the steady peak: a phase that set no new peak
    cannot set the step's either, even with the optimizer state added."""

    name = TORCH_TRACKER

    def __init__(self, job: FakeJob) -> None:
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
        state = nbytes(self.job.state()) if name == "step" else 0
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


def own_tracker_class() -> type:
    """The class of our tracker (made on first use: it subclasses a torch mode)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class _Own(TorchDispatchMode):
        """Live storages by address, freed through weak-reference callbacks; it also
        records the allocation sequence (for the allocator replay) and sorts the live
        bytes by what they are at each new peak."""

        name = OWN_TRACKER

        def __init__(self, job: FakeJob) -> None:
            super().__init__()
            self.job = job
            self.live: dict[int, tuple[int, str, int, Any]] = {}
            self.current = 0
            self.kind = "a"
            self.peak = Live()
            self.events: list[Event] = []
            self.marks: dict[str, tuple[int, int]] = {}
            self.tokens = 0
            #: storages the last operator that made any made
            self.fresh: set[int] = set()
            #: the autograd graph's small objects (freed with the step's output), the
            #: leaves it reached, and whether the outputs being recorded get a grad_fn
            self.graph: list[Any] = []
            self.leaves: set[int] = set()
            self.meta = False
            #: the last recorded call's new outputs, (tensor, storage token)
            self.pending: list[tuple[Any, int]] = []
            #: partly written storages by address: (token, bytes written once a later
            #: call that reads them, their backward, has run)
            self.rewrites: dict[int, tuple[int, int]] = {}
            for st in storages(
                [list(job.model.parameters()), list(job.model.buffers()), list(job.masters)]
            ):
                self._see(st, "p")
            for st in storages(job.x):
                self._see(st, "a")

        def _see(self, st: Any, kind: str, part: Partial | None = None) -> None:
            key = st._cdata
            if key in self.live:
                return
            n = st.nbytes() if part is None else part.written
            self.tokens += 1
            token = self.tokens
            ref = weakref.ref(st, functools.partial(self._on_free, key, token))
            self.live[key] = (n, kind, token, ref)
            self.current += n
            # the storage's StorageImpl is made just before its data, freed just after
            self.events.append(("s", ("s", token), STORAGE_IMPL))
            if part is None:
                self.events.append(("a", token, n))
                return
            self.events += [("u", token, part.size), ("w", token, n)]
            if part.read_written > n:
                self.rewrites[key] = (token, part.read_written)

        def _resized(self, out: Any, sizes: dict[int, Partial]) -> None:
            """Record outputs whose fake kernel reports too few bytes at their real size,
            live and resident as far as they are written."""
            for i, part in sizes.items():
                for st in storages(out[i]):
                    self._see(st, self.kind, part)

        def _rewritten(self, args: Any) -> None:
            """The pages a call writes in the partly written storages it reads."""
            for t in flat_tensors(args):
                key = t.untyped_storage()._cdata
                token, n = self.rewrites.get(key, (0, 0))
                entry = self.live.get(key)
                if entry is None or entry[2] != token:
                    continue
                del self.rewrites[key]
                self.current += n - entry[0]
                self.live[key] = (n, *entry[1:])
                self.events.append(("w", token, n))

        def _made(self, out: Any, script: list[Step]) -> None:
            """Record the outputs of one call, with the buffers its CPU kernel makes
            around them ("k" events: resident, never counted as live tensors)."""
            if script:
                items = list(out) if isinstance(out, (tuple, list)) else [out]
                self.tokens += 1
                call = self.tokens
                for op, slot, n in script:
                    if op in ("+", "s"):
                        self.events.append(("k" if op == "+" else "s", ("k", call, slot), n))
                    elif op == "-":
                        self.events.append(("f", ("k", call, slot), 0))
                    elif slot < len(items):
                        for st in storages(items[slot]):
                            self._see(st, self.kind)
            for st in storages(out):
                self._see(st, self.kind)

        def _on_free(self, key: int, token: int, _ref: Any) -> None:
            entry = self.live.get(key)
            if entry is not None and entry[2] == token:
                del self.live[key]
                self.rewrites.pop(key, None)
                self.current -= entry[0]
                self.events += [("f", ("m", token), 0), ("f", token, 0), ("f", ("s", token), 0)]

        def _small(self, n: int, long: bool = True, op: str = "s") -> Any:
            """Record a small object's malloc (kept in the graph when ``long``)."""
            self.tokens += 1
            key = ("g", self.tokens)
            self.events.append((op, key, n))
            if long:
                self.graph.append(key)
            return key

        def _record_node(self, func: Any, args: Any) -> None:
            """The backward node of a recorded call and its new leaves' accumulators."""
            self._small(ag.node_bytes(func))
            for _ in ag.new_leaves(args, self.leaves):
                self._small(ag.ACCUMULATE_GRAD)

        def _scalars(self, count: int) -> list[Any]:
            """The wrapped scalars of a call: made before it, copied inside it."""
            outer: list[Any] = []
            for data in (ag.SCALAR_OUTER, ag.SCALAR_INNER) if count else ():
                made = [
                    self._small(n, long=False, op="k" if n == data else "s")
                    for _ in range(count)
                    for n in (STORAGE_IMPL, data, ag.TENSOR_IMPL, ag.VERSION_COUNTER)
                ]
                if data == ag.SCALAR_INNER:
                    self.events += [("f", key, 0) for key in made]
                else:
                    outer = made
            return outer

        def end_graph(self) -> None:
            """Free the graph's objects (the step's output dropped)."""
            self.events += [("f", key, 0) for key in self.graph]
            self.graph, self.leaves = [], set()

        def split(self) -> Live:
            """The live bytes now, by what they are."""
            job = self.job
            grads = {
                s._cdata
                for s in storages(
                    [p.grad for p in [*job.model.parameters(), *job.masters] if p.grad is not None]
                )
            }
            state = {s._cdata for s in storages(job.state())}
            parts = {"p": 0, "g": 0, "o": 0, "a": 0, "t": 0}
            for key, (n, kind, _, _) in self.live.items():
                cat = (
                    kind if kind == "p" else "g" if key in grads else "o" if key in state else kind
                )
                parts[cat] += n
            return Live(parts["p"], parts["g"], parts["o"], parts["a"], parts["t"])

        def _metas(self) -> None:
            """The AutogradMeta of each output of the last recorded call that autograd
            gave a ``grad_fn`` (``set_history``, after the call returns: its
            differentiable outputs), freed with its storage."""
            for t, token in self.pending:
                if t.requires_grad and any(e[2] == token for e in self.live.values()):
                    self.events.append(("s", ("m", token), ag.AUTOGRAD_META))
            self.pending = []

        def _outputs(self, out: Any, before: int) -> list[tuple[Any, int]]:
            """The call's outputs with the token of the storage it made for each."""
            made = []
            for t in flat_tensors(out):
                entry = self.live.get(t.untyped_storage()._cdata)
                if entry is not None and entry[2] > before:
                    made.append((t, entry[2]))
            return made

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            self.meta = ag.recorded(func, args)
            if self.meta:  # the last recorded call's outputs have their history by now
                self._metas()
                self._record_node(func, args)
            outer = self._scalars(ag.wrapped_scalars(func, args))
            out = func(*args, **(kwargs or {}))
            if in_place_bias(func, args, self.fresh):
                self._release(args[0].untyped_storage())
            if self.rewrites:
                self._rewritten(args)
            before = self.tokens
            self._resized(out, output_sizes(func, args, out))
            self._made(out, kernel_script(func, args, out))
            if self.meta:
                self.pending = self._outputs(out, before)
            self.meta = False
            self.events += [("f", key, 0) for key in outer]
            made = {key for key, e in self.live.items() if e[2] > before}
            if made:  # a view (as the product's reshape) keeps the last storages fresh
                self.fresh = made
            if self.current > self.peak.total:
                self.peak = self.split()
            return out

        def _release(self, st: Any) -> None:
            """Free a storage now (the real kernel writes into it and returns it)."""
            entry = self.live.pop(st._cdata, None)
            if entry is not None:
                self.current -= entry[0]
                self.events += [
                    ("f", ("m", entry[2]), 0),
                    ("f", entry[2], 0),
                    ("f", ("s", entry[2]), 0),
                ]

        def _engine(self) -> list[Any]:
            """The backward engine's per-node blocks, made as the pass starts."""
            count = len(self.graph)
            return [self._small(n, long=False) for _ in range(count) for n in ag.ENGINE_BLOCKS]

        @contextmanager
        def phase(self, name: str, out: dict[str, Live]) -> Iterator[None]:
            """Count the peak of the block as phase ``name`` and mark its events."""
            self.kind = "a" if name in ("inference", "forward") else "t"
            self.peak = self.split()
            first = len(self.events)
            engine = self._engine() if name == "backward" else []
            with self:
                yield
            self._metas()
            self.events += [("f", key, 0) for key in engine]
            if name == "zero_grad":
                self.end_graph()
            self.marks[name] = (first, len(self.events))
            out[name] = self.peak

    return _Own
