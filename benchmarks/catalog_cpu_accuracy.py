"""Accuracy of the catalog CPU estimate: a catalog entry's share against this CPU, measured.

``hwadvisor estimate --on <cpu or cpu instance>`` prices a catalog CPU from its datasheet
peak and the catalog's achieved fractions, without running anything. This benchmark
checks that path on the one CPU it can run on, and against published figures
(``PUBLISHED``: ``--published`` prints only those, nothing is run): it picks the catalog entry of this
processor's generation (by vendor, family and model from /proc/cpuinfo; ``--entry`` to
choose), takes the share of it that the threads used get (``cpu_share``: one core per
thread here), prices each case with it exactly as ``--on`` does, and times the real model
on this CPU: training steps (AdamW) and inference passes (``eval()``,
``torch.inference_mode()``).

The entry is a different part of the same generation (another SKU, other clocks), so an
error here is the catalog path's error for a CPU of that generation, not a fit: no figure
measured here feeds the estimate.

    python benchmarks/catalog_cpu_accuracy.py [--threads 1] [--steps 8] [--entry ID] [--json FILE]
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

import estimate_accuracy as ea  # the sibling benchmark: its models and helpers

MODELS = ea.MODELS
#: (vendor, family, model) of /proc/cpuinfo -> the catalog entry of that generation.
GENERATIONS: dict[tuple[str, int, int], str] = {
    ("AuthenticAMD", 25, 0x11): "epyc-9654",  # Zen 4 "Genoa"
    ("AuthenticAMD", 25, 0x01): "epyc-7763",  # Zen 3 "Milan"
    ("GenuineIntel", 6, 0x8F): "xeon-8480",  # Sapphire Rapids
    ("GenuineIntel", 6, 0xCF): "xeon-8480",  # Emerald Rapids: Sapphire Rapids' cores
    ("GenuineIntel", 6, 0x6A): "xeon-8369b",  # Ice Lake-SP
    ("GenuineIntel", 6, 0x55): "xeon-6248",  # Cascade Lake
}

# name, model spec, task, input shape, batch
CASES: list[tuple[str, str, str, list[int], int]] = [
    ("mlp", f"{MODELS}/mlp.py:build", "train", [784], 64),
    ("cnn-bn", f"{MODELS}/cnn.py:build", "train", [3, 32, 32], 32),
    ("encoder", f"{MODELS}/encoder.py:build", "train", [128], 16),
    ("encoder", f"{MODELS}/encoder.py:build", "infer", [128], 16),
    ("bert-base", f"{MODELS}/bert.py:build", "infer", [128], 1),
    ("bert-base", f"{MODELS}/bert.py:build", "infer", [128], 8),
    ("resnet50", f"{MODELS}/resnet.py:build", "infer", [3, 224, 224], 1),
    ("resnet50", f"{MODELS}/resnet.py:build", "train", [3, 224, 224], 4),
]


#: Published eager-PyTorch figures on CPUs of the catalog, none used to set any figure of
#: the model: (label, catalog id, cores used, catalog model, sequence length, batch,
#: published ms). The Hugging Face blog "Scaling up BERT-like model Inference on modern
#: CPU - Part 2" (2021-11, huggingface/blog bert-cpu-scaling-part-2.md and the data labels
#: of its chart assets/35_bert_cpu_scaling_part_2/baselines/eager_mode_pytorch_baseline.svg):
#: BERT-base, fp32, PyTorch 1.9.0 eager, glibc malloc, one Xeon Platinum 8380 socket (its
#: 80-core points span two sockets and are left out), one sequence per call.
#: Then the CSVs of github.com/philschmid/aws-neuron-samples (benchmark/results/
#: benchmmark_c6i.2xlarge_bert_base_uncased.csv, 2022-12, and ..._bert_large_uncased.csv,
#: 2023-02; script benchmark/scripts/inference_transformers.py): an AWS c6i.2xlarge (8
#: vCPUs, 4 cores of a Xeon Platinum 8375C), torch 1.13.0 eager, batch 1, padded to the
#: sequence length, the mean of 100 runs.
PUBLISHED_SOURCE = (
    "Hugging Face blog, Scaling up BERT-like model Inference on modern CPU - Part 2 (2021-11): "
    "BERT-base fp32, PyTorch 1.9.0 eager, Xeon Platinum 8380, 1-40 cores of one socket; "
    "philschmid/aws-neuron-samples CPU baseline (2022-12, 2023-02): BERT-base and -large "
    "fp32, torch 1.13.0 eager, c6i.2xlarge (4 cores of a Xeon Platinum 8375C)"
)
PUBLISHED: list[tuple[str, str, int, str, int, int, float]] = [
    (f"BERT-base s{seq} {cores}c", "xeon-8380", cores, "bert-base", seq, 1, ms)
    for seq, times in ((128, (296.0, 77.0, 33.0, 19.0)), (512, (1623.0, 388.0, 126.0, 83.0)))
    for cores, ms in zip((1, 4, 16, 40), times, strict=True)
] + [
    (f"{model} s{seq} c6i.2xl", "xeon-8375c", 4, model, seq, 1, ms)
    for model, seq, ms in (
        ("bert-base", 128, 54.1),
        ("bert-base", 512, 205.5),
        ("bert-large", 128, 210.9),
        ("bert-large", 512, 779.7),
    )
]


def published_rows() -> list[dict[str, Any]]:
    """Each published figure against the catalog estimate of its CPU at its core count."""
    from hwadvisor.catalog import load_devices
    from hwadvisor.catalog.instances import cpu_share
    from hwadvisor.estimate import build_workload
    from hwadvisor.estimate.timing.bands import band_class
    from hwadvisor.estimate.timing.catalog import device_model
    from hwadvisor.estimate.timing.step import step_time

    devices = load_devices()
    rows = []
    for label, ident, cores, model, seq, batch, ms in PUBLISHED:
        full = devices[ident]
        smt = (full.threads or full.cores or 1) // (full.cores or 1)
        entry = full if cores == full.cores else cpu_share(full, cores * smt)
        wl = build_workload(
            model=model, task="infer", batch_size=batch, seq_len=seq, precision="fp32"
        )
        rates = device_model(entry, wl.precision)
        st = step_time(wl, rates)
        est = (st.total or float("nan")) * 1e3
        rows.append({"anchor": label, "device": ident, "cores": cores, "published_ms": ms,
                     "estimated_ms": est, "ratio": ms / est,
                     "band_class": band_class(rates, 1, st.parts)})  # fmt: skip
    return rows


def print_published(rows: list[dict[str, Any]]) -> None:
    """The published rows, their errors and the band they give."""
    print(f"\npublished: {PUBLISHED_SOURCE}")
    print(f"{'anchor':20s} {'published':>10s} {'estimated':>10s} {'error':>7s}  class")
    for r in rows:
        err = r["estimated_ms"] / r["published_ms"] - 1.0
        print(f"{r['anchor']:20s} {r['published_ms']:8.1f}ms {r['estimated_ms']:8.1f}ms "
              f"{err:+7.1%}  {r['band_class']}")  # fmt: skip
    errs = [abs(r["estimated_ms"] / r["published_ms"] - 1.0) for r in rows]
    ratios = [r["ratio"] for r in rows]
    print(f"median |error| {statistics.median(errs):.1%}, worst {max(errs):.1%}; "
          f"measured/estimated {min(ratios):.3f}-{max(ratios):.3f}")  # fmt: skip


def _cpu() -> str:
    """This CPU's model name."""
    from hwadvisor.probe import probe_machine

    return probe_machine().cpu.model or "unknown CPU"


def _load() -> str:
    """The load averages, as /proc/loadavg gives them."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "unknown"


def this_cpu() -> tuple[str, int, int] | None:
    """Vendor, family and model of the first processor in /proc/cpuinfo."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            break
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    try:
        return fields["vendor_id"], int(fields["cpu family"]), int(fields["model"])
    except (KeyError, ValueError):
        return None


def measure_infer(spec: str, shape: list[int], batch: int, steps: int) -> float:
    """Seconds of the fastest of ``steps`` inference passes of the real model here."""
    import torch

    from hwadvisor.estimate.workload.loading import load_callable

    model = load_callable(spec)().eval()
    tokens = isinstance(
        next(m for m in model.modules() if len(list(m.children())) == 0), torch.nn.Embedding
    )
    x = torch.randint(0, 1000, (batch, *shape)) if tokens else torch.randn(batch, *shape)
    times = []
    with torch.inference_mode():
        for i in range(steps + 2):
            start = time.perf_counter()
            model(x)
            if i >= 2:
                times.append(time.perf_counter() - start)
    return min(times)  # interference from other jobs only ever adds time


def estimate(entry: Any, spec: str, task: str, shape: list[int], batch: int) -> tuple[float, Any]:
    """The step time ``--on`` gives for the share ``entry``, and its breakdown."""
    from hwadvisor.estimate import build_workload
    from hwadvisor.estimate.timing.catalog import device_model
    from hwadvisor.estimate.timing.step import step_time

    wl = build_workload(
        model=spec, task=task, batch_size=batch, input_shape=shape, precision="fp32"
    )
    st = step_time(wl, device_model(entry, wl.precision))
    return st.total or float("nan"), st.parts


def main() -> int:
    """Run every case, print the table; exit 1 when the issue's goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--entry", default=None, help="catalog CPU id (default: this CPU's generation)"
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--published", action="store_true", help="only the published rows (nothing is run)"
    )
    args = parser.parse_args()
    if args.published:
        print_published(published_rows())
        return 0
    import torch

    from hwadvisor.catalog import load_devices
    from hwadvisor.catalog.instances import cpu_share

    DEVICES = load_devices()
    cpu = this_cpu()
    ident = args.entry or (GENERATIONS.get(cpu) if cpu else None)
    if not ident or ident not in DEVICES:
        print(f"no catalog entry for this CPU {cpu}; give --entry ID", file=sys.stderr)
        return 2
    full = DEVICES[ident]
    smt = (full.threads or full.cores or 1) / (full.cores or 1)
    entry = cpu_share(full, round(args.threads * smt))
    ea.THREADS = args.threads
    torch.set_num_threads(args.threads)
    print(f"cpu: {_cpu()}; load average at the start: {_load()}")
    print(f"catalog entry: {ident} ({full.name}), share: {entry.name}")
    print(f"threads: {args.threads}, torch {torch.__version__}")
    print(
        f"{'model':10s} {'task':5s} {'batch':>5s} {'estimated':>10s} {'measured':>9s} {'error':>7s}"
    )
    rows = []
    for name, spec, task, shape, batch in CASES:
        est, parts = estimate(entry, spec, task, shape, batch)
        # The fastest step: a catalog figure is a machine without neighbours.
        real = (
            min(ea.measure(spec, shape, batch, args.steps, "labels"))
            if task == "train"
            else measure_infer(spec, shape, batch, args.steps)
        )
        err = est / real - 1.0
        rows.append({"model": name, "task": task, "batch": batch, "estimated_s": est,
                     "measured_s": real, "error": err, "breakdown_s": parts})  # fmt: skip
        print(f"{name:10s} {task:5s} {batch:5d} {est * 1e3:8.1f}ms {real * 1e3:7.1f}ms {err:+7.1%}",
              flush=True)  # fmt: skip
    errs = [abs(r["error"]) for r in rows]
    med, worst = statistics.median(errs), max(errs)
    print(f"median |error| {med:.1%}, max {worst:.1%}; load average at the end: {_load()}")
    pub = published_rows()
    print_published(pub)
    if args.json:
        doc = {"entry": ident, "rows": rows, "median": med, "published": pub}
        args.json.write_text(json.dumps(doc, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
