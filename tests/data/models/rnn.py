"""Recurrent test models: an LSTM and a GRU over feature sequences (batch first)."""

from __future__ import annotations

import torch
from torch import nn


class _Last(nn.Module):
    def __init__(self, rnn: nn.Module, hidden: int) -> None:
        super().__init__()
        self.rnn = rnn
        self.head = nn.Linear(hidden, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def lstm() -> nn.Module:
    """Two LSTM layers, 32 features in, 64 hidden."""
    return _Last(nn.LSTM(32, 64, num_layers=2, batch_first=True), 64)


def gru() -> nn.Module:
    """One GRU layer, 32 features in, 64 hidden."""
    return _Last(nn.GRU(32, 64, batch_first=True), 64)
