"""Do verdicts hold under load? ``recommend`` for 10 workloads, idle and with 2x oversubscription.

Runs ``hwadvisor recommend ... --json`` (the real CLI, in child processes, each with its
own probe and quick microbenchmark, as a user would) for ten workloads on the machine as
it is, then starts ``2 x usable cores`` busy processes (pure-Python spin loops: twice as
many runnable threads as cores, before the benchmark's own), waits for the 1-minute load
average to show them, and runs the same ten again. Prints the verdicts side by side:
device class, confidence, deciding rule, and the reasons the confidence was lowered.

Goal: 10 of 10 device classes unchanged (the confidence may drop). The busy processes are
this script's children: each is killed and reaped in a ``finally`` (and on SIGTERM), every
child ``recommend`` has a timeout, and the whole run has a deadline.

Both passes share one fresh cache folder (``HWADVISOR_CACHE_DIR``), as the runs of one
user on one machine do: a steady quick bench of the first pass is kept, and a busy one of
the second takes its CPU figures (``hwadvisor.bench.remembered``); ``--no-memory`` runs
with keeping off, so the busy pass falls back to the theoretical peak, as on a machine
whose first run is a busy one. The table counts the busy-pass runs that used kept figures.

Not a test: the "idle" pass is only as idle as the machine is (the load average is printed
before each pass). Usage: ``python benchmarks/verdict_under_load.py [--factor 2]
[--no-memory] [--json FILE]``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

#: The ten workloads: every scenario, CPU-friendly and GPU-bound jobs, serving at low and
#: high rates, so a flip in either direction would show.
WORKLOADS: list[tuple[str, list[str]]] = [
    ("bert-base inference, 5 QPS", ["-s", "inference", "-m", "bert-base", "--qps", "5"]),
    (
        "bert-base inference, 200 QPS, 20 ms",
        ["-s", "inference", "-m", "bert-base", "--qps", "200", "--latency-ms", "20"],
    ),
    ("resnet50 inference, 2 QPS", ["-s", "inference", "-m", "resnet50", "--qps", "2"]),
    (
        "resnet50 training, ImageNet, 8 h",
        ["-s", "training", "-m", "resnet50", "--dataset-size", "1281167", "--deadline", "8"],
    ),
    (
        "small MLP training, 10k samples",
        [
            "-s",
            "training",
            "--params",
            "1M",
            "--flops-per-sample",
            "2e6",
            "--dataset-size",
            "10000",
            "--deadline",
            "1",
        ],
    ),
    (
        "bert-base fine-tune, 100k samples, 24 h",
        ["-s", "training", "-m", "bert-base", "--dataset-size", "100000", "--epochs", "3"],
    ),
    ("resnet50 prototyping", ["-s", "prototyping", "-m", "resnet50", "--dataset-size", "1000"]),
    ("yolov5n edge, 100 ms", ["-s", "edge", "-m", "yolov5n", "--latency-ms", "100"]),
    ("llama-7b distributed", ["-s", "distributed", "-m", "llama-7b", "--dataset-size", "100000"]),
    ("preprocessing", ["-s", "preprocessing"]),
]
#: Seconds one ``recommend`` may take (probe + quick bench + estimate: ~5-15 s here).
PER_RUN_TIMEOUT_S = 180.0
#: The whole script's deadline, busy processes included.
TOTAL_DEADLINE_S = 1800.0
#: How long to wait for the 1-minute load average to show the busy processes.
LOAD_WAIT_S = 75.0
SPIN = "while True:\n    pass\n"


def usable_cores() -> int:
    """Cores this process may run on (affinity), as the busy processes will compete for."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def load() -> float | None:
    """The 1-minute load average."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def recommend(args: list[str]) -> dict[str, Any]:
    """One ``hwadvisor recommend --json`` run: its verdict and the bench's load, or the error."""
    cmd = [sys.executable, "-m", "hwadvisor", "recommend", *args, "--json"]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, timeout=PER_RUN_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {PER_RUN_TIMEOUT_S:.0f} s"}
    wall = time.perf_counter() - t0
    if proc.returncode not in (0, 1, 3) or not proc.stdout.strip():
        return {"error": f"exit {proc.returncode}: {proc.stderr.strip()[-200:]}", "wall_s": wall}
    doc = json.loads(proc.stdout)
    v = doc["verdict"]
    bench = doc.get("bench") or {}
    results = bench.get("results") or []
    return {
        "device": v["device"],
        "confidence": v["confidence"],
        "rule": v.get("rule"),
        "reasons": v.get("confidence_reasons") or [],
        "bench_load": bench.get("load_avg_1m"),
        "unreliable": sum(1 for r in results if r.get("reliable") is False),
        "kept_figures": sum(1 for r in results if r.get("measured_at")),
        "figures": len(results),
        "wall_s": round(wall, 1),
        "here": _here_figures(doc),
    }


def _here_figures(doc: dict[str, Any]) -> dict[str, Any]:
    """This CPU's estimate the verdict read (throughput, step, total and their bands), so a
    verdict that moved can be traced to the figure that moved it."""
    here = (doc.get("estimates") or {}).get("here") or {}
    keys = ("throughput_samples_s", "step_time_s", "total_time_s")
    bands = ("throughput_band", "time_band_s", "total_time_band_s")
    out: dict[str, Any] = {k: here.get(k) for k in keys}
    for k in bands:
        band = here.get(k) or {}
        out[k] = [band.get("low"), band.get("high")] if band else None
    return out


def run_pass(name: str) -> list[dict[str, Any]]:
    """The ten workloads, one after another, with a line of progress each."""
    print(f"\n{name} pass: load average {load()} on {usable_cores()} cores", flush=True)
    out = []
    for label, args in WORKLOADS:
        r = recommend(args)
        out.append(r)
        shown = r.get("error") or f"{r['device']} / {r['confidence']} ({r['rule']})"
        print(f"  {label:<40} {shown}  [{r.get('wall_s', '?')} s]", flush=True)
    return out


@contextmanager
def busy(count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    """``count`` spinning child processes, killed and reaped however the block ends."""
    procs: list[subprocess.Popen[bytes]] = []

    def stop(*_: object) -> None:
        for p in procs:
            if p.poll() is None:
                p.kill()
        for p in procs:
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                print(f"busy process {p.pid} did not exit", file=sys.stderr)

    previous = signal.signal(signal.SIGTERM, lambda *a: (stop(), sys.exit(143)))
    try:
        for _ in range(count):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", SPIN],
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        yield procs
    finally:
        stop()
        signal.signal(signal.SIGTERM, previous)


def wait_for_load(target: float) -> None:
    """Wait (at most :data:`LOAD_WAIT_S`) until the 1-minute average reaches ``target``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < LOAD_WAIT_S:
        now = load()
        if now is None or now >= target:
            break
        time.sleep(2.0)
    print(f"load average {load()} after {time.monotonic() - t0:.0f} s of busy processes")


def table(idle: list[dict[str, Any]], loaded: list[dict[str, Any]]) -> int:
    """Print the verdicts side by side; return how many device classes held."""

    def cell(r: dict[str, Any]) -> str:
        if "error" in r:
            return "error"
        return f"{r['device']:<9} {r['confidence']:<6} {r['rule'] or '-':<6}"

    print(f"\n{'workload':<40} {'idle':<24} {'busy':<24} same")
    held = 0
    for (label, _), a, b in zip(WORKLOADS, idle, loaded, strict=True):
        same = "error" not in a and "error" not in b and a["device"] == b["device"]
        held += same
        print(f"{label:<40} {cell(a):<24} {cell(b):<24} {'yes' if same else 'NO'}")
    for (label, _), b in zip(WORKLOADS, loaded, strict=True):
        for reason in b.get("reasons", [])[:1]:
            print(f"  busy, {label}: {reason}")
    return held


def main() -> int:
    """Both passes, the side-by-side table and the goal line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--factor", type=float, default=2.0, help="busy processes per core")
    parser.add_argument("--json", help="also write both passes' verdicts to this file")
    parser.add_argument(
        "--no-memory", action="store_true", help="keep no steady figures between the runs"
    )
    args = parser.parse_args()
    import tempfile

    folder = tempfile.mkdtemp(prefix="hwadvisor-verdicts-")
    os.environ["HWADVISOR_CACHE_DIR"] = "off" if args.no_memory else folder
    print(f"kept figures: {os.environ['HWADVISOR_CACHE_DIR']} (removed at the end)", flush=True)
    signal.signal(signal.SIGALRM, lambda *a: (_ for _ in ()).throw(TimeoutError("deadline")))
    signal.alarm(int(TOTAL_DEADLINE_S))
    cores = usable_cores()
    try:
        idle = run_pass("idle")
        count = max(1, round(args.factor * cores))
        print(f"\nstarting {count} busy processes ({args.factor:g}x {cores} cores)", flush=True)
        with busy(count):
            wait_for_load(0.75 * count)
            loaded = run_pass(f"busy ({count} spinning processes)")
    finally:
        signal.alarm(0)
        shutil.rmtree(folder, ignore_errors=True)  # the kept figures were this run's only
    held = table(idle, loaded)
    unreliable = [b.get("unreliable", 0) for b in loaded]
    print(
        f"\n{held} of {len(WORKLOADS)} verdicts unchanged (goal: {len(WORKLOADS)}); "
        f"confidence lower in {sum(1 for a, b in zip(idle, loaded, strict=True) if a.get('confidence') != b.get('confidence'))}; "
        f"busy-pass bench figures marked unreliable: {sum(unreliable)} of "
        f"{sum(b.get('figures', 0) for b in loaded)}; busy-pass runs on kept figures: "
        f"{sum(1 for b in loaded if b.get('kept_figures'))}; load average now {load()}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"cores": cores, "idle": idle, "busy": loaded}, fh, indent=2)
    return 0 if held == len(WORKLOADS) else 1


if __name__ == "__main__":
    sys.exit(main())
