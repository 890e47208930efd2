"""Quality of `hwadvisor bench` on this machine: wall time, agreement with a long reference, stability.

Runs ``hwadvisor bench --device cpu --json`` N times (child processes from a cold start,
as a user would), then a long reference measurement in this process: every planned
figure at its own size, timed for a full second with the same
``torch.utils.benchmark.Timer`` and thread count. Prints:

- the default bench's wall time (goal: at most its 10 s budget plus 3 s of the process's
  start and exit) and the budget it reports using;
- each figure (median of the N runs, where it was measured) against the reference
  (goal: within 10%), and how many runs measured it;
- the run-to-run spread of the N runs, (max - min) / median (goal: under 10%).

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
from typing import Any

REF_MIN_RUN_S = 1.0
#: The default budget, and the most the process's start and exit may add to it.
BUDGET_S = 10.0
START_AND_EXIT_S = 3.0

Key = tuple[str, str, tuple[int, ...]]


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
        print(
            f"  run {i + 1}: {walls[-1]:.1f} s wall, {docs[-1]['elapsed_s']:.1f} s reported, "
            f"{len(docs[-1]['results'])} figures, load {os.getloadavg()[0]:.1f}",
            file=sys.stderr,
        )
    return walls, docs


def reference() -> dict[Key, tuple[float, str]]:
    """Every planned CPU figure at its own size, timed for a full second: {key: (value, unit)}."""
    from hwadvisor.bench.devices import resolve
    from hwadvisor.bench.kernels import plan
    from hwadvisor.bench.sizing import classify
    from hwadvisor.bench.timing import time_statement
    from hwadvisor.optional import import_torch
    from hwadvisor.probe import probe_machine

    torch = import_torch()
    facts = probe_machine()
    (target,) = resolve(torch, "cpu", facts)
    out: dict[Key, tuple[float, str]] = {}
    for case in plan(torch, target, facts, facts.memory.available_bytes):
        shape = case.ladder[case.start]
        try:
            fn = case.build(shape)
            fn()
            t = time_statement(fn, threads=target.threads, sync=None, min_run_s=REF_MIN_RUN_S)
        except Exception as exc:  # reported and passed over, as the bench does
            print(f"  ref {case.kernel} {case.dtype}: {classify(exc)}", file=sys.stderr)
            continue
        finally:
            if case.after is not None:
                case.after()
        value = case.work(shape) / t.median_s / 1e9
        out[(case.kernel, case.dtype, shape)] = (value, case.unit)
        print(f"  ref {case.kernel} {case.dtype} {list(shape)}: {value:.3g} {case.unit}", file=sys.stderr)  # fmt: skip
    return out


def figures(doc: dict[str, Any]) -> dict[Key, float]:
    """The CPU figures of one bench document, by kernel, dtype and shape."""
    return {
        (r["kernel"], r["dtype"], tuple(r["shape"])): r["value"]
        for r in doc["results"]
        if r["device"] == "cpu"
    }


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

    device = docs[0]["devices"][0]
    print(f"\nbench quality, {device['name']}, {device['threads']} threads, torch {docs[0]['torch_version']}")  # fmt: skip
    print(f"load average: {load_start:.1f} at start, {load_end:.1f} at end; reference took {ref_s:.0f} s\n")  # fmt: skip
    goal = BUDGET_S + START_AND_EXIT_S
    ok = "ok" if max(walls) <= goal else "MISSED"
    elapsed = [d["elapsed_s"] for d in docs]
    print(f"wall time: median {statistics.median(walls):.1f} s, max {max(walls):.1f} s (goal <= {goal:g} s: {ok}); "
          f"reported {min(elapsed):.1f}-{max(elapsed):.1f} s of {BUDGET_S:g}\n")  # fmt: skip
    print(f"{'figure':<36}{'bench':>12}{'runs':>6}{'reference':>12}{'diff':>8}{'spread':>9}  goal")
    runs = [figures(d) for d in docs]
    for key, (ref_v, unit) in ref.items():
        vals = [f[key] for f in runs if key in f]
        label = f"{key[0]} {key[1]} {'x'.join(map(str, key[2]))} {unit}"
        if not vals:
            print(f"{label:<36}{'not measured':>12}")
            continue
        med = statistics.median(vals)
        spread = (max(vals) - min(vals)) / med if med else float("nan")
        diff = (med - ref_v) / ref_v if ref_v else float("nan")
        verdict = f"within 10%: {'ok' if abs(diff) <= 0.10 else 'MISSED'}; spread < 10%: {'ok' if spread < 0.10 else 'MISSED'}"  # fmt: skip
        print(f"{label:<36}{med:>12.3g}{len(vals):>6}{ref_v:>12.3g}{diff:>+8.0%}{spread:>9.0%}  {verdict}")  # fmt: skip


if __name__ == "__main__":
    main()
