"""How `hwadvisor fleet` scales: N saved reports ranked in one run, wall time and peak RSS.

The reports are the recorded hosts of ``tests/data/reports/recorded-*.json`` copied N
times with their host names varied (``node-00001``...), spread over racks of sub-folders
(so the folder is read recursively). The real command runs in a subprocess, timed from
start to exit; its peak resident memory comes from ``wait4``'s rusage of that process.

    python benchmarks/fleet_scale.py                 # 10,000 reports as a folder
    python benchmarks/fleet_scale.py --count 5000 --mode files
    python benchmarks/fleet_scale.py --mode stdin    # JSON Lines on stdin
    python benchmarks/fleet_scale.py --view table    # the terminal summary, not --json

Goal (issue 13): 10,000 reports in <= 10 s and <= 400 MB, for either view. The table
view is the ranked summary by hardware group (its lines are counted: a screen, not one
line per report). Prints one JSON document; the exit status is 1 when a goal is
missed, 2 when the command failed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDED = sorted((ROOT / "tests" / "data" / "reports").glob("recorded-*.json"))
GOAL_S = 10.0
GOAL_MB = 400.0
PER_RACK = 500


def make_reports(folder: Path, count: int) -> list[Path]:
    """Write ``count`` reports (recorded hosts, varied host names) under ``folder``."""
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in RECORDED]
    paths = []
    for i in range(count):
        doc = docs[i % len(docs)]
        doc["host"]["hostname"] = f"node-{i:05d}"
        rack = folder / f"rack-{i // PER_RACK:03d}"
        rack.mkdir(exist_ok=True)
        path = rack / f"node-{i:05d}.json"
        path.write_text(json.dumps(doc), encoding="utf-8")
        paths.append(path)
    return paths


def run_fleet(args: list[str], stdin_path: Path | None) -> tuple[float, float, int, str]:
    """Run ``hwadvisor fleet ARGS``: wall seconds, peak RSS MiB, exit status, stdout."""
    cmd = [sys.executable, "-m", "hwadvisor", "fleet", *args]
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(tempfile.TemporaryFile("w+"))
        stdin = (
            stack.enter_context(open(stdin_path, encoding="utf-8"))
            if stdin_path
            else subprocess.DEVNULL
        )
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdin=stdin, stdout=out, stderr=subprocess.PIPE, cwd=ROOT)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        err = proc.stderr.read().decode() if proc.stderr else ""
        if err.strip():
            sys.stderr.write(err)
        out.seek(0)
        # ru_maxrss is KiB on Linux.
        return wall, usage.ru_maxrss / 1024, proc.returncode, out.read()


def main() -> int:
    """Generate the reports, run the command once, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--mode", choices=("folder", "files", "stdin"), default="folder")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--by", choices=("time", "cost", "energy"), default="time")
    ap.add_argument("--scenario", default="training")
    ap.add_argument("--view", choices=("json", "table"), default="json")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-scale-") as tmp:
        folder = Path(tmp) / "reports"
        folder.mkdir()
        paths = make_reports(folder, opts.count)
        common = ["--model", opts.model, "--scenario", opts.scenario, "--by", opts.by]
        common += ["--json"] if opts.view == "json" else []
        stdin_path = None
        if opts.mode == "folder":
            args = [str(folder), *common]
        elif opts.mode == "files":
            args = [*map(str, paths), *common]
        else:
            stdin_path = Path(tmp) / "reports.jsonl"
            with open(stdin_path, "w", encoding="utf-8") as f:
                for p in paths:
                    f.write(p.read_text(encoding="utf-8") + "\n")
            args = ["-", *common]
        wall, rss, code, stdout = run_fleet(args, stdin_path)
    ranked = skipped = groups = lines = None
    if code == 0 and opts.view == "json":
        doc = json.loads(stdout)
        ranked, skipped, groups = len(doc["machines"]), len(doc["skipped"]), len(doc["groups"])
    elif code == 0:
        lines = len(stdout.splitlines())
    result = {
        "reports": opts.count,
        "mode": opts.mode,
        "view": opts.view,
        "recorded_hosts": [p.stem for p in RECORDED],
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(rss, 1),
        "exit_code": code,
        "ranked": ranked,
        "skipped": skipped,
        "groups": groups,
        "table_lines": lines,
        "goal": {"wall_s": GOAL_S, "peak_rss_mb": GOAL_MB, "for_reports": 10_000},
        "cpus": os.cpu_count(),
    }
    print(json.dumps(result, indent=2))
    if code != 0:
        return 2
    return 0 if wall <= GOAL_S and rss <= GOAL_MB else 1


if __name__ == "__main__":
    sys.exit(main())
