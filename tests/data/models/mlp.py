"""A small multi-layer perceptron (test and accuracy-benchmark model)."""

from __future__ import annotations

import torch
from torch import nn


def build() -> nn.Module:
    """784 -> 1024 -> 1024 -> 10 with ReLU: an MNIST-sized classifier."""
    return nn.Sequential(
        nn.Flatten(),
        nn.Linear(784, 1024),
        nn.ReLU(),
        nn.Linear(1024, 1024),
        nn.ReLU(),
        nn.Linear(1024, 10),
    )


def tiny() -> nn.Module:
    """One Linear layer: exact FLOPs 2*M*N*K for tests."""
    return nn.Linear(64, 32, bias=False)


def not_a_module() -> object:
    """Returns something that is not a model (error path)."""
    return torch.zeros(1)


def wide() -> nn.Module:
    """2048 -> 4096 -> 4096 -> 4096 -> 1000 with ReLU: 46 M parameters, 184 MB of fp32
    weights, past the last-level cache two to eight threads reach."""
    return nn.Sequential(
        nn.Linear(2048, 4096),
        nn.ReLU(),
        nn.Linear(4096, 4096),
        nn.ReLU(),
        nn.Linear(4096, 4096),
        nn.ReLU(),
        nn.Linear(4096, 1000),
    )
