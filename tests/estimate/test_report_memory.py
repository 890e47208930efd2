"""The estimate's memory wiring: fits from the bounds, the plan, a user model counted.

``estimate.report`` decides each device's ``fits`` with ``estimate.memory.decide_fit``
(the lower bound alone says "does not fit", an upper bound within the usable memory says
"fits", null only when they straddle it, with the options that settle it), and gives a
catalog GPU the job does not fit alone its smallest multi-GPU plan. A user's model
(``file.py:callable``) is counted on fake tensors and its counts price the memory.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.catalog import lookup_device
from hwadvisor.estimate import build_workload
from hwadvisor.estimate.memory.parts import (
    CPU_ALLOCATOR_OVERHEAD,
    USABLE_FRACTION,
    MemoryPlan,
    breakdown,
    decide_fit,
)
from hwadvisor.estimate.report import estimate_on_entry, estimate_workload
from hwadvisor.estimate.workload.usermem import count_user_model
from hwadvisor.models.memory import MemoryCounts
from hwadvisor.models.workload import Workload

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]
FACTS = Path(__file__).resolve().parents[1] / "data" / "facts"
#: Words of a fix or plan that needs GPUs.
GPU_ONLY = ("FSDP", "ZeRO", "GPUs", "8-bit", "offload", "tensor parallel")

MODEL_FILE = """
import torch.nn as nn


def build():
    return nn.Sequential(
        nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(), nn.Linear(1024, 10)
    )


class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        raise ValueError("my block wants 9 features")


def broken():
    return Broken()


class RealDataOnly(nn.Module):
    # Runs on the meta device (the FLOP count) only: neither on fake tensors nor for real.
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if not x.is_meta:
            raise RuntimeError("my kernel reads real data")
        return self.fc(x)


def real_data_only():
    return RealDataOnly()
"""
#: Parameters of ``build``: three linear layers with biases.
BUILD_PARAMS = 256 * 1024 + 1024 + 1024 * 1024 + 1024 + 1024 * 10 + 10


@pytest.fixture
def model_file(tmp_path: Path) -> Path:
    """A user's model file with a good model and two that fail."""
    path = tmp_path / "net.py"
    path.write_text(MODEL_FILE, encoding="utf-8")
    return path


def _on_memory(wl: Workload, device_bytes: int) -> Any:
    """The estimate of ``wl`` on an A100 80GB whose memory is ``device_bytes``."""
    entry = lookup_device("a100-80gb").entry.model_copy(update={"memory_bytes": device_bytes})
    return estimate_on_entry(wl, entry)


def _bounds(wl: Workload) -> tuple[int, int]:
    mb = breakdown(wl, MemoryPlan(precision=wl.precision, batch=wl.batch_size), gpu=True)
    assert mb is not None and mb.lower_bytes is not None and mb.upper_bytes is not None
    return mb.lower_bytes, mb.upper_bytes


def test_lower_bound_alone_decides_does_not_fit() -> None:
    wl = build_workload(params=13 * 10**9, seq_len=2048, precision="amp")
    lower, _ = _bounds(wl)
    est = _on_memory(wl, int(lower / USABLE_FRACTION) - (1 << 20))
    assert est.fits is False
    assert est.fit_reason.startswith("does not fit: weights, gradients, optimizer and runtime")
    # The same job on a real 24 GB card: 13 B parameters of AdamW state alone are too many.
    doc = estimate_workload(wl, facts=None, bench=None, on=["rtx-4090"])
    assert doc.estimates[0].fits is False and "alone are" in (doc.estimates[0].fit_reason or "")


def test_upper_bound_within_the_device_decides_fits() -> None:
    wl = build_workload(params=10**9, precision="amp")  # no --seq-len: the shape is assumed
    _, upper = _bounds(wl)
    est = _on_memory(wl, int(upper / USABLE_FRACTION) + (1 << 20))
    assert est.fits is True and est.fit_reason.startswith("fits: even the upper bound")
    assert est.plan is None  # it fits alone


def test_null_only_when_the_bounds_straddle_with_the_options_that_settle_it() -> None:
    wl = build_workload(params=10**9, precision="amp")
    lower, upper = _bounds(wl)
    assert lower < upper
    mid = _on_memory(wl, int((lower + upper) / 2 / USABLE_FRACTION))
    assert mid.fits is None
    assert mid.fit_reason.startswith("open:") and "--seq-len" in mid.fit_reason
    assert "--model (its real shape)" in mid.fit_reason
    # Fully stated (a catalog shape, its sequence and batch): the estimate decides.
    stated = build_workload(model="llama-7b", seq_len=2048, batch_size=2, precision="amp")
    lo, up = _bounds(stated)
    assert (
        lo < up
        and breakdown(stated, MemoryPlan(precision=stated.precision, batch=2), gpu=True).settle
        == []
    )  # type: ignore[union-attr]
    assert _on_memory(stated, int((lo + up) / 2 / USABLE_FRACTION)).fits is not None


def test_a_gpu_the_job_does_not_fit_alone_gets_its_smallest_plan() -> None:
    wl = build_workload(params=7 * 10**9, seq_len=4096)
    doc = estimate_workload(wl, facts=None, bench=None, on=["a100-80gb", "h200"])
    a100 = doc.estimates[0]
    assert a100.fits is False and a100.plan is not None
    plan = a100.plan
    assert plan.device == "a100-80gb" and plan.fits
    assert plan.plan.startswith(f"{plan.gpus} × ") and "80GB" in plan.plan
    assert plan.gpus > 1 or plan.fixes  # alone it does not fit: more GPUs, or fixes
    assert decide_fit(plan.memory, a100.device_memory_bytes).fits is True
    for e in doc.estimates:
        assert (e.plan is None) == (e.fits is not False)


def test_estimate_llama_7b_never_shards_here_without_a_gpu(cli: Cli) -> None:
    res = cli(
        "estimate",
        "--model",
        "llama-7b",
        "--facts",
        str(FACTS / "cpu-server-amx.json"),
        "--on",
        "here",
        "--on",
        "a100-80gb",
        "--no-bench",
        "--json",
    )
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    wl = doc["workload"]
    # Training a language model is priced as its full fine-tuning: bf16, one sequence.
    assert wl["precision"] == "bf16" and wl["batch_size"] == 1
    here, a100 = doc["estimates"]
    assert here["device"] == "here" and here["fits"] is False
    assert here["plan"] is None
    assert not [f for f in here["fixes"] if any(w in f["fix"] for w in GPU_ONLY)]
    assert a100["fits"] is False and a100["plan"] is not None and a100["plan"]["fits"]
    # A bare parameter count is trained as written, with the CPU's own fixes.
    text = cli(
        "estimate", "--params", "7e9", "--seq-len", "2048", "--facts", str(FACTS / "laptop.json"),
        "--on", "here", "--no-bench",
    )  # fmt: skip
    assert text.code == 0
    # The fixes printed for `here` (the guidance may still advise renting GPUs).
    fixes = text.out.split("here does not fit", 1)[1].split("\n\n", 1)[0]
    assert "Fixes in order" in fixes
    assert not any(w in fixes for w in ("FSDP", "ZeRO", "across", "8-bit", "offload"))


def test_a_user_model_is_counted_through_the_cli(cli: Cli, model_file: Path) -> None:
    spec = f"{model_file}:build"
    res = cli(
        "estimate", "--model", spec, "--input-shape", "256", "--batch-size", "512",
        "--facts", str(FACTS / "laptop.json"), "--on", "here", "--on", "t4", "--no-bench",
        "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    doc = json.loads(res.out)
    wl = doc["workload"]
    assert wl["params"] == BUILD_PARAMS
    counts = MemoryCounts.model_validate(wl["memory_counts"])
    assert counts.batches == (512, 513)
    said = [a for a in wl["assumptions"] if a.startswith("memory counted on fake tensors")]
    assert len(said) == 1 and counts.method.value == "fake"
    # The same counts as counting the file directly.
    direct = count_user_model(spec, [256], 512)
    assert counts.fp32 == direct.fp32
    here, t4 = doc["estimates"]
    for e in (here, t4):
        mem = e["memory"]
        assert mem["basis"].startswith("activations counted") and mem["settle"] == []
        assert mem["weights_bytes"] == 4 * BUILD_PARAMS
        assert mem["optimizer_bytes"] == 8 * BUILD_PARAMS
        assert mem["lower_bytes"] <= mem["total_bytes"] <= mem["upper_bytes"]
        assert e["fits"] is True and e["fit_reason"].startswith("fits")
    # At batch 512 the activations are the peak: counted, per sample, with the gradients
    # made by then; the peak is what is live together, not every part at its largest.
    mem = t4["memory"]
    per_sample = counts.fp32.per_sample
    assert mem["activations_bytes"] >= 0.5 * per_sample * 512
    parts = ("weights", "gradients", "optimizer", "activations", "temporaries", "runtime")
    assert mem["total_bytes"] == sum(mem[f"{p}_bytes"] for p in parts)
    everything = 4 * BUILD_PARAMS * 4 + per_sample * 512 + mem["runtime_bytes"]
    assert mem["total_bytes"] < everything
    # On a CPU, PyTorch's for-loop AdamW step holds its counted temporaries (here the
    # peak), and the live bytes are resident with the allocator's allowance on top.
    cpu = here["memory"]
    assert cpu["temporaries_bytes"] == counts.fp32.step_temporaries > 0
    live = sum(cpu[f"{p}_bytes"] for p in parts[:-1])
    resident = cpu["total_bytes"] - cpu["runtime_bytes"]
    assert resident == int(live * (1 + CPU_ALLOCATOR_OVERHEAD))
    assert live <= resident <= cpu["upper_bytes"]


@pytest.mark.parametrize(
    ("callable_", "said"),
    [
        ("broken", "ValueError: my block wants 9 features"),
        pytest.param(
            "real_data_only",
            "in a real run on the CPU: RuntimeError: my kernel reads real data",
            marks=pytest.mark.slow,  # the meta device fails first, then a real run: ~2 s
        ),
    ],
)
def test_a_model_that_raises_is_one_line_and_exit_2(
    cli: Cli, model_file: Path, callable_: str, said: str
) -> None:
    res = cli(
        "estimate", "--model", f"{model_file}:{callable_}", "--input-shape", "8", "--on", "t4",
        "--no-bench",
    )  # fmt: skip
    assert res.code == 2
    assert res.out == ""
    lines = res.error_lines()
    assert len(lines) == 1 and said in lines[0] and callable_ in lines[0]
    assert "Traceback" not in res.err


@pytest.mark.slow  # the mask-only model is counted in a child process
@pytest.mark.parametrize(
    ("callable_", "method", "said"),
    [
        ("build", "fake", "memory counted on fake tensors at batch 8 and 9"),
        ("build_mask_only", "real", "memory counted by a real run at batch 1 and 2 on the CPU"),
    ],
)
def test_a_causal_transformer_encoder_is_estimated(
    cli: Cli, callable_: str, method: str, said: str
) -> None:
    spec = f"{Path(__file__).resolve().parents[1] / 'data' / 'models'}/causal_encoder.py"
    res = cli(
        "estimate", "--model", f"{spec}:{callable_}", "--input-shape", "64", "--batch-size",
        "8", "--facts", str(FACTS / "laptop.json"), "--on", "here", "--no-bench", "--json",
    )  # fmt: skip
    assert res.code == 0, res.err
    wl = json.loads(res.out)["workload"]
    assert wl["memory_counts"]["method"] == method
    assert sum(a.startswith(said) for a in wl["assumptions"]) == 1
    (here,) = json.loads(res.out)["estimates"]
    assert here["memory"]["basis"].startswith("activations counted")
    assert here["memory"]["total_bytes"] > 16 * wl["params"]
