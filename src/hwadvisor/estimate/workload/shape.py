"""A transformer shape (layers, width, heads) inferred from a parameter count alone.

A decoder block holds about 12·d² parameters (4·d² in attention, 8·d² in a 4·d MLP;
Kaplan et al. 2020, "Scaling Laws for Neural Language Models", arXiv:2001.08361, §2.1:
N ≈ 12·n_layer·d_model², embeddings apart), and the token embedding and output layer
2·V·d more. What the count does not say is the aspect ratio d/L. Kaplan et al. (Fig. 5)
found the loss nearly flat across d/L from about 20 to 200, and published families pick
ratios in that range that grow with size; they are the table below. The ratio for a
count is interpolated in log(params) between the family members around it; the bound
uses the narrowest published ratio (the deepest, narrowest shape holds the most
activation memory for its size: 34·s·b·d·L grows as N/d).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import lru_cache

#: (params, layers, d_model, heads, source) of published decoder families.
FAMILIES: tuple[tuple[float, int, int, int, str], ...] = (
    (125e6, 12, 768, 12, "GPT-3 Small (Brown et al. 2020, arXiv:2005.14165, Table 2.1)"),
    (350e6, 24, 1024, 16, "GPT-3 Medium (Table 2.1)"),
    (760e6, 24, 1536, 16, "GPT-3 Large (Table 2.1)"),
    (1.3e9, 24, 2048, 24, "GPT-3 XL (Table 2.1)"),
    (2.7e9, 32, 2560, 32, "GPT-3 2.7B (Table 2.1)"),
    (6.7e9, 32, 4096, 32, "LLaMA 7B (Touvron et al. 2023, arXiv:2302.13971, Table 2)"),
    (13.0e9, 40, 5120, 40, "LLaMA 13B (Table 2)"),
    (32.5e9, 60, 6656, 52, "LLaMA 33B (Table 2)"),
    (65.2e9, 80, 8192, 64, "LLaMA 65B (Table 2)"),
    (175e9, 96, 12288, 96, "GPT-3 175B (Table 2.1)"),
)
#: Vocabulary assumed for the embedding and output layers (LLaMA's, 32,000 tokens).
VOCAB = 32_000


@dataclass(frozen=True)
class Shape:
    """A transformer shape: blocks, model width, attention heads, vocabulary."""

    layers: int
    hidden: int
    heads: int
    vocab: int = VOCAB

    def describe(self) -> str:
        """``32 layers x 4096 wide, 32 heads``."""
        return f"{self.layers} layers x {self.hidden} wide, {self.heads} heads"


def _ratio_at(params: float) -> float:
    pts = [(math.log(p), d / layers) for p, layers, d, _, _ in FAMILIES]
    x = math.log(max(params, 1.0))
    if x <= pts[0][0]:
        return pts[0][1]
    for (x0, r0), (x1, r1) in itertools.pairwise(pts):
        if x <= x1:
            return r0 + (r1 - r0) * (x - x0) / (x1 - x0)
    return pts[-1][1]


# A plan search asks for the same shape hundreds of times: the bisection is cached.
@lru_cache(maxsize=1024)
def _solve(params: float, ratio: float, vocab: int) -> Shape:
    """Layers and width with d = ratio·L and 12·L·d² + 2·V·d = params (bisection on L)."""
    if not math.isfinite(params) or params <= 0:
        raise ValueError(f"a parameter count must be positive and finite, got {params!r}")
    lo, hi = 1e-3, 1e6
    for _ in range(200):
        mid = math.sqrt(lo * hi)
        d = ratio * mid
        if 12 * mid * d * d + 2 * vocab * d > params:
            hi = mid
        else:
            lo = mid
    layers = max(1, round(lo))
    head_dim = 128 if ratio * lo >= 2048 else 64
    hidden = max(head_dim, round(ratio * lo / head_dim) * head_dim)
    return Shape(layers=layers, hidden=hidden, heads=max(1, hidden // head_dim), vocab=vocab)


def infer_shape(params: float, vocab: int = VOCAB) -> Shape:
    """The shape a published family of this size would have."""
    return _solve(params, _ratio_at(params), vocab)


def narrowest_shape(params: float, vocab: int = VOCAB) -> Shape:
    """The deepest shape of the published ratios: the most activation memory for the count."""
    ratio = min(d / layers for _, layers, d, _, _ in FAMILIES)
    return _solve(params, ratio, vocab)
