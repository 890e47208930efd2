"""Record this CPU's per-core memory-sweep figures for the catalog CPU time model.

A catalog CPU is priced without running anything on it (``estimate --on <cpu>``): its
products from the datasheet peak, its memory-bound operators (element-wise, batch norm,
dropout's Bernoulli mask, layer norm, softmax, GELU, pooling) from the per-core rates eager
PyTorch reaches on a real server core of the kind, recorded here by the same kernels
``hwadvisor bench`` times (``hwadvisor.bench.sweep``), on one thread, the best of
``--rounds`` runs (interference from other jobs only ever slows a run).

    python scripts/record_cpu_sweep.py --clock-ghz GHZ --clock-source TEXT [--rounds 3] [--write]

prints the entry, and with ``--write`` adds it to ``catalog/data/cpu_sweeps.yaml`` (or
replaces the one of the same microarchitecture). The clock the cores sustain under load
is given (a virtual machine reports its nominal clock), with its source: the model scales
the recorded rates to another CPU by its clock over this one.

The entry is keyed by this CPU's microarchitecture (archspec's name, as ``hwadvisor
probe`` reports it); a second machine of another kind adds its own.
"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
DATA = ROOT / "src" / "hwadvisor" / "catalog" / "data" / "cpu_sweeps.yaml"


def record(rounds: int, clock_ghz: float, clock_source: str) -> dict[str, Any]:
    """This CPU's sweep at one thread: the fastest of ``rounds`` figures per point."""
    import estimate_accuracy as ea  # the benchmark's short bench: the bench's own kernels
    import torch

    from hwadvisor.probe import probe_machine

    facts = probe_machine()
    ea.THREADS, ea.FACTS = 1, facts
    torch.set_num_threads(1)
    best: dict[tuple[str, int], float] = {}
    matmul: dict[int, float] = {}
    dispatch = 0.0
    for _ in range(rounds):
        for r in ea.micro_bench().results:
            if r.kernel == "dispatch":
                dispatch = max(dispatch, r.value)
            elif r.kernel == "matmul":
                matmul[r.shape[0]] = max(matmul.get(r.shape[0], 0.0), r.value)
            elif r.level and r.working_set_bytes:
                key = (r.kernel, int(r.working_set_bytes))
                best[key] = max(best.get(key, 0.0), r.value)
    families: dict[str, list[list[float]]] = {}
    for (family, ws), gbs in sorted(best.items()):
        families.setdefault(family, []).append([ws, round(gbs, 2)])
    cpu = facts.cpu
    return {
        "microarchitecture": cpu.microarchitecture or "unknown",
        "cpu": f"{ea._cpu()}",
        "torch": str(torch.__version__),
        "threads": 1,
        "date": dt.date.today().isoformat(),
        "clock_ghz": clock_ghz,
        "clock_source": clock_source,
        "command": "python scripts/record_cpu_sweep.py --write --clock-ghz ... --clock-source ...",
        "l2_bytes": cpu.l2_bytes,
        "l3_bytes": cpu.l3_bytes,
        "dispatch_mops": round(dispatch, 3),
        "matmul_gflops": {n: round(v, 1) for n, v in sorted(matmul.items())},
        "families_gb_s": families,
    }


def write(entry: dict[str, Any]) -> None:
    """Add ``entry`` to the data file, replacing one of the same microarchitecture."""
    import yaml

    doc = yaml.safe_load(DATA.read_text(encoding="utf-8")) if DATA.exists() else None
    doc = doc or {"sweeps": []}
    keep = [s for s in doc["sweeps"] if s["microarchitecture"] != entry["microarchitecture"]]
    doc["sweeps"] = [*keep, entry]
    header = "".join(ln + "\n" for ln in HEADER.strip().splitlines())
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=100)
    tmp = DATA.with_suffix(".tmp")
    tmp.write_text(header + body, encoding="utf-8")
    tmp.replace(DATA)


HEADER = """
# Per-core rates of eager PyTorch's memory-bound CPU operators, measured by the project on
# real CPUs (scripts/record_cpu_sweep.py: the kernels of `hwadvisor bench`'s memory sweep,
# hwadvisor.bench.sweep, on one thread, the fastest of three runs). The catalog CPU time
# model (hwadvisor.estimate.timing.cpu_catalog) prices a catalog CPU's memory-bound operators
# from the sweep of its microarchitecture, else the first one here; each figure is GB/s
# counted as the sweep counts bytes, at the working set (bytes) moved by one call.
"""


def main() -> int:
    """Print the entry, or write it with ``--write``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write", action="store_true")
    parser.add_argument(
        "--clock-ghz", type=float, required=True,
        help="the clock this CPU's cores sustain under load (a guest rarely reports it)",
    )  # fmt: skip
    parser.add_argument("--clock-source", required=True, help="where --clock-ghz comes from")
    args = parser.parse_args()
    import yaml

    entry = record(args.rounds, args.clock_ghz, args.clock_source)
    print(yaml.safe_dump(entry, sort_keys=False, default_flow_style=None, width=100))
    if args.write:
        write(entry)
        print(f"written: {DATA.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
