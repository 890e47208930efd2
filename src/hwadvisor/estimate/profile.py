"""Per-operator profiles: how a forward pass splits into products, convolutions and memory work.

Counted models get theirs from the meta-device count; catalog models and bare sizes get an
analytic one from their shape (layers, hidden, heads, seq), each choice stated.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.models.workload import GemmBucket, ModelKind, OpProfile, Workload

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import ModelEntry
    from hwadvisor.estimate.counting import Count

#: Products whose size cannot be known are assumed this large (near the matrix rate).
UNKNOWN_GEMM_SIZE = 1024


def counted_profile(fwd: Count, batch: int) -> OpProfile:
    """A profile from a meta-device count at ``batch``, per sample."""
    gemm = [GemmBucket(size=s, flops=f / batch) for s, f in sorted(fwd.gemm.items())]
    return OpProfile(
        gemm=gemm,
        conv_flops=fwd.conv_flops / batch,
        other_flops=fwd.other_flops / batch,
        memory_bytes=fwd.memory_bytes / batch,
        kernels=fwd.kernels,
        basis=f"counted per operator on the meta device at batch {batch}",
    )


def attention_flops(seq: int, hidden: int, layers: int) -> float:
    """Forward FLOPs of the two attention products per sequence: 4·s²·h·L."""
    return 4.0 * seq * seq * hidden * layers


def _transformer(wl: Workload, entry: ModelEntry | None) -> OpProfile:
    s, h, layers = wl.seq_len or 1, wl.hidden or 0, wl.layers or 0
    heads = wl.heads or max(1, h // 64)
    fps = wl.flops_per_sample or 0.0
    attn = attention_flops(s, h, layers)
    tokens = wl.batch_size * s
    # The projections and MLP are (tokens x h) @ (h x h..4h): cube root of M·N·K.
    proj = max(fps - attn, 0.0)
    proj_size = round((tokens * h * 2 * h) ** (1 / 3)) if h else UNKNOWN_GEMM_SIZE
    head_dim = max(1, h // heads)
    attn_size = round((s * s * head_dim) ** (1 / 3))
    # fp32 bytes per token per layer of the memory-bound operators: two layer norms (2h
    # each, read + write), GELU on 4h, bias adds and residual adds (~9h read + write),
    # softmax, scaling and masking of the a·s scores.
    per_token_layer = 4.0 * (36 * h + 4 * heads * s)
    mem = per_token_layer * s * layers
    kernels = (entry.kernels if entry and entry.kernels else 0) or 22 * max(layers, 1) + 10
    gemm = [GemmBucket(size=proj_size, flops=proj)]
    if attn:
        gemm.append(GemmBucket(size=attn_size, flops=attn))
    return OpProfile(
        gemm=gemm,
        memory_bytes=mem,
        kernels=kernels,
        basis="analytic transformer profile (24·s·h²·L projections, 4·s²·h·L attention, "
        "layer norm / GELU / softmax / residual traffic per token)",
    )


def analytic_profile(wl: Workload, entry: ModelEntry | None) -> OpProfile | None:
    """A profile from the workload's sizes; None when its FLOPs are unknown."""
    fps = wl.flops_per_sample
    if fps is None:
        return None
    if wl.kind in (ModelKind.ENCODER, ModelKind.DECODER) and wl.hidden and wl.layers:
        return _transformer(wl, entry)
    conv_fraction = entry.conv_fraction if entry else 0.0
    conv = fps * conv_fraction
    rest = fps - conv
    # A dense layer with M = batch has M·N·K = batch × (its forward FLOPs per sample) / 2.
    size = round((wl.batch_size * rest / 2) ** (1 / 3)) if rest > 0 and entry else UNKNOWN_GEMM_SIZE
    if wl.kind is ModelKind.DECODER and wl.seq_len:
        size = (
            round((wl.batch_size * wl.seq_len * (wl.params or 0) / 12) ** (1 / 3))
            or UNKNOWN_GEMM_SIZE
        )
    mem = entry.memory_bytes_per_sample if entry and entry.memory_bytes_per_sample else 0.0
    basis = (
        "catalog conv share and measured memory-bound bytes"
        if entry
        else (f"bare FLOPs: products assumed ~{size} wide, memory-bound operators not counted")
    )
    return OpProfile(
        gemm=[GemmBucket(size=max(size, 1), flops=rest)] if rest else [],
        conv_flops=conv,
        memory_bytes=mem,
        kernels=(entry.kernels if entry and entry.kernels else 0),
        basis=basis,
    )
