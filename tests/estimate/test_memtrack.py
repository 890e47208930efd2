"""Counting a step's memory: true peaks and their split, on fake tensors or by a real run."""

from __future__ import annotations

import importlib.util
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hwadvisor.errors import UsageError  # noqa: E402
from hwadvisor.estimate.workload.memtrack import (  # noqa: E402
    Live,
    MemCount,
    count_memory,
    memory_counts,
    peak_from,
)
from hwadvisor.estimate.workload.usermem import count_user_model, user_memory_counts  # noqa: E402
from hwadvisor.models.memory import CountMethod  # noqa: E402
from hwadvisor.models.workload import Optimizer, Precision  # noqa: E402

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_mt_{name}", MODELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _builder(name: str, attr: str = "build", *, meta: bool = True) -> Any:
    fn = getattr(_module(name), attr)

    def build() -> Any:
        with torch.device("meta" if meta else "cpu"):
            return fn()

    return build


def _train_peak(c: MemCount) -> Live:
    """The peak of a step once optimizer state exists (the second step on)."""
    options = [
        replace(c.forward, optimizer=c.state_bytes),
        replace(c.backward, optimizer=c.state_bytes),
        c.step,
    ]
    return max(options, key=lambda live: live.total)


def test_mlp_step_holds_weights_gradients_state_and_the_for_loop_temporaries() -> None:
    c = count_memory(_builder("mlp"), [784], 8, tokens=False)
    n = c.params
    assert n == 784 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10
    step = c.step
    assert step.parameters == 4 * n and step.gradients == 4 * n
    # AdamW's two moments plus a 4-byte step counter per parameter tensor.
    assert 8 * n <= step.optimizer <= 8 * n + 4 * 6
    # The for-loop AdamW (CPU) makes sqrt(v) and its quotient: twice the largest tensor.
    assert step.temporaries >= 2 * 4 * 1024 * 1024
    assert _train_peak(c) == step
    assert c.state_bytes == step.optimizer
    # The peak is what is live at once: the forward's activations are gone by the step.
    assert c.forward.activations > step.activations
    assert c.inference.gradients == c.inference.optimizer == 0


@pytest.mark.slow  # a real run in the contained child (a torch import)
def test_a_real_run_counts_what_fake_tensors_count() -> None:
    for name, shape, tokens in (("cnn", [3, 32, 32], False), ("causal_encoder", [64], True)):
        fake = count_memory(_builder(name), shape, 4, tokens=tokens)
        real = count_memory(_builder(name, meta=False), shape, 4, tokens=tokens, real=True)
        assert real == fake


def test_torchs_recipe_fails_on_transformer_encoder() -> None:
    # Building under FakeTensorMode, as torch's documentation shows, deep-copies the
    # layer into another fake mode: the reason memtrack builds on meta and converts.
    from torch._subclasses.fake_tensor import FakeTensorMode

    enc = _module("encoder")
    with pytest.raises(AssertionError, match="Mixing fake modes"), FakeTensorMode():
        model = enc.build()
        model(torch.zeros(2, 16, dtype=torch.long))


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_transformer_encoder_is_counted() -> None:
    c = count_memory(_builder("encoder"), [32], 2, tokens=True)
    assert c.forward.activations > 0 and _train_peak(c).total > c.params * 16


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_amp_holds_fewer_activation_bytes() -> None:
    fp32 = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False)
    amp = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False, precision="amp")
    assert amp.forward.activations < fp32.forward.activations
    bf16 = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False, precision="bf16")
    # 16-bit weights plus fp32 master copies (and batch norm's running statistics).
    assert 6 * bf16.params <= bf16.step.parameters < 6.1 * bf16.params


def test_linear_counts_reproduce_the_runs() -> None:
    build = _builder("cnn")
    counts = memory_counts(build, [3, 32, 32], tokens=False, batches=(4, 8))
    a, b = (count_memory(build, [3, 32, 32], n, tokens=False) for n in (4, 8))
    peak = peak_from(a, b)
    assert peak == counts.fp32 and counts.amp is not None
    assert counts.method is CountMethod.FAKE
    c = count_memory(build, [3, 32, 32], 12, tokens=False)
    fb = max(c.forward.total, c.backward.total) + c.state_bytes
    predicted = 4 * c.params + c.state_bytes + peak.fixed + peak.per_sample * 12
    assert predicted == pytest.approx(fb, rel=0.02)


def test_a_model_that_runs_nowhere_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text(
        "import torch\n"
        "class M(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__(); self.l = torch.nn.Linear(4, 4)\n"
        "    def forward(self, x):\n"
        "        raise ValueError('shapes do not line up\\nsecond line')\n"
        "def build():\n"
        "    return M()\n"
    )
    with pytest.raises(UsageError) as err:
        count_user_model(f"{bad}:build", [4], 2)
    message = err.value.message
    assert "on fake tensors and in a real run on the CPU" in message
    assert "ValueError: shapes do not line up" in message and "\n" not in message


def test_user_model_is_counted_at_its_batch_on_fake_tensors() -> None:
    counts, notes = user_memory_counts(
        f"{MODELS / 'mlp.py'}:build", [784], 8, precision=Precision.FP32,
        optimizer=Optimizer.ADAMW,
    )  # fmt: skip
    assert counts.batches == (8, 9) and counts.fp32.per_sample > 0
    assert counts.method is CountMethod.FAKE
    assert len(notes) == 1 and notes[0].startswith("memory counted on fake tensors at batch 8")


@pytest.mark.slow  # a child process imports torch and runs the model
def test_a_model_that_reads_its_values_is_counted_by_a_real_run() -> None:
    # The mask alone: the encoder compares it with a causal one (torch.equal), a check
    # fake tensors cannot make.
    spec = f"{MODELS / 'causal_encoder.py'}:build_mask_only"
    counts, notes = user_memory_counts(
        spec, [64], 8, precision=Precision.FP32, optimizer=Optimizer.ADAMW
    )
    assert counts.method is CountMethod.REAL and counts.batches == (1, 2)
    assert notes[0].startswith("memory counted by a real run at batch 1 and 2 on the CPU")
    # The same model told is_causal=True runs on fake tensors: the same line through 8, 9.
    fake = count_user_model(f"{MODELS / 'causal_encoder.py'}:build", [64], 8)
    assert fake.method is CountMethod.FAKE
    assert counts.fp32.per_sample == pytest.approx(fake.fp32.per_sample, rel=0.01)
    assert counts.fp32.infer_per_sample == pytest.approx(fake.fp32.infer_per_sample, rel=0.01)
