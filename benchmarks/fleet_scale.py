"""How `hwadvisor fleet` scales: N saved reports ranked in one run, wall time and peak RSS.

The reports are the recorded and synthetic hosts of ``tests/data/reports/`` (eight kinds
of machine, CPU-only and GPU) copied N times with their host names and their momentary
state varied as a real fleet's are (``generated_at``, free memory, each GPU's free
memory, temperature and utilisation, the probes' elapsed times), spread over racks of
sub-folders (so the folder is read recursively). ``--bad N`` spreads N bad reports among
them, in turn: an integer of 5,000 digits, a lone surrogate in the host name, a NaN
peak, a 10^300-byte memory, a truncated document. The real command runs in a
subprocess, timed from start to exit; its peak resident memory comes from ``wait4``'s
rusage of that process.

    python benchmarks/fleet_scale.py                 # 10,000 reports as a folder
    python benchmarks/fleet_scale.py --bad 10        # ... ten of them bad
    python benchmarks/fleet_scale.py --count 5000 --mode files
    python benchmarks/fleet_scale.py --mode stdin    # JSON Lines on stdin
    python benchmarks/fleet_scale.py --view table    # the terminal summary, not --json

Goals (issues 13 and 44): 10,000 reports in <= 10 s and <= 400 MB, for either view;
with ``--json``, every good report ranked, every bad one skipped, and one hardware group
per kind of machine (the momentary state does not split a group). The table view is the
ranked summary by hardware group (its lines are counted: a screen, not one line per
report). Prints one JSON document; the exit status is 1 when a goal is missed, 2 when
the command failed.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REPORTS = ROOT / "tests" / "data" / "reports"
HOSTS = sorted(REPORTS.glob("recorded-*.json")) + sorted(REPORTS.glob("synthetic-*.json"))
GOAL_S = 10.0
GOAL_MB = 400.0
PER_RACK = 500
#: The bad reports ``--bad`` spreads among the good ones, in turn.
BAD_KINDS = ("digits", "surrogate", "nan", "huge", "truncated")


def _momentary(doc: dict[str, Any], i: int) -> dict[str, Any]:
    """``doc`` as machine ``i`` of its kind reports it: its own name and momentary state."""
    out = dict(doc, generated_at=f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00+00:00")
    out["host"] = dict(doc["host"], hostname=f"node-{i:05d}")
    memory = dict(doc["memory"])
    if memory.get("total_bytes"):
        memory["available_bytes"] = memory["total_bytes"] * (20 + i % 61) // 100
    out["memory"] = memory
    out["gpus"] = [
        dict(
            g,
            memory_free_bytes=(g["memory_total_bytes"] or 0) * (i % 97) // 100,
            temperature_c=float(30 + i % 55),
            utilization_percent=float(i % 101),
        )
        for g in doc.get("gpus", [])
    ]
    out["probes"] = [
        dict(p, elapsed_ms=round(0.01 * (1 + (i * 7 + n) % 500), 2))
        for n, p in enumerate(doc.get("probes", []))
    ]
    return out


def _bad(doc: dict[str, Any], kind: str) -> str:
    """The text of a bad report of ``kind`` made from ``doc``."""
    if kind == "surrogate":
        return json.dumps(dict(doc, host=dict(doc["host"], hostname="\ud800")))
    if kind == "huge":
        return json.dumps(dict(doc, memory=dict(doc["memory"], total_bytes=10**300)))
    if kind == "truncated":
        return json.dumps(doc)[: len(json.dumps(doc)) // 2]
    marker = "__BAD__"
    text = json.dumps(dict(doc, memory=dict(doc["memory"], total_bytes=marker)))
    return text.replace(f'"{marker}"', "9" * 5000 if kind == "digits" else "NaN")


def make_reports(folder: Path, count: int, bad: int = 0) -> tuple[list[Path], int]:
    """Write ``count`` reports under ``folder``, ``bad`` of them bad (spread evenly);
    returns their paths and how many kinds of machine the good ones are."""
    docs = [json.loads(p.read_text(encoding="utf-8")) for p in HOSTS]
    every = count // bad if bad else 0
    paths = []
    for i in range(count):
        doc = _momentary(docs[i % len(docs)], i)
        spoilt = bool(every) and i % every == every - 1 and i // every < bad
        text = _bad(doc, BAD_KINDS[(i // every) % len(BAD_KINDS)]) if spoilt else json.dumps(doc)
        rack = folder / f"rack-{i // PER_RACK:03d}"
        rack.mkdir(exist_ok=True)
        path = rack / f"node-{i:05d}.json"
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths, min(len(docs), count)


def run_fleet(args: list[str], stdin_path: Path | None) -> tuple[float, float, int, str, float]:
    """Run ``hwadvisor fleet ARGS``: wall seconds, peak RSS MiB, exit status, stdout and
    CPU seconds (user + system: on a shared machine, the time the command itself took)."""
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
        cpu = usage.ru_utime + usage.ru_stime
        return wall, usage.ru_maxrss / 1024, proc.returncode, out.read(), cpu


def main() -> int:
    """Generate the reports, run the command once, print the figures."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=10_000)
    ap.add_argument("--bad", type=int, default=0, help="how many of the reports are bad")
    ap.add_argument("--mode", choices=("folder", "files", "stdin"), default="folder")
    ap.add_argument("--model", default="resnet50")
    ap.add_argument("--by", choices=("time", "cost", "energy"), default="time")
    ap.add_argument("--scenario", default="training")
    ap.add_argument("--view", choices=("json", "table"), default="json")
    opts = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fleet-scale-") as tmp:
        folder = Path(tmp) / "reports"
        folder.mkdir()
        paths, kinds = make_reports(folder, opts.count, opts.bad)
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
        wall, rss, code, stdout, cpu = run_fleet(args, stdin_path)
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
        "hosts": [p.stem for p in HOSTS],
        "bad": opts.bad,
        "kinds_of_machine": kinds,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load_avg_1m": round(os.getloadavg()[0], 1),
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
    fast = wall <= GOAL_S * opts.count / 10_000 + 1 and rss <= GOAL_MB
    right = opts.view != "json" or (
        (ranked, skipped, groups) == (opts.count - opts.bad, opts.bad, kinds)
    )
    return 0 if fast and right else 1


if __name__ == "__main__":
    sys.exit(main())
