"""Accuracy of the "here" estimate for inference of small batches: products of few rows,
with the weights in the cache and past it.

A forward pass of batch B multiplies B rows by each layer's weight. Where the model's
weights are larger than the last-level cache the threads reach, every weight comes from
DRAM at every pass, and a product of few rows does too little work per weight byte to
hide that: the bench's ``matmul_rows_cold`` figures measure it, and the estimate prices
such products by them (docs/estimates.md section 3). This benchmark estimates inference
passes of two MLPs "here" from ``hwadvisor bench``'s own run, then times the real passes
(``eval()``, ``torch.inference_mode()``) in the same round, so both see the same load:

- ``wide``: 2048-4096-4096-4096-1000, 46 M parameters, 184 MB of fp32 weights;
- ``small``: 784-1024-1024-10, 1.9 M parameters, 7.6 MB, inside the cache;
- ``wide`` again in bf16 (the model and its input cast), on a CPU with a bf16 dot
  product, where the bench measures its rows figures in bf16 too.

The ``hot`` column is the same estimate with the cold figures left out (every weight
priced as if in cache), the estimate before they were measured.

    python benchmarks/inference_rows.py [--rounds 3] [--passes 20] [--threads N] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import estimate_accuracy as ea  # the sibling benchmark: its probe, bench and helpers

MODELS = ea.MODELS
#: (name, model spec, one sample's shape, batches, precision)
CASES = [
    ("wide", f"{MODELS}/mlp.py:wide", [2048], (1, 8, 32), "fp32"),
    ("small", f"{MODELS}/mlp.py:build", [784], (1, 8), "fp32"),
    # in bf16 on a CPU with a bf16 dot product: the bench's bf16 rows figures
    ("wide", f"{MODELS}/mlp.py:wide", [2048], (1, 8, 32), "bf16"),
]


def passes(spec: str, shape: list[int], batch: int, count: int, precision: str) -> list[float]:
    """Seconds of ``count`` timed inference passes of the model at ``batch``, after three
    untimed ones, the model and its input in ``precision`` (fp32 or bf16)."""
    import torch

    from hwadvisor.estimate.workload.loading import load_callable

    dtype = torch.bfloat16 if precision == "bf16" else torch.float32
    model = load_callable(spec)().eval().to(dtype)
    x = torch.randn(batch, *shape, dtype=dtype)
    times = []
    with torch.inference_mode():
        for i in range(count + 3):
            start = time.perf_counter()
            model(x)
            if i >= 3:
                times.append(time.perf_counter() - start)
    return times


def without_cold(bench: Any) -> Any:
    """The bench report without its ``matmul_rows_cold`` figures."""
    kept = [r for r in bench.results if r.kernel != "matmul_rows_cold"]
    return bench.model_copy(update={"results": kept})


def main() -> int:
    """Run every case, print the table; exit 1 when the goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--passes", type=int, default=20)
    parser.add_argument("--threads", type=int, default=None, help="default: all usable cores")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    ea.THREADS = args.threads
    ea.FACTS = ea.probed()
    import torch

    from hwadvisor.estimate import build_workload, estimate_workload
    from hwadvisor.models.workload import Precision, Task

    torch.set_num_threads(ea.threads())
    print(f"cpu: {ea._cpu()}; load average at the start: {ea._load()}")
    l3 = ea.FACTS.cpu.l3_bytes
    cache = f"L3 {l3 / 2**20:.0f} MiB" if l3 else "L3 unknown"
    print(
        f"threads: {ea.threads()}, torch {torch.__version__}, {args.rounds} rounds of (bench, "
        f"passes), {cache}"
    )
    from hwadvisor.bench.kernels import native_bf16

    jobs = [
        (name, spec, tuple(shape), batch, precision)
        for name, spec, shape, cases, precision in CASES
        for batch in cases
        if precision == "fp32" or native_bf16(ea.FACTS)
    ]  # fmt: skip
    loads = {
        job: build_workload(
            model=job[1], input_shape=list(job[2]), batch_size=job[3], task=Task.INFER,
            precision=Precision(job[4]),
        )
        for job in jobs
    }  # fmt: skip
    ests: dict[Any, list[float]] = {job: [] for job in jobs}
    hots: dict[Any, list[float]] = {job: [] for job in jobs}
    meas: dict[Any, list[float]] = {job: [] for job in jobs}
    for _ in range(args.rounds):
        bench, _ = ea.product_bench()
        for job in jobs:
            wl = loads[job]
            est = estimate_workload(wl, facts=ea.FACTS, bench=bench, on=["here"]).estimates[0]
            hot = estimate_workload(wl, facts=ea.FACTS, bench=without_cold(bench), on=["here"])
            ests[job].append(est.step_time_s or float("nan"))
            hots[job].append(hot.estimates[0].step_time_s or float("nan"))
        for job in jobs:
            meas[job] += passes(job[1], list(job[2]), job[3], args.passes, job[4])
    print(f"{'model':8s} {'dtype':5s} {'params':>7s} {'batch':>5s} {'estimated':>10s} {'hot':>9s} {'measured':>9s} {'error':>7s} {'hot error':>9s}")  # fmt: skip
    rows = []
    for job in jobs:
        name, _, _, batch, precision = job
        wl = loads[job]
        estimated, hot = statistics.median(ests[job]), statistics.median(hots[job])
        measured = statistics.median(meas[job])
        err, hot_err = estimated / measured - 1.0, hot / measured - 1.0
        rows.append({
            "model": name, "precision": precision, "batch": batch, "params": wl.params, "estimated_s": estimated,
            "hot_s": hot, "measured_s": measured, "error": err, "hot_error": hot_err,
            "estimates_s": ests[job], "hot_estimates_s": hots[job], "measured_all_s": meas[job],
        })  # fmt: skip
        print(
            f"{name:8s} {precision:5s} {(wl.params or 0) / 1e6:6.1f}M {batch:5d} {estimated * 1e3:8.2f}ms "
            f"{hot * 1e3:7.2f}ms {measured * 1e3:7.2f}ms {err:+7.1%} {hot_err:+9.1%}",
            flush=True,
        )
    errs = [abs(r["error"]) for r in rows]
    med, worst = statistics.median(errs), max(errs)
    hot_errs = [abs(r["hot_error"]) for r in rows]
    print(
        f"median |error| {med:.1%}, max {worst:.1%} (hot: {statistics.median(hot_errs):.1%}, "
        f"{max(hot_errs):.1%}; goal: median <= 12%, none over 30%)"
    )
    print(f"load average at the end: {ea._load()}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "median": med, "max": worst}, indent=2))
    return 0 if med <= 0.12 and worst <= 0.30 else 1


if __name__ == "__main__":
    sys.exit(main())
