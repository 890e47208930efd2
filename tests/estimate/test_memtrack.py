"""Counting a step on fake tensors: true peaks, the split, torch's tracker and ours."""

from __future__ import annotations

import importlib.util
import statistics
import sys
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from hwadvisor.errors import UsageError  # noqa: E402
from hwadvisor.estimate.workload.cpu_alloc import replay_starts  # noqa: E402
from hwadvisor.estimate.workload.memcount import count_user_model, memory_counts, peak_from  # noqa: E402
from hwadvisor.estimate.workload.memtrack import (  # noqa: E402
    OWN_TRACKER,
    TORCH_TRACKER,
    count_memory,
    in_last_repeat,
)

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_mt_{name}", MODELS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _builder(name: str, attr: str = "build") -> Any:
    fn = getattr(_module(name), attr)

    def build() -> Any:
        with torch.device("meta"):
            return fn()

    return build


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
    assert c.train_peak == step
    assert c.state_bytes == step.optimizer


def test_peak_is_live_bytes_not_everything_allocated() -> None:
    c = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False)
    allocated = sum(n for op, _, n in c.train_events if op == "a")
    assert c.train_peak.total < allocated / 2
    peak = c.first_step_peak
    assert peak.total == peak.parameters + peak.gradients + peak.optimizer + peak.activations + (
        peak.temporaries
    )


def test_both_trackers_agree() -> None:
    ours = count_memory(_builder("cnn"), [3, 32, 32], 4, tokens=False, trackers=(OWN_TRACKER,))
    theirs = count_memory(_builder("cnn"), [3, 32, 32], 4, tokens=False)
    assert theirs.tracker == TORCH_TRACKER and ours.tracker == OWN_TRACKER
    assert theirs.torch_peak is not None
    assert theirs.torch_peak.total == pytest.approx(ours.first_step_peak.total, abs=64)
    assert ours.train_peak.total == theirs.train_peak.total


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
    assert c.tracker == TORCH_TRACKER and c.torch_failed is None
    assert c.forward.activations > 0 and c.train_peak.total > c.params * 16


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_falls_back_to_our_tracker_where_memtracker_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    # A torch build without torch.distributed has no MemTracker.
    torch_run = count_memory(_builder("encoder"), [32], 2, tokens=True)
    monkeypatch.setitem(sys.modules, "torch.distributed._tools.mem_tracker", None)
    c = count_memory(_builder("encoder"), [32], 2, tokens=True)
    assert c.tracker == OWN_TRACKER
    assert c.torch_failed and "Error" in c.torch_failed
    assert c.train_peak == torch_run.train_peak


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_amp_holds_fewer_activation_bytes() -> None:
    fp32 = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False)
    amp = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False, precision="amp")
    assert amp.forward.activations < fp32.forward.activations
    bf16 = count_memory(_builder("cnn"), [3, 32, 32], 16, tokens=False, precision="bf16")
    # 16-bit weights plus fp32 master copies (and batch norm's running statistics).
    assert 6 * bf16.params <= bf16.step.parameters < 6.1 * bf16.params


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_linear_counts_reproduce_the_runs() -> None:
    build = _builder("cnn")
    runs: list[Any] = []
    counts = memory_counts(build, [3, 32, 32], tokens=False, batches=(4, 8), runs_out=runs)
    a, b = (r for r in runs if r.precision == "fp32")
    assert (a.batch, b.batch) == (4, 8)
    peak = peak_from(a, b)
    c = count_memory(build, [3, 32, 32], 12, tokens=False)
    fb = max(c.forward.total, c.backward.total) + c.state_bytes
    predicted = 4 * c.params + c.state_bytes + peak.fixed + peak.per_sample * 12
    assert predicted == pytest.approx(fb, rel=0.02)
    assert counts.amp is not None and counts.cpu_resident_ratio and counts.cpu_resident_ratio >= 1
    # The steady step's faults at each batch: the third step of each count, replayed.
    assert counts.cpu_faults is not None and [p.batch for p in counts.cpu_faults] == [4, 8]
    for point, run in zip(counts.cpu_faults, (a, b), strict=True):
        for got, events in ((point.train, run.train_events), (point.infer, run.infer_events)):
            starts = replay_starts(events, last=in_last_repeat)
            assert got == pytest.approx(statistics.fmean(r.last_faulted for r in starts))


def test_a_model_whose_fake_run_raises_is_one_line(tmp_path: Path) -> None:
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
    assert "ValueError: shapes do not line up" in err.value.message
    assert "\n" not in err.value.message


def test_user_model_is_counted_at_its_batch() -> None:
    counts, job = count_user_model(f"{MODELS / 'mlp.py'}:build", [784], 8)
    assert job.batch == 8 and job.precision == "fp32"
    assert counts.batches == (8, 9) and counts.fp32.per_sample > 0


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_torchs_tracker_checks_the_jobs_own_count_alone() -> None:
    build = _builder("cnn")
    runs: list[Any] = []
    counts = memory_counts(
        build, [3, 32, 32], tokens=False, batches=(4, 5), runs_out=runs, checked=(4, "amp")
    )
    checked = [r for r in runs if r.torch_peak is not None]
    assert [(r.batch, r.precision) for r in checked] == [(4, "amp")]
    assert counts.tracker == TORCH_TRACKER and counts.amp is not None
    # A check that names no count ran torch's tracker nowhere: ours counted alone.
    alone = memory_counts(build, [3, 32, 32], tokens=False, batches=(4, 5), checked=(9, "fp32"))
    assert alone.tracker == OWN_TRACKER and alone.fp32 == counts.fp32


def test_a_peak_torchs_tracker_disagrees_with_is_said(monkeypatch: pytest.MonkeyPatch) -> None:
    from dataclasses import replace

    from hwadvisor.estimate.workload import memcount
    from hwadvisor.estimate.workload.usermem import user_memory_counts
    from hwadvisor.models.workload import Optimizer, Precision

    spec = f"{MODELS / 'mlp.py'}:build"
    _, notes = user_memory_counts(
        spec, [784], 8, precision=Precision.FP32, optimizer=Optimizer.ADAMW
    )
    assert not any("peaks at" in n for n in notes)
    real = memcount.count_user_model

    def off(*args: Any, **kwargs: Any) -> Any:
        counts, job = real(*args, **kwargs)
        bigger = replace(job.torch_peak, activations=job.torch_peak.activations + 10**6)
        return counts, replace(job, torch_peak=bigger)

    monkeypatch.setattr(memcount, "count_user_model", off)
    _, notes = user_memory_counts(
        spec, [784], 8, precision=Precision.FP32, optimizer=Optimizer.ADAMW
    )
    said = [n for n in notes if "torch's MemTracker peaks at" in n]
    assert len(said) == 1 and "the estimate uses hwadvisor's" in said[0]


def test_sequences_hold_three_passes_and_each_storages_impl() -> None:
    from hwadvisor.estimate.workload.cpu_alloc import STORAGE_IMPL

    c = count_memory(_builder("cnn"), [3, 32, 32], 4, tokens=False, trackers=(OWN_TRACKER,))
    for events in (c.infer_events, c.train_events):
        ops = ["impl" if op == "s" and n == STORAGE_IMPL else op for op, _, n in events]
        # every storage's StorageImpl (a plain malloc) is made just before its data (a
        # tensor's, or a wrapped scalar's "k")
        assert all(ops[i + 1] in "ak" for i, op in enumerate(ops) if op == "impl")
        tensors = sum(1 for i, op in enumerate(ops) if op == "impl" and ops[i + 1] == "a")
        assert tensors == ops.count("a") > 0
        # the pass (or step) three times over: the second and third re-keyed
        again = [key[0] for op, key, _ in events if op == "a" and isinstance(key, tuple)]
        assert again.count(2) == again.count(3) > 0
