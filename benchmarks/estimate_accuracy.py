"""Accuracy of the CPU time estimate "here": estimated against measured training steps.

For each model it

1. runs ``hwadvisor bench``'s own CPU bench (``run_bench``, as a user gets it) and
   estimates one AdamW training step "here" from those figures (the model is not run for
   the estimate: user models are counted on the meta device, the catalog's ResNet-50 comes
   from its entry);
2. then trains the real model a few steps on this CPU, in a fresh process, and takes the
   median step time.

Bench and steps alternate for each round, so both see the same load on a shared machine.
It prints each model's estimate beside its measurement, the median and the worst error.
The models are of two kinds: those the CPU model was written against (``seen``) and
models it never looked at (``held-out``: YOLOv5n, BERT-base's encoder, an LSTM, and a
causal-mask language model on ``nn.TransformerEncoder``). The goal: held-out median
|error| <= 25%, none over 45%.

    python benchmarks/estimate_accuracy.py [--rounds 3] [--steps 6] [--threads N] [--only NAME] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "models"

#: (name, kind, model spec for the estimate, file:callable run for the measurement,
#: input shape, batch, loss: "labels" (cross-entropy over class logits) or "sum")
CASES: list[tuple[str, str, str, str, list[int], int, str]] = [
    ("mlp", "seen", f"{MODELS}/mlp.py:build", f"{MODELS}/mlp.py:build", [784], 64, "labels"),
    ("cnn-bn", "seen", f"{MODELS}/cnn.py:build", f"{MODELS}/cnn.py:build", [3, 32, 32], 32, "labels"),
    ("encoder", "seen", f"{MODELS}/encoder.py:build", f"{MODELS}/encoder.py:build", [128], 16, "labels"),
    ("resnet50 (catalog)", "seen", "resnet50", f"{MODELS}/resnet.py:build", [3, 224, 224], 4, "labels"),
    ("yolov5n", "held-out", f"{MODELS}/yolov5n.py:build", f"{MODELS}/yolov5n.py:build", [3, 320, 320], 4, "sum"),
    ("bert-base", "held-out", f"{MODELS}/bert.py:build", f"{MODELS}/bert.py:build", [128], 2, "labels"),
    ("lstm", "held-out", f"{MODELS}/rnn.py:lstm", f"{MODELS}/rnn.py:lstm", [64, 32], 32, "labels"),
    ("causal-lm", "held-out", f"{MODELS}/causal_encoder.py:build", f"{MODELS}/causal_encoder.py:build", [64], 16, "sum"),
]  # fmt: skip
THREADS: int | None = None


def threads() -> int:
    """Threads for the bench and the steps: ``--threads``, else the usable cores."""
    if THREADS:
        return THREADS
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def measure(spec: str, shape: list[int], batch: int, steps: int, loss: str) -> list[float]:
    """Seconds of each of ``steps`` AdamW training steps of the real model, in a fresh
    process (as the user's job runs)."""
    call = json.dumps([spec, shape, batch, steps, loss, threads()])
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "import estimate_accuracy as ea; a = json.loads(sys.argv[1]); ea.THREADS = a[5]; "
        "print(json.dumps(ea.steps(*a[:5])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, call], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the steps of {spec} failed: {done.stderr.strip()[-400:]}")
    return [float(t) for t in json.loads(done.stdout.strip().splitlines()[-1])]


def steps(spec: str, shape: list[int], batch: int, count: int, loss: str) -> list[float]:
    """The timed steps (in this process), after two warm-up steps."""
    import torch

    from hwadvisor.estimate.workload.loading import load_callable

    torch.set_num_threads(threads())
    model = load_callable(spec)()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    first = next(m for m in model.modules() if len(list(m.children())) == 0)
    tokens = isinstance(first, torch.nn.Embedding)
    x = torch.randint(0, 1000, (batch, *shape)) if tokens else torch.randn(batch, *shape)
    labels = torch.zeros(batch, dtype=torch.long)
    times = []
    for i in range(count + 2):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(x)
        if loss == "sum":
            out = torch.cat([o.flatten() for o in out]) if isinstance(out, list) else out
            out.float().sum().backward()
        else:
            torch.nn.functional.cross_entropy(out, labels).backward()
        opt.step()
        if i >= 2:
            times.append(time.perf_counter() - start)
    return times


def _workload(spec: str, shape: list[int], batch: int) -> Any:
    from hwadvisor.estimate import build_workload

    kw: dict[str, Any] = {"model": spec, "batch_size": batch, "precision": "fp32"}
    if ":" in spec:
        kw["input_shape"] = shape
    return build_workload(**kw)


def main() -> int:
    global THREADS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--only", action="append", default=None, help="a model name (repeatable)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    THREADS = args.threads
    import torch

    from hwadvisor.bench.runner import run_bench
    from hwadvisor.estimate import estimate_workload
    from hwadvisor.probe import probe_machine

    torch.set_num_threads(threads())
    facts = probe_machine()
    print(
        f"cpu: {facts.cpu.model} ({platform.machine()}), {threads()} threads, torch {torch.__version__}"
    )
    print(
        f"{'model':20s} {'kind':9s} {'batch':>5s} {'estimated':>10s} {'measured':>9s} {'error':>7s}"
    )
    rows = []
    for name, kind, spec, run_spec, shape, batch, loss in CASES:
        if args.only and name not in args.only:
            continue
        wl = _workload(spec, shape, batch)
        ests, meas, parts = [], [], {}
        for _ in range(args.rounds):
            bench = run_bench(facts=facts, device="cpu")
            est = estimate_workload(wl, facts=facts, bench=bench, on=["here"]).estimates[0]
            ests.append(est.step_time_s or float("nan"))
            parts = est.time_breakdown_s
            meas.extend(measure(run_spec, shape, batch, args.steps, loss))
        estimated, measured = statistics.median(ests), statistics.median(meas)
        err = (estimated - measured) / measured
        rows.append({"model": name, "kind": kind, "batch": batch, "estimated_s": estimated,
                     "measured_s": measured, "error": err, "breakdown_s": parts})  # fmt: skip
        print(f"{name:20s} {kind:9s} {batch:5d} {estimated * 1e3:8.1f}ms {measured * 1e3:7.1f}ms {err:+7.1%}", flush=True)  # fmt: skip
    ok = True
    for kind in ("seen", "held-out"):
        errs = [abs(r["error"]) for r in rows if r["kind"] == kind]
        if errs:
            med, worst = statistics.median(errs), max(errs)
            print(f"{kind}: median |error| {med:.1%}, worst {worst:.1%}")
            ok = ok and (kind != "held-out" or (med <= 0.25 and worst <= 0.45))
    print("goal (held-out): median <= 25%, worst <= 45%")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
