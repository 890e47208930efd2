"""Quality of `hwadvisor bench` on this machine: speed, agreement with a long reference, stability.

Runs ``hwadvisor bench --device cpu --json`` five times (child processes, as a user would),
then a long reference measurement of the same kernels in this process: every size of each
kernel's ladder up to a per-call cap, each timed for a full second with the same
``torch.utils.benchmark.Timer`` and the same thread count, keeping the best size. Prints:

- the default bench's wall time (goal: at most 10 s);
- each matmul / conv2d figure (median of the five runs) against the reference (goal: within 10%);
- the run-to-run spread of the five runs, (max - min) / median (goal: under 10%);
- the bf16 / fp32 matmul ratio found by both.

Not a test: figures depend on the machine and on what else runs on it (the load average
is printed before and after). Usage: ``python benchmarks/bench_quality.py [--runs N]``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import warnings
from typing import Any

REF_MIN_RUN_S = 1.0
#: Sizes whose single call takes longer than this are not tried by the reference.
REF_MAX_CALL_S = 1.0
COMPUTE = [
    ("matmul", "fp32"),
    ("matmul", "bf16"),
    ("matmul", "fp16"),
    ("matmul", "int8"),
    ("conv2d", "fp32"),
    ("conv2d", "bf16"),
]
STREAMS = [("copy", "fp32"), ("triad", "fp32")]


def run_cli(runs: int) -> tuple[list[float], list[dict[str, Any]]]:
    """Wall times and JSON documents of ``runs`` default CPU bench runs."""
    walls, docs = [], []
    for i in range(runs):
        t0 = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "hwadvisor", "bench", "--device", "cpu", "--json"],
            capture_output=True,
            text=True,
            check=False,
        )
        walls.append(time.perf_counter() - t0)
        if proc.returncode != 0:
            raise SystemExit(f"bench run {i + 1} failed ({proc.returncode}): {proc.stderr.strip()}")
        docs.append(json.loads(proc.stdout))
        shapes = ", ".join(
            f"{r['kernel']} {r['dtype']} {r['shape']} {r['value']:.3g}" for r in docs[-1]["results"]
        )
        print(
            f"  run {i + 1}: {walls[-1]:.1f} s wall, load {os.getloadavg()[0]:.1f}: {shapes}",
            file=sys.stderr,
        )
    return walls, docs


def reference() -> dict[tuple[str, str], tuple[float, list[int]]]:
    """Best throughput over the ladder of each kernel, long-timed: {(kernel, dtype): (value, shape)}."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import torch

    from hwadvisor.bench.devices import resolve
    from hwadvisor.bench.kernels import plan
    from hwadvisor.bench.sizing import OutOfMemory, Unsupported
    from hwadvisor.bench.timing import make_measure
    from hwadvisor.probe import probe_machine

    facts = probe_machine()
    (target,) = resolve(torch, "cpu", facts)
    best: dict[tuple[str, str], tuple[float, list[int]]] = {}
    for case in plan(torch, target, facts, facts.memory.available_bytes):
        measure = make_measure(
            torch, case.build, device_kind="cpu", threads=target.threads, sync=None
        )
        for shape in case.ladder:
            try:
                t = measure(shape, REF_MIN_RUN_S, None)
            except (Unsupported, OutOfMemory) as exc:
                print(f"  ref {case.kernel} {case.dtype}: {exc}", file=sys.stderr)
                break
            value = case.work(shape) / t.median_s / 1e9
            key = (case.kernel, case.dtype)
            if key not in best or value > best[key][0]:
                best[key] = (value, list(shape))
            print(
                f"  ref {case.kernel} {case.dtype} {list(shape)}: {value:.3g} {case.unit} ({t.runs} runs)",
                file=sys.stderr,
            )
            if t.median_s > REF_MAX_CALL_S / 8:
                break  # the next size would take over the per-call cap (8x the work)
        if case.after is not None:
            case.after()
    return best


def figure(doc: dict[str, Any], kernel: str, dtype: str) -> float | None:
    """The figure for ``kernel``/``dtype`` on the CPU in one bench document."""
    vals = [
        r["value"]
        for r in doc["results"]
        if r["device"] == "cpu" and r["kernel"] == kernel and r["dtype"] == dtype
    ]
    return max(vals) if vals else None


def main() -> None:
    """Run the bench N times and the reference, then print the quality table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    load_start = os.getloadavg()[0]
    print(f"{args.runs} default bench runs...", file=sys.stderr)
    walls, docs = run_cli(args.runs)
    print("long reference...", file=sys.stderr)
    t0 = time.perf_counter()
    ref = reference()
    ref_s = time.perf_counter() - t0
    load_end = os.getloadavg()[0]

    print(
        f"\nbench quality, {docs[0]['devices'][0]['name']}, {docs[0]['devices'][0]['threads']} threads, torch {docs[0]['torch_version']}"
    )
    print(
        f"load average: {load_start:.1f} at start, {load_end:.1f} at end; reference took {ref_s:.0f} s\n"
    )
    wall_med = statistics.median(walls)
    print(
        f"{'check':<26}{f'bench (median of {len(docs)})':>22}{'reference':>16}{'diff':>8}{'spread':>9}  goal"
    )
    ok = "ok" if max(walls) <= 10 else "MISSED"
    print(
        f"{'default wall time':<26}{wall_med:>19.1f} s{'':>16}{'':>8}{'':>9}  <= 10 s: {ok} (max {max(walls):.1f} s)"
    )
    for kernel, dtype in COMPUTE + STREAMS:
        vals = [v for v in (figure(d, kernel, dtype) for d in docs) if v is not None]
        if not vals:
            print(f"{kernel + ' ' + dtype:<26}{'skipped':>22}")
            continue
        med = statistics.median(vals)
        spread = (max(vals) - min(vals)) / med if med else float("nan")
        unit = (
            "GB/s" if kernel in ("copy", "triad") else ("GOP/s" if dtype == "int8" else "GFLOP/s")
        )
        ref_v, ref_shape = ref.get((kernel, dtype), (float("nan"), []))
        diff = (med - ref_v) / ref_v if ref_v == ref_v and ref_v else float("nan")
        goal = ""
        if (kernel, dtype) in COMPUTE:
            goal = f"within 10%: {'ok' if abs(diff) <= 0.10 else 'MISSED'}; spread < 10%: {'ok' if spread < 0.10 else 'MISSED'}"
        label = f"{kernel} {dtype} {unit}"
        print(
            f"{label:<26}{med:>22.3g}{ref_v:>16.3g}{diff:>+8.0%}{spread:>9.0%}  {goal}  (ref at {ref_shape})"
        )
    ratios = [
        b / f
        for b, f in ((figure(d, "matmul", "bf16"), figure(d, "matmul", "fp32")) for d in docs)
        if b and f
    ]
    ref_ratio = (
        ref[("matmul", "bf16")][0] / ref[("matmul", "fp32")][0]
        if ("matmul", "bf16") in ref and ("matmul", "fp32") in ref
        else float("nan")
    )
    if ratios:
        print(
            f"{'bf16/fp32 matmul ratio':<26}{statistics.median(ratios):>22.3f}{ref_ratio:>16.3f}{'':>8}{(max(ratios) - min(ratios)) / statistics.median(ratios):>9.0%}"
        )


if __name__ == "__main__":
    main()
