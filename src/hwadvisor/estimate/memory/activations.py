"""Where a job's activation memory comes from, and its bytes under a memory plan.

In order of trust: the model's counted peaks (:mod:`hwadvisor.estimate.workload.memtrack`,
on fake tensors or by a real run; a catalog entry's ``memory_counts``), the transformer
formula from the model's published shape, the same formula from a shape inferred from
the parameter count (:mod:`hwadvisor.estimate.workload.shape`), and the bytes saved for backward
counted at batch 1 and 2 (:mod:`hwadvisor.estimate.workload.counting`). Whatever it rests on is
stated (``text``), with the options that would replace an assumption (``missing``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from hwadvisor.catalog import load_models
from hwadvisor.estimate.memory.knobs import MemoryPlan
from hwadvisor.estimate.workload.defaults import DEFAULT_SEQ
from hwadvisor.estimate.workload.shape import VOCAB, Shape, infer_shape, narrowest_shape
from hwadvisor.models.memory import CountedPeak, MemoryCounts
from hwadvisor.models.workload import ModelKind, Precision, Workload

KORTHIKANTI = "Korthikanti et al. 2022 (arXiv:2205.05198) §4"
_HALF = (Precision.AMP, Precision.BF16, Precision.FP16, Precision.INT8)


@lru_cache(maxsize=64)
def _catalog(model_id: str) -> tuple[MemoryCounts | None, int | None]:
    """The shipped catalog entry's counted peaks and vocabulary (user catalogs pass theirs)."""
    entry = load_models().get(model_id)
    return (entry.memory_counts, entry.vocab) if entry is not None else (None, None)


def _catalog_id(wl: Workload) -> str | None:
    """The shipped catalog entry ``wl`` was built from, if any."""
    return wl.source.split(":", 1)[1] if wl.source and wl.source.startswith("catalog:") else None


@dataclass(frozen=True)
class Activations:
    """How the activation memory of a job is known, and its bytes per plan."""

    text: str
    kind: ModelKind
    counts: MemoryCounts | None = None
    shape: Shape | None = None
    upper_shape: Shape | None = None
    seq: int | None = None
    kv_heads: int | None = None
    saved_per_sample: float | None = None
    missing: tuple[str, ...] = ()

    @property
    def layers(self) -> int | None:
        """Transformer blocks, or the counted model's modules without children."""
        if self.shape is not None:
            return self.shape.layers
        return self.counts.leaf_modules if self.counts is not None else None

    def counted(self, precision: Precision) -> CountedPeak | None:
        """The counted peak at ``precision`` (16-bit falls back to amp, then fp32)."""
        c = self.counts
        if c is None:
            return None
        if precision in (Precision.BF16, Precision.FP16):
            return c.bf16 or c.amp or c.fp32
        if precision in (Precision.AMP, Precision.INT8):
            return c.amp or c.fp32
        return c.fp32

    def largest_matrix(self) -> int:
        """Elements of the largest weight matrix (the CPU optimizer's temporaries)."""
        s = self.shape
        if s is None:
            return 0
        return max(4 * s.hidden * s.hidden, s.vocab * s.hidden)

    def _ckpt(self) -> float:
        # Chen et al. 2016 (arXiv:1604.06174): sqrt(n) segments keep about 2/sqrt(n) of
        # the activations.
        return min(1.0, 2.0 / math.sqrt(max(1, self.layers or 4)))

    def train_bytes(self, plan: MemoryPlan, grads: int, *, upper: bool) -> tuple[int, int]:
        """Activation bytes at the forward/backward peak and the gradients live then."""
        b = plan.batch
        peak = self.counted(plan.precision)
        if self.counts is not None and peak is not None:
            per = peak.per_sample * b * (self._ckpt() if plan.checkpointing else 1.0)
            if plan.precision is not Precision.FP32 and self.counts.amp is None:
                per *= 0.5  # 16-bit activations priced from the fp32 count alone
            other = max(0.0, peak.fixed - peak.gradients_at_peak)
            made = grads if upper else min(grads, int(peak.gradients_at_peak))
            return int(max(0.0, other + per)), made
        shape = self.upper_shape if upper and self.upper_shape else self.shape
        if shape is not None and self.seq:
            return self._formula(shape, plan), grads
        if self.saved_per_sample is not None:
            per = self.saved_per_sample * (0.5 if plan.precision in _HALF else 1.0) * b
            return int(per * (self._ckpt() if plan.checkpointing else 1.0)), grads
        return 0, grads

    def _formula(self, shape: Shape, plan: MemoryPlan) -> int:
        s, b, h, layers = self.seq or 0, plan.batch, shape.hidden, shape.layers
        one = s * b * h * (34 + 5 * shape.heads * s / h)
        per = 2 * s * b * h * layers + one if plan.checkpointing else one * layers
        scale = 1 if plan.precision in _HALF else 2
        logits = 4 * s * b * shape.vocab if self.kind is not ModelKind.ENCODER else 0
        return int(per * scale + logits)

    def kv_cache_bytes(self, plan: MemoryPlan) -> int:
        """The KV cache of a decoder at the sequence and batch (inference)."""
        shape = self.shape
        if self.kind is not ModelKind.DECODER or shape is None or not self.seq:
            return 0
        kv = self.kv_heads or shape.heads
        elem = 4 if plan.precision is Precision.FP32 else 2
        return 2 * shape.layers * kv * (shape.hidden // shape.heads) * self.seq * plan.batch * elem

    def infer_bytes(self, plan: MemoryPlan, *, upper: bool) -> int:
        """The working set of one inference pass."""
        b = plan.batch
        peak = self.counted(plan.precision)
        if peak is not None:
            return int(max(0.0, peak.infer_fixed + peak.infer_per_sample * b))
        elem = {Precision.INT8: 1, Precision.FP32: 4}.get(plan.precision, 2)
        shape = self.upper_shape if upper and self.upper_shape else self.shape
        if shape is not None and self.seq:
            # One block at a time: its input, q/k/v and the 4h MLP, about 16 values per
            # token; the upper bound adds the attention scores and fp32 logits.
            work = b * self.seq * shape.hidden * 16 * elem
            if upper:
                work += 2 * shape.heads * self.seq * self.seq * b * elem
                work += 4 * self.seq * b * shape.vocab if self.kind is ModelKind.DECODER else 0
            return int(work)
        if self.saved_per_sample is not None:
            return int(self.saved_per_sample * b * elem / 16)
        return 0


def activations_for(
    wl: Workload, counts: MemoryCounts | None = None, vocab: int | None = None
) -> Activations:
    """What the activation memory of ``wl`` rests on (a shipped catalog entry's counted
    peaks and vocabulary are found by its id when not given, a user model's are the
    workload's own ``memory_counts``)."""
    model_id = _catalog_id(wl)
    catalog_counts, catalog_vocab = _catalog(model_id) if model_id else (None, None)
    counts = counts or wl.memory_counts or catalog_counts
    vocab = vocab or catalog_vocab
    if counts is not None:
        return Activations(
            text=f"activations counted: {counts.source}",
            kind=wl.kind,
            counts=counts,
        )
    transformer = wl.kind in (ModelKind.ENCODER, ModelKind.DECODER) or (
        wl.kind is ModelKind.OTHER and wl.activation_bytes_per_sample is None
    )
    if not transformer:
        saved = wl.activation_bytes_per_sample
        text = (
            "activations: bytes saved for backward counted at batch 1 and 2"
            if saved is not None
            else "activation memory not counted for this model (weights and state only)"
        )
        return Activations(
            text=text,
            kind=wl.kind,
            saved_per_sample=saved,
            missing=() if saved is not None else ("--model with its code",),
        )
    return _transformer(wl, vocab)


def _transformer(wl: Workload, vocab: int | None) -> Activations:
    kind = wl.kind if wl.kind is not ModelKind.OTHER else ModelKind.DECODER
    missing: list[str] = []
    seq = wl.seq_len
    notes = []
    if seq is None:
        seq = DEFAULT_SEQ.get(wl.kind, 2048)
        missing += ["--seq-len", "--batch-size"]
        notes.append(f"sequence {seq} assumed")
    shape, upper = None, None
    if wl.layers and wl.hidden:
        heads = wl.heads or max(1, wl.hidden // 64)
        shape = Shape(layers=wl.layers, hidden=wl.hidden, heads=heads, vocab=vocab or VOCAB)
    if shape is None and wl.params:
        shape, upper = infer_shape(wl.params), narrowest_shape(wl.params)
        missing.append("--model (its real shape)")
        notes.append(
            f"{shape.describe()} inferred from the parameter count (Kaplan et al. "
            f"2020 N = 12·L·d²; d/L of GPT-3 and LLaMA); the upper bound takes the "
            f"narrowest published ratio, {upper.describe()}"
        )
    text = f"activations: transformer formula s·b·h·L·(34 + 5·a·s/h) ({KORTHIKANTI})"
    if kind is ModelKind.DECODER:
        text += " plus fp32 logits 4·s·b·V"
    if notes:
        text += "; " + "; ".join(notes)
    return Activations(
        text=text,
        kind=kind,
        shape=shape,
        upper_shape=upper,
        seq=seq,
        kv_heads=wl.kv_heads,
        missing=tuple(dict.fromkeys(missing)),
    )
