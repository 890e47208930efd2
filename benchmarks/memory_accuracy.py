"""Estimated peak memory against the real one, on this CPU, for models of our own.

For each model of ``benchmarks/memory_models.py`` (convolutional, residual, depthwise,
U-Net, recurrent, recurrent encoder-decoder, transformer encoder, transformer
encoder-decoder, GPT-style decoder, MLP), in training (AdamW, fp32) and inference, at two
batch sizes:

- **estimated**: what hwadvisor's memory model gives for the job here, less the runtime
  context (which the baseline below already holds): the model is counted as a user's
  model is (``estimate.workload.usermem.count_user_model``: on fake tensors at the batch
  and the batch + 1, or, where fake tensors cannot run it, by a real run at batch 1 and
  2, scaled; the ``count`` column says which) and priced by
  ``estimate.memory.breakdown`` on a CPU: the live peak plus the allocator allowance;
- **real**: a fresh Python process per case imports torch, sets the thread count, runs a
  warm-up (a tiny convolution, batch norm, pooling, linear, embedding, LSTM, GRU,
  transformer encoder and decoder layer, transposed convolution, two AdamW steps each,
  so that code pages, thread pools and first-use buffers belong to the baseline), runs
  ``gc.collect()``, resets the peak resident set (``echo 5 > /proc/self/clear_refs``)
  and takes the baseline as ``VmRSS``. It then builds the model (real weights), the
  optimizer and one input batch and runs 3 steps (forward, sum of the outputs,
  backward, step, ``zero_grad``) or 3 inference passes (eval, ``no_grad``); the real
  peak is ``VmHWM`` minus the baseline. Each case runs in ``--repeats`` fresh processes
  (3 by default); "real" is their median and the spread their lowest and highest.

Run: ``python benchmarks/memory_accuracy.py [--threads 1] [--repeats 3] [--models a,b]``.
Goal (issue 39): median |error| <= 20%, worst <= 40%.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
MiB = 1 << 20


def _status(key: str) -> int:
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"{key} not in /proc/self/status")


def _warm_up() -> None:
    import torch
    from torch import nn

    parts = [
        (
            nn.Sequential(
                nn.Conv2d(3, 4, 3),
                nn.BatchNorm2d(4),
                nn.ReLU(),
                nn.MaxPool2d(2),
                nn.ConvTranspose2d(4, 4, 2, 2),
                nn.Flatten(),
                nn.Linear(4 * 6 * 6, 4),
            ),
            lambda: torch.randn(2, 3, 8, 8),
        ),
        (
            nn.Sequential(
                nn.Embedding(16, 8), nn.TransformerEncoderLayer(8, 2, 16, batch_first=True)
            ),
            lambda: torch.randint(0, 16, (2, 4)),
        ),
    ]
    rnn, gru = nn.LSTM(8, 8, batch_first=True), nn.GRU(8, 8, batch_first=True)
    dec = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True)
    for module, make in parts:
        opt = torch.optim.AdamW(module.parameters())
        for _ in range(2):
            module(make()).float().sum().backward()
            opt.step()
            opt.zero_grad()
    opt = torch.optim.AdamW([*rnn.parameters(), *gru.parameters(), *dec.parameters()])
    for _ in range(2):
        x = torch.randn(2, 4, 8)
        (rnn(x)[0].sum() + gru(x)[0].sum() + dec(x, x).sum()).backward()
        opt.step()
        opt.zero_grad()
    with torch.no_grad():
        parts[0][0].eval()(parts[0][1]())


def child(name: str, mode: str, batch: int, threads: int) -> dict[str, int]:
    """The real peak above the baseline, measured in this (fresh) process."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch
    from memory_models import MODELS

    torch.set_num_threads(threads)
    _warm_up()
    gc.collect()
    with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
        f.write("5")
    base = _status("VmRSS:")
    build, shape, tokens, _ = MODELS[name]
    model = build()
    size = [batch, *shape]
    x = torch.randint(0, 1000, size) if tokens else torch.randn(size)
    if mode == "train":
        opt = torch.optim.AdamW(model.parameters())
        for _ in range(3):
            out = model(x)
            out.sum().backward()
            opt.step()
            opt.zero_grad()
            del out
    else:
        model.eval()
        with torch.no_grad():
            for _ in range(3):
                out = model(x)
                del out
    return {"peak": _status("VmHWM:") - base, "base": base}


def estimate(name: str, mode: str, batch: int) -> dict[str, Any]:
    """hwadvisor's estimate of the job here (CPU), less the runtime context: the model
    counted as a user's model is (``usermem.count_user_model``), priced on a CPU."""
    from memory_models import MODELS

    from hwadvisor.estimate.memory.parts import MemoryPlan, breakdown
    from hwadvisor.estimate.workload.usermem import count_user_model
    from hwadvisor.models.workload import ModelKind, Optimizer, Precision, Task, Workload

    builder, shape, _, _ = MODELS[name]
    counts = count_user_model(f"{HERE / 'memory_models.py'}:{builder.__name__}", shape, batch)
    params = sum(p.numel() for p in builder().parameters())
    task = Task.TRAIN if mode == "train" else Task.INFER
    wl = Workload(
        params=params,
        kind=ModelKind.OTHER,
        task=task,
        batch_size=batch,
        precision=Precision.FP32,
        optimizer=Optimizer.ADAMW,
        source="counted",
    )
    plan = MemoryPlan(precision=Precision.FP32, batch=batch)
    mb = breakdown(wl, plan, gpu=False, counts=counts)
    assert mb is not None and mb.total_bytes is not None and mb.upper_bytes is not None
    return {
        "estimate": mb.total_bytes - mb.runtime_bytes,
        "upper": mb.upper_bytes - mb.runtime_bytes,
        "method": counts.method.value,
        "params": params,
    }


def _real_once(name: str, mode: str, batch: int, threads: int) -> dict[str, int]:
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONWARNINGS": "ignore"}
    out = subprocess.run(
        [sys.executable, __file__, "--child", name, mode, str(batch), "--threads", str(threads)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=900,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _real(name: str, mode: str, batch: int, threads: int, repeats: int) -> dict[str, Any]:
    """The median real peak over ``repeats`` fresh processes, and their spread: the same
    job's resident peak moves between processes (the heap each one's warm-up leaves)."""
    peaks = sorted(_real_once(name, mode, batch, threads)["peak"] for _ in range(repeats))
    return {"peak": statistics.median(peaks), "low": peaks[0], "high": peaks[-1], "runs": peaks}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown CPU"


def main(argv: list[str] | None = None) -> int:
    """Print the table of estimated against real peaks and the error summary."""
    from memory_models import MODELS

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--repeats", type=int, default=3, help="fresh processes per case")
    ap.add_argument("--child", nargs=3, metavar=("MODEL", "MODE", "BATCH"))
    ap.add_argument("--json", type=Path, help="also write the rows as JSON")
    args = ap.parse_args(argv)
    if args.child:
        name, mode, batch = args.child
        print(json.dumps(child(name, mode, int(batch), args.threads)))
        return 0
    import torch

    # the estimate counts with the real runs' thread count (which kernels run depends on it)
    torch.set_num_threads(args.threads)
    print(f"{_cpu()}, {os.cpu_count()} CPUs, torch {torch.__version__}, threads {args.threads}")
    head = (
        f"{'model':20} {'mode':5} {'batch':>5} {'count':>5} {'estimated':>10} {'upper':>9}"
        f" {'real':>9} {'error':>7} {'real spread':>17}"
    )
    print(head)
    rows, errors = [], []
    for name in args.models.split(","):
        for mode in ("train", "infer"):
            for batch in MODELS[name][3]:
                est = estimate(name, mode, batch)
                real = _real(name, mode, batch, args.threads, args.repeats)
                err = (est["estimate"] - real["peak"]) / real["peak"]
                errors.append(abs(err))
                rows.append({"model": name, "mode": mode, "batch": batch, **est, "real": real})
                print(
                    f"{name:20} {mode:5} {batch:5d} {est['method']:>5} "
                    f"{est['estimate'] / MiB:9.1f}M {est['upper'] / MiB:8.1f}M "
                    f"{real['peak'] / MiB:8.1f}M {err:+7.1%}"
                    f" {real['low'] / MiB:7.1f}-{real['high'] / MiB:.1f}M",
                    flush=True,
                )
    print(
        f"median |error| {statistics.median(errors):.1%}, worst {max(errors):.1%} "
        f"over {len(errors)} cases (goal: median <= 20%, worst <= 40%)"
    )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
