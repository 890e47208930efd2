"""Startup benchmark: `hwadvisor check --json` against `python -m torch.utils.collect_env`.

Runs the two commands alternately (so machine noise hits both alike), prints each median,
the ratio, and how many facts each reports. Goal on the 2-core development machine:
check median <= 0.25 s and >= 10x faster than collect_env.

    python benchmarks/startup.py [--runs 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time


def timed(cmd: list[str]) -> tuple[float, str]:
    """Wall time of one run of ``cmd`` and its stdout."""
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(
            f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()[-300:]}"
        )
    return elapsed, proc.stdout


def count_leaves(value: object) -> int:
    """Number of non-null scalar facts in a JSON value."""
    if isinstance(value, dict):
        return sum(count_leaves(v) for v in value.values())
    if isinstance(value, list):
        return sum(count_leaves(v) for v in value)
    return 0 if value is None else 1


def main() -> None:
    """Run both commands alternately and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    args = parser.parse_args()
    check_cmd = [sys.executable, "-m", "hwadvisor", "check", "--json"]
    env_cmd = [sys.executable, "-m", "torch.utils.collect_env"]
    timed(check_cmd)  # warm the page cache for both before measuring
    timed(env_cmd)
    check_times: list[float] = []
    env_times: list[float] = []
    check_out = env_out = ""
    for _ in range(args.runs):
        t, check_out = timed(check_cmd)
        check_times.append(t)
        t, env_out = timed(env_cmd)
        env_times.append(t)
    facts = json.loads(check_out)
    check_facts = count_leaves({k: v for k, v in facts.items() if k != "cpu"}) + count_leaves(
        {k: v for k, v in facts["cpu"].items() if k != "flags"}
    )
    env_facts = sum(
        1 for line in env_out.splitlines() if ":" in line and not line.rstrip().endswith(": N/A")
    )
    cm, em = statistics.median(check_times), statistics.median(env_times)
    print(f"runs each:                   {args.runs} (alternating)")
    print(
        f"hwadvisor check --json:      median {cm:.3f} s  (min {min(check_times):.3f}, max {max(check_times):.3f})"
    )
    print(
        f"torch.utils.collect_env:     median {em:.3f} s  (min {min(env_times):.3f}, max {max(env_times):.3f})"
    )
    print(f"speed-up (median ratio):     {em / cm:.1f}x")
    print(
        f"facts reported:              hwadvisor {check_facts} (+{len(facts['cpu']['flags'])} raw flags), collect_env {env_facts} lines with a value"
    )
    print(f"goal check <= 0.25 s:        {'met' if cm <= 0.25 else 'NOT met'}")
    print(f"goal >= 10x collect_env:     {'met' if em / cm >= 10 else 'NOT met'}")


if __name__ == "__main__":
    main()
