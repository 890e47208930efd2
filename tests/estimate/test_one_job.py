"""One job, one model: training a language model is its full fine-tuning."""

from __future__ import annotations

import pytest

from hwadvisor.estimate import build_workload, estimate_workload
from hwadvisor.models.workload import FinetuneMethod, Task


@pytest.mark.parametrize("model", ["llama-3-8b", "qwen2.5-7b"])
def test_train_and_full_finetune_of_one_model_give_one_estimate(model: str) -> None:
    same = {"model": model, "batch_size": 2, "precision": "bf16"}
    train = build_workload(task="train", **same)
    full = build_workload(task="finetune", method="full", **same)
    assert train.task is Task.TRAIN and train.method is FinetuneMethod.FULL
    assert any("training a language model is its full fine-tuning" in a for a in train.assumptions)
    a = estimate_workload(train, facts=None, bench=None, on=["a100-80gb"], gpus=8).estimates[0]
    b = estimate_workload(full, facts=None, bench=None, on=["a100-80gb"], gpus=8).estimates[0]
    assert a.step_time_s is not None and a.step_time_s == b.step_time_s
    assert a.memory_bytes is not None and a.memory_bytes == b.memory_bytes
    assert a.fits == b.fits


def test_training_is_not_offered_lora_but_fine_tuning_is() -> None:
    same = {"model": "llama-3-8b", "batch_size": 2, "precision": "bf16"}
    train = build_workload(task="train", **same)
    full = build_workload(task="finetune", method="full", **same)
    a = estimate_workload(train, facts=None, bench=None, on=["rtx-4090"]).estimates[0]
    b = estimate_workload(full, facts=None, bench=None, on=["rtx-4090"]).estimates[0]
    assert a.fits is False and b.fits is False
    assert not any("LoRA" in f.fix for f in a.fixes)
    assert any("LoRA" in f.fix for f in b.fixes)


def test_a_bare_parameter_count_is_still_trained_as_written() -> None:
    wl = build_workload(params=7_000_000_000, seq_len=2048, task="train")
    assert wl.task is Task.TRAIN
