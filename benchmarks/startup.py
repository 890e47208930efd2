"""Startup benchmark: `hwadvisor check --json` against `python -m torch.utils.collect_env`.

Runs the two commands alternately (so machine noise hits both alike), prints each median,
the ratio, and how many facts each reports. Goal on the 2-core development machine:
check median <= 0.25 s and >= 10x faster than collect_env.

With ``--candidates`` it instead times the ways of defining the facts document side by
side (``benchmarks/_candidates.py``): each run is a fresh process that imports the
definition, probes every recorded host into it, checks and prints the documents; the
candidates alternate, and the interpreter's own start is timed beside them.

    python benchmarks/startup.py [--runs 7] [--candidates]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

HOSTS = Path(__file__).resolve().parents[1] / "tests" / "data" / "hosts"


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


def candidates(runs: int) -> None:
    """Time each facts definition in ``_candidates.py``, alternating, and print a table."""
    sys.path.insert(0, str(Path(__file__).parent))
    from _candidates import CANDIDATES

    code = "import sys; sys.path.insert(0, {here!r}); import _candidates; _candidates.run({name!r}{verify})"
    here = str(Path(__file__).parent)
    cmds = {"interpreter only": [sys.executable, "-c", "pass"]}
    for name in CANDIDATES:
        cmds[name] = [sys.executable, "-c", code.format(here=here, name=name, verify="")]
        timed([sys.executable, "-c", code.format(here=here, name=name, verify=", True")])
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    phases: dict[str, list[dict[str, float]]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            t, out = timed(cmd)
            walls[name].append(t)
            if out.strip():
                phases[name].append(json.loads(out))
    print(f"runs each: {runs} (alternating), {len(list(HOSTS.iterdir()))} recorded hosts per run")
    print(f"{'candidate':22} {'wall median (min-max)':24} in-process medians")
    for name, times in walls.items():
        parts = ""
        if phases[name]:
            keys = [k for k in phases[name][0] if k != "pydantic imported"]
            parts = ", ".join(
                f"{k} {statistics.median(p[k] for p in phases[name]) * 1000:.0f} ms" for k in keys
            )
            parts += ", pydantic imported" if phases[name][0]["pydantic imported"] else ""
        span = f"{statistics.median(times):.3f} s ({min(times):.3f}-{max(times):.3f})"
        print(f"{name:22} {span:24} {parts}")


def main() -> None:
    """Run both commands alternately and print the comparison."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument(
        "--candidates", action="store_true", help="time the facts definitions side by side"
    )
    args = parser.parse_args()
    if args.candidates:
        candidates(args.runs)
        return
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
