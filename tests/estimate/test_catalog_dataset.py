"""A catalog model with a canonical data set fills --dataset-size, and says so."""

from __future__ import annotations

from hwadvisor.estimate import build_workload


def test_resnet50_defaults_to_imagenet_and_states_it() -> None:
    wl = build_workload(model="resnet50")
    assert wl.dataset_size == 1_281_167
    assert any("ImageNet-1k" in a and "--dataset-size" in a for a in wl.assumptions)


def test_given_dataset_size_wins() -> None:
    wl = build_workload(model="resnet50", dataset_size=5000)
    assert wl.dataset_size == 5000
    assert not any("catalog default" in a for a in wl.assumptions)


def test_models_without_a_canonical_dataset_stay_unknown() -> None:
    assert build_workload(model="bert-base").dataset_size is None
