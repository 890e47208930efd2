"""A small CNN with batch norm for 32x32 images (test and accuracy-benchmark model)."""

from __future__ import annotations

from torch import nn


def _block(cin: int, cout: int) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.Conv2d(cout, cout, 3, padding=1, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(),
        nn.MaxPool2d(2),
    )


def build() -> nn.Module:
    """Three conv blocks (32, 64, 128 channels) and a linear head: a CIFAR-10 classifier."""
    return nn.Sequential(
        _block(3, 32), _block(32, 64), _block(64, 128), nn.Flatten(), nn.Linear(128 * 4 * 4, 10)
    )
