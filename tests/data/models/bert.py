"""BERT-base's encoder in plain torch (12 layers, hidden 768, 12 heads, FFN 3072).

The sizes of the BERT paper's base model (Devlin et al., arXiv:1810.04805); token and
position embeddings, post-norm GELU layers, and a two-class head on the first token.
Used by ``benchmarks/catalog_cpu_accuracy.py`` to time the catalog's ``bert-base``
situation (one 128-token sequence) on a real CPU.
"""

from __future__ import annotations

import torch
from torch import nn


class Bert(nn.Module):
    """Embeddings, a 12-layer encoder and a classifier on the first token."""

    def __init__(self, vocab: int = 30522, d: int = 768, layers: int = 12, seq: int = 512):
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Embedding(seq, d)
        self.norm = nn.LayerNorm(d)
        layer = nn.TransformerEncoderLayer(
            d, d // 64, 4 * d, dropout=0.1, activation="gelu", batch_first=True
        )
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        """Class logits for a batch of token-id sequences."""
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = self.norm(self.tokens(ids) + self.positions(pos))
        return self.head(self.encoder(x)[:, 0])


def build() -> nn.Module:
    """BERT-base's sizes."""
    return Bert()
