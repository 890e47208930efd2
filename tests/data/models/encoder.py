"""A small transformer encoder over token ids (test and accuracy-benchmark model)."""

from __future__ import annotations

import torch
from torch import nn


class Encoder(nn.Module):
    """Embedding, four post-norm encoder layers (d=256, 4 heads, ff 1024), mean-pool head."""

    def __init__(self, vocab: int = 8000, d: int = 256, layers: int = 4) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        layer = nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.1, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = nn.Linear(d, 2)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        """Class logits for a batch of token-id sequences."""
        return self.head(self.encoder(self.embed(tokens)).mean(dim=1))


def build() -> nn.Module:
    """The encoder with its default sizes."""
    return Encoder()
