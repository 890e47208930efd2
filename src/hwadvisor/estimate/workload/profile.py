"""Per-operator profiles: how a forward pass splits into products, convolutions and memory work.

Counted models get theirs from the meta-device count; catalog models and bare sizes get an
analytic one from their shape (layers, hidden, heads, seq), each choice stated.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

from hwadvisor.catalog.schema import ModelEntry
from hwadvisor.estimate.workload.counting import MEMORY_OP_COST, Count, effective_size
from hwadvisor.io import load_yaml
from hwadvisor.models.workload import (
    GemmBucket,
    ModelKind,
    OpGroup,
    OpProfile,
    Task,
    Workload,
)

#: Products whose size cannot be known are assumed this large (near the matrix rate).
UNKNOWN_GEMM_SIZE = 1024


def op_groups(count: Count, batch: int, *, backward: bool) -> list[OpGroup]:
    """The counted operators of one pass as groups: family, how many, bytes of one per sample."""
    groups = []
    for family, (n, moved) in sorted(count.groups.items()):
        ops = int(n)
        per_op = moved / ops / batch if ops else 0.0
        groups.append(OpGroup(family=family, backward=backward, count=ops, bytes=per_op))
    return groups


@functools.cache
def _op_profiles() -> dict[str, Any]:
    """The counted operator groups of catalog models (``catalog/data/op_profiles.yaml``)."""
    text = resources.files("hwadvisor.catalog").joinpath("data").joinpath("op_profiles.yaml")
    data = load_yaml(text.read_text(encoding="utf-8")) or {}
    return dict(data.get("models") or {})


def catalog_groups(model_id: str, task: Task) -> list[OpGroup]:
    """The counted groups of a catalog model for ``task`` (empty when none were counted)."""
    entry = _op_profiles().get(model_id)
    if not entry:
        return []
    rows = entry.get("train" if task is Task.TRAIN else "infer") or []
    return [
        OpGroup(family=f, backward=bool(b), count=int(n), bytes=float(x)) for f, b, n, x in rows
    ]


def counted_profile(fwd: Count, batch: int, bwd: Count | None = None) -> OpProfile:
    """A profile from a meta-device count at ``batch``, per sample."""
    gemm = [GemmBucket(size=s, flops=f / batch) for s, f in sorted(fwd.gemm.items())]
    conv = [GemmBucket(size=s, flops=f / batch) for s, f in sorted(fwd.conv.items())]
    groups = op_groups(fwd, batch, backward=False)
    if bwd is not None:
        groups += op_groups(bwd, batch, backward=True)
    return OpProfile(
        op_groups=groups,
        conv=conv,
        gemm=gemm,
        conv_flops=fwd.conv_flops / batch,
        other_flops=fwd.other_flops / batch,
        memory_bytes=fwd.memory_bytes / batch,
        kernels=fwd.kernels,
        backward_memory_bytes=bwd.memory_bytes / batch if bwd else None,
        backward_kernels=bwd.kernels if bwd else None,
        basis=f"counted per operator on the meta device at batch {batch}",
    )


def attention_flops(seq: int, hidden: int, layers: int) -> float:
    """Forward FLOPs of the two attention products per sequence: 4·s²·h·L."""
    return 4.0 * seq * seq * hidden * layers


def _transformer(wl: Workload, entry: ModelEntry | None) -> OpProfile:
    s, h, layers = wl.seq_len or 1, wl.hidden or 0, wl.layers or 0
    heads = wl.heads or max(1, h // 64)
    cost = MEMORY_OP_COST
    dropout = entry.dropout if entry else 0.0
    fps = wl.flops_per_sample or 0.0
    attn = attention_flops(s, h, layers)
    tokens = wl.batch_size * s
    proj = max(fps - attn, 0.0)
    # Per layer: QKV (h -> 3h, 6h² per token), output (2h²), MLP up (h -> 4h, 8h²) and
    # down (4h -> h, 8h²); the rest of the projection FLOPs (embeddings, LM head) go
    # with the MLP-sized products.
    shapes = [(3 * h, h, 6 / 24), (h, h, 2 / 24), (4 * h, h, 8 / 24), (h, 4 * h, 8 / 24)]
    gemm = [
        GemmBucket(size=effective_size(tokens, n, k), flops=proj * share) for n, k, share in shapes
    ]
    head_dim = max(1, h // heads)
    if attn:
        gemm.append(GemmBucket(size=effective_size(s, s, head_dim), flops=attn))
    # Cost-weighted fp32 bytes per token per layer of the memory-bound operators (weights
    # of counting.MEMORY_OP_COST), the same operators as transformer_groups: two layer
    # norms, GELU on 4h and the bias add before it, two residual adds, the copy making the
    # context contiguous (and at batch > 1 the copies of q, k and v the attention
    # products make), softmax and the scaling and masking of the a·s scores.
    fused = bool(entry and entry.fused_attention)
    copies = 2 * h + (6 * h if wl.batch_size > 1 and not fused else 0)
    elems = 2 * 2 * h * cost["native_layer_norm"] + 8 * h * cost["gelu"] + 8 * h + 6 * h + copies
    # Eager attention stores the a·s scores and passes over them (scaling, mask, softmax);
    # a fused kernel reads q, k and v and writes the context (4h a token).
    scores = 4.0 * heads * s * (2 * cost["_softmax"] + 4) if not fused else 4.0 * 4 * h
    per_token_layer = 4.0 * elems + scores
    # Dropout (training only) on the attention probabilities and the two residual branches:
    # a Bernoulli mask per element (slow on CPUs), then a multiply.
    drop_elems = (0 if fused else heads * s) + 2 * h if (dropout and wl.task is Task.TRAIN) else 0
    drop_fwd = drop_elems * 4.0 * (2 * cost["bernoulli_"] + 3 * cost["mul"] + 2)
    mem = (per_token_layer + drop_fwd) * s * layers
    back = (2 * per_token_layer + drop_elems * 4.0 * 3 * cost["mul"]) * s * layers
    kernels = (entry.kernels if entry and entry.kernels else 0) or 22 * max(layers, 1) + 10
    train = wl.task is Task.TRAIN
    groups = transformer_groups(
        s, h, heads, layers, dropout=dropout if train else 0.0, batch=wl.batch_size, fused=fused
    )
    return OpProfile(
        op_groups=groups,
        gemm=gemm,
        memory_bytes=mem,
        backward_memory_bytes=back,
        kernels=kernels,
        basis="analytic transformer profile (QKV, output and MLP products per layer, 4·s²·h·L "
        "attention, layer norm / GELU / softmax / residual traffic per token)",
    )


def transformer_groups(
    seq: int,
    hidden: int,
    heads: int,
    layers: int,
    *,
    dropout: float = 0.0,
    batch: int = 1,
    fused: bool = False,
) -> list[OpGroup]:
    """Operator groups of an encoder/decoder stack, per sample (fp32 bytes as counted).

    Every call one eager BERT layer makes (NVIDIA DeepLearningExamples
    ``PyTorch/LanguageModeling/BERT/modeling.py``: ``BertLayer``, ``BertSelfAttention``,
    ``BertSelfOutput``, ``BertIntermediate``, ``BertOutput``, the bias + GELU of
    ``bias_gelu_training``; Hugging Face's eager ``BertLayer`` has the same calls), as
    today's PyTorch dispatches them. Per layer, forward:

    - 6 container module calls (``module``: the module call only) and 6 products, each an
      ``nn.Linear`` module (``gemm``); 2 attention products, ``torch.matmul`` (``bmm``);
    - 8 views (``view``: a dispatcher op without a kernel): reshape and permute of q, k, v,
      permute and reshape of the context;
    - the scaling and the mask add of the a x s x s scores, softmax; the copy making the
      context contiguous; the FFN's bias add and GELU on s x 4h; two residual adds, two
      layer norms; at batch > 1 the attention products copy q, k and v (their reshape
      cannot be a view);
    - the three dropouts: with ``dropout`` (training) a Bernoulli mask, its scaling and the
      multiply, else (eval, or p = 0) a module call and a kernel-less op each.

    The backward: each product's two gradients, the attention products' four, the bias
    gradients (five sums over tokens, one for the FFN's bias add), four gradient
    accumulations where a tensor feeds two branches, the scaling's, softmax's, GELU's and
    the layer norms' gradients, the copies of the products' gradients (two, four at
    batch > 1), autograd's nodes of the eight views, and the dropouts' multiplies.
    Views, module calls and products move no bytes here (products are priced by FLOPs).

    ``fused``: attention is one ``F.scaled_dot_product_attention`` kernel (torchvision's
    ``nn.MultiheadAttention`` calls it when no weights are asked for, timm's ``Attention``
    by default), which reads q, k and v and writes the context without storing the
    scores: it replaces the two products, the scaling, the mask and softmax (and the
    probabilities' dropout, applied inside: two dropout modules are left), q, k and v
    stay views; its backward is one
    kernel reading q, k, v, the context and its gradient and writing three gradients.
    """
    tok, scores = float(seq * hidden), float(heads * seq * seq)
    many = batch > 1 and not fused  # eager products copy q, k and v (and their gradients)
    drops = 2 if fused else 3  # dropout modules (the probabilities' is inside the kernel)
    if fused:
        attention = [("bmm", 1, 0.0)]
        attention_back = [("bmm", 1, 0.0)]
    else:
        attention = [("bmm", 2, 0.0), ("eltwise", 2, 8 * scores), ("softmax", 1, 8 * scores)]
        attention_back = [
            ("bmm", 4, 0.0),
            ("eltwise", 1, 8 * scores),
            ("softmax_backward", 1, 12 * scores),
        ]
    fwd = [
        ("module", 6, 0.0),
        ("gemm", 6, 0.0),
        ("view", 8, 0.0),
        *attention,
        ("eltwise", 1 + (3 if many else 0), 8 * tok),
        ("eltwise", 1, 32 * tok),
        ("gelu", 1, 32 * tok),
        ("eltwise", 2, 12 * tok),
        ("layer_norm", 2, 8 * tok),
    ]
    if dropout:
        if not fused:
            fwd += [("dropout", 1, 8 * scores), ("eltwise", 2, 20 * scores)]
        fwd += [("dropout", 2, 8 * tok), ("eltwise", 4, 20 * tok)]
    else:
        fwd += [("module", drops, 0.0), ("view", drops, 0.0)]
    bwd = [
        ("gemm", 12, 0.0),
        ("view", 8, 0.0),
        *attention_back,
        ("eltwise", 5, 4 * tok),
        ("eltwise", 1, 16 * tok),
        ("eltwise", 4, 12 * tok),
        ("eltwise", 2 + (2 if many else 0), 8 * tok),
        ("gelu", 1, 48 * tok),
        ("layer_norm", 2, 12 * tok),
    ]
    if dropout:
        if not fused:
            bwd += [("eltwise", 1, 12 * scores)]
        bwd += [("eltwise", 2, 12 * tok)]
    return [
        OpGroup(family=f, backward=back, count=n * max(layers, 1), bytes=b)
        for back, rows in ((False, fwd), (True, bwd))
        for f, n, b in rows
    ]


def analytic_profile(wl: Workload, entry: ModelEntry | None) -> OpProfile | None:
    """A profile from the workload's sizes; None when its FLOPs are unknown."""
    fps = wl.flops_per_sample
    if fps is None:
        return None
    if wl.kind in (ModelKind.ENCODER, ModelKind.DECODER) and wl.hidden and wl.layers:
        return _transformer(wl, entry)
    if wl.kind is ModelKind.DECODER and wl.seq_len and wl.params:
        # Only N and s known: a GPT-like shape with L ≈ h/128, so N ≈ 12·h³/128.
        h = (wl.params * 128 / 12) ** (1 / 3)
        size = effective_size(wl.batch_size * wl.seq_len, 2 * h, 1.5 * h)
        return OpProfile(
            gemm=[GemmBucket(size=size, flops=fps)],
            kernels=0,
            basis=f"2·N·s products, GPT-like width ~{h:.0f} assumed from N; memory-bound operators not counted",
        )
    return _dense_and_conv(wl, entry, fps)


def _dense_and_conv(wl: Workload, entry: ModelEntry | None, fps: float) -> OpProfile:
    """A catalog entry's convolutions and counted operators, or bare FLOPs as one product."""
    conv_total = fps * (entry.conv_fraction if entry else 0.0)
    rest = fps - conv_total
    conv: list[GemmBucket] = []
    if entry and entry.conv_sizes:
        conv = [
            GemmBucket(size=int(sz), flops=conv_total * share) for sz, share in entry.conv_sizes
        ]
    elif conv_total:
        conv = [GemmBucket(size=UNKNOWN_GEMM_SIZE // 4, flops=conv_total)]
    if entry is None:
        return OpProfile(
            gemm=[GemmBucket(size=UNKNOWN_GEMM_SIZE, flops=rest)] if rest else [],
            conv=conv,
            conv_flops=conv_total,
            basis=f"bare FLOPs: products assumed ~{UNKNOWN_GEMM_SIZE} wide, memory-bound operators not counted",
        )
    # A dense layer of f FLOPs per sample taken as square: N = K = sqrt(f / 2), M = batch.
    side = (rest / 2) ** 0.5 if rest > 0 else 0.0
    size = effective_size(wl.batch_size, side, side)
    return OpProfile(
        op_groups=catalog_groups(entry.id, wl.task),
        gemm=[GemmBucket(size=max(size, 1), flops=rest)] if rest else [],
        conv=conv,
        conv_flops=conv_total,
        memory_bytes=entry.memory_bytes_per_sample or 0.0,
        backward_memory_bytes=entry.backward_memory_bytes_per_sample,
        kernels=entry.kernels or 0,
        backward_kernels=entry.backward_kernels,
        basis="catalog conv sizes and memory-bound bytes (counted on a plain-torch definition)",
    )
