"""A causal language model on ``nn.TransformerEncoder``: the most common transformer in
user code (embedding, encoder layers under a square subsequent mask, a language-model
head). ``build`` passes ``is_causal=True`` with the mask; ``build_mask_only`` passes the
mask alone, as PyTorch's language-modelling tutorial does, and the encoder then compares
it with a causal mask to set ``is_causal`` itself: a check that reads the mask's values,
which neither fake tensors nor the meta device have (that model is counted by a real
run)."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, WIDTH, HEADS, LAYERS = 1000, 64, 4, 2


class CausalLM(nn.Module):
    """Token embedding, learned positions, a causal encoder stack and an LM head."""

    def __init__(self, context: int = 64, *, flag: bool = True) -> None:
        super().__init__()
        self.flag = flag
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.pos = nn.Parameter(torch.zeros(context, WIDTH))
        layer = nn.TransformerEncoderLayer(WIDTH, HEADS, 4 * WIDTH, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, LAYERS)
        self.head = nn.Linear(WIDTH, VOCAB)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        seq = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(seq, device=tokens.device)
        x = self.embed(tokens) + self.pos[:seq]
        x = self.encoder(x, mask=mask, is_causal=True) if self.flag else self.encoder(x, mask)
        return self.head(x)


def build() -> nn.Module:
    """The model, with a context of 64 tokens."""
    return CausalLM()


def build_mask_only() -> nn.Module:
    """The model passing its causal mask without ``is_causal``."""
    return CausalLM(flag=False)
