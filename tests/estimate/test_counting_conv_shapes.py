"""The counter records each forward convolution's shape: what PyTorch's CPU path choice needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.estimate.workload.counting import build_on_meta, count_model
from hwadvisor.estimate.workload.profile import analytic_profile, counted_profile
from hwadvisor.models.workload import ModelKind, Workload

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def _model() -> object:
    import torch

    return torch.nn.Sequential(
        torch.nn.Conv2d(8, 32, 1),  # unstrided 1x1: 32 x 8 x (10 x 10) per sample
        torch.nn.Conv2d(32, 16, 3, stride=2, padding=1, groups=2),
        torch.nn.Conv2d(16, 24, 1, stride=2),
    )


def test_shapes_record_kernel_stride_groups_and_the_per_sample_product() -> None:
    counted = count_model(build_on_meta(_model, "seq"), [8, 10, 10], 4, "seq")
    prof = counted_profile(counted.forward, 4, counted.backward)
    shapes = {tuple(c.kernel) + tuple(c.stride): c for c in prof.conv_shapes}
    assert len(prof.conv_shapes) == 3
    pointwise = shapes[(1, 1, 1, 1)]
    assert pointwise.product == [32, 8, 100]  # M out channels, K in channels, N = H x W
    assert pointwise.groups == 1 and pointwise.dilation == [1, 1] and not pointwise.transposed
    assert pointwise.input_elements == 8 * 10 * 10
    assert pointwise.flops == pytest.approx(2 * 32 * 8 * 100)  # per sample
    grouped = shapes[(3, 3, 2, 2)]
    assert grouped.groups == 2 and grouped.product == [8, 16 * 9, 25]
    assert shapes[(1, 1, 2, 2)].product == [24, 16, 9]
    # The shapes split the same FLOPs as the conv buckets, at the buckets' sizes.
    assert sum(c.flops for c in prof.conv_shapes) == pytest.approx(prof.conv_flops)
    assert {c.size for c in prof.conv_shapes} <= {b.size for b in prof.conv}


def test_catalog_resnet50_carries_its_counted_shapes() -> None:
    from hwadvisor.catalog.loader import load_models

    entry = load_models()["resnet50"]
    wl = Workload(kind=ModelKind.CNN, batch_size=4, flops_per_sample=entry.flops_per_sample,
                  params=entry.params, input_shape=entry.input_shape)  # fmt: skip
    prof = analytic_profile(wl, entry)
    assert prof is not None and prof.conv_shapes
    assert sum(c.flops for c in prof.conv_shapes) == pytest.approx(prof.conv_flops)
    unstrided = [c for c in prof.conv_shapes if c.kernel == [1, 1] and c.stride == [1, 1]]
    # ResNet-50 (v1.5, stride on the 3x3): two 1x1 convolutions in each of 16 bottlenecks
    # and layer1's downsample are unstrided; the other three downsamples have stride 2.
    assert sum(c.count for c in unstrided) == 2 * 16 + 1
    assert sum(c.count for c in prof.conv_shapes) == 53
