"""Accuracy of the analytic time estimate "here": estimated vs measured training steps.

For each model (an MLP, a small CNN with batch norm, a transformer encoder, and the
catalog's ResNet-50 written in plain torch) it

1. builds the workload the way ``hwadvisor estimate`` does (user models counted on the
   meta device; ResNet-50 from its catalog entry), and estimates one AdamW training step
   "here" from microbenchmark figures only (the model is not run for the estimate);
2. then trains the real model a few steps on this CPU and takes the median step time.

It prints the CPU (model name and the vector flags that matter), the load average at both
ends, the error per model, the median and the maximum. Goal (issue 14): median <= 12%,
none over 30%. It also prints the estimated ratios between catalog CPUs and GPUs that
GUIDANCE R1, R3-R5 report, to compare by eye.

Three rounds of (microbenchmark, steps) per model, interleaved so that both see the same
load. The estimate is made from the bench figures as ``hwadvisor bench`` records them
(each kernel's median block) and compared with the median step: a job's time is its
typical step times the steps, and a step of hundreds of operators pays their typical
speed, not each one's best block. Across rounds the median of the round estimates is
compared with the median of all the steps. The ``paired`` column is the median over
rounds of each round's estimate against that round's own steps (ratios measured under
one load). The ``fastest`` column compares, as earlier versions did, the estimate from
each kernel's best block with the fastest step (both as free of the neighbours as this
shared machine allowed). At two threads a busy second vCPU stalls every operator at its
OpenMP barrier, so on the 2-vCPU development machine run it idle, or with ``--threads 1``.

``--bench product`` takes the figures from ``hwadvisor bench``'s own run instead
(``run_bench``, at this run's thread count). That run keeps one matmul figure, at the
size its sizing settles on, so below it the estimate's matmul curve is the assumed one
(flat down to 64, then in proportion). The default ladder measures six sizes.

    python benchmarks/estimate_accuracy.py [--threads 1] [--steps 10] [--rounds 3] [--bench product] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "data" / "models"

# name, model spec for the estimate, file:callable run for the measurement, input shape, batch
CASES: list[tuple[str, str, str, list[int], int]] = [
    ("mlp", f"{MODELS}/mlp.py:build", f"{MODELS}/mlp.py:build", [784], 64),
    ("cnn-bn", f"{MODELS}/cnn.py:build", f"{MODELS}/cnn.py:build", [3, 32, 32], 32),
    ("encoder", f"{MODELS}/encoder.py:build", f"{MODELS}/encoder.py:build", [128], 16),
    ("resnet50 (catalog)", "resnet50", f"{MODELS}/resnet.py:build", [3, 224, 224], 4),
]


THREADS: int | None = None
#: This machine's probed facts (cache sizes for the memory sweep), set in main().
FACTS: Any = None
#: Each bench result's best block (seconds), by the result's id, while micro_bench runs.
BEST_S: dict[int, float] = {}


def threads() -> int:
    """Threads for the bench and the steps: ``--threads``, else the cores this process may use."""
    if THREADS:
        return THREADS
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def micro_bench(min_run_time: float = 0.2) -> tuple[Any, Any]:
    """Microbenchmark figures measured here: matmul at six sizes and at few rows (and on
    several threads the small squares at one thread), one conv2d and its backward, triad,
    and the memory sweep; as two reports, one of each kernel's median
    block (what ``hwadvisor bench`` records) and one of its best block.

    The same kernels and shape conventions as ``hwadvisor bench`` (matmul [n, n, n];
    conv2d [N, C, H, W, Cout, kh, kw]; triad GB/s), kept short so that it can run right
    before each model's measurement: the machine is shared and its speed drifts.
    """
    import torch
    from torch.utils.benchmark import Timer

    from hwadvisor.models.bench import BenchReport, BenchResult

    nt = threads()

    def timed(stmt: str, env: dict[str, Any]) -> Any:
        env = {**env, "torch": torch}
        return Timer(stmt, globals=env, num_threads=nt).blocked_autorange(min_run_time=min_run_time)

    def result(kernel: str, shape: list[int], work: float, unit: str, m: Any) -> BenchResult:
        # As hwadvisor bench records a figure: the median block (bench/runner.py).
        r = BenchResult(
            device="cpu",
            kernel=kernel,
            dtype="fp32",
            shape=shape,
            value=work / m.median / 1e9,
            unit=unit,
            median_s=m.median,
            iqr_s=m.iqr,
            runs=len(m.times),
            threads=nt,
        )
        BEST_S[id(r)] = min(m.times)
        return r

    results = []
    for n in (32, 64, 128, 256, 512, 1024):
        a, b = torch.randn(n, n), torch.randn(n, n)
        results.append(
            result("matmul", [n, n, n], 2 * n**3, "GFLOP/s", timed("a @ b", {"a": a, "b": b}))
        )
    from hwadvisor.bench.kernels import CPU_ROWS, ROWS_WIDTH

    for m in CPU_ROWS:  # products of few rows, as hwadvisor bench's matmul_rows
        a, b = torch.randn(m, ROWS_WIDTH), torch.randn(ROWS_WIDTH, ROWS_WIDTH)
        shape, work = [m, ROWS_WIDTH, ROWS_WIDTH], 2 * m * ROWS_WIDTH**2
        results.append(result("matmul_rows", shape, work, "GFLOP/s", timed("a @ b", {"a": a, "b": b})))  # fmt: skip
    if nt > 1:
        # hwadvisor bench's one-thread small squares (matmul_small at one thread)
        from hwadvisor.bench.kernels import CPU_SMALL

        for n in CPU_SMALL:
            a, b = torch.randn(n, n), torch.randn(n, n)
            m = Timer("a @ b", globals={"a": a, "b": b}, num_threads=1).blocked_autorange(min_run_time=min_run_time)  # fmt: skip
            one = result("matmul_small", [n, n, n], 2 * n**3, "GFLOP/s", m)
            placed = one.model_copy(update={"threads": 1})
            BEST_S[id(placed)] = BEST_S.pop(id(one))
            results.append(placed)
    x = torch.randn(8, 64, 56, 56).to(memory_format=torch.channels_last)
    w = torch.randn(64, 64, 3, 3).to(memory_format=torch.channels_last)
    m = timed("torch.nn.functional.conv2d(x, w, padding=1)", {"x": x, "w": w})
    conv_shape, conv_flops = [8, 64, 56, 56, 64, 3, 3], 2 * 8 * 64 * 56 * 56 * 64 * 9
    results.append(result("conv2d", conv_shape, conv_flops, "GFLOP/s", m))
    # its backward (input and weight gradients, 2x the FLOPs), as hwadvisor bench times it
    g = torch.randn(8, 64, 56, 56).to(memory_format=torch.channels_last)
    back = "torch.ops.aten.convolution_backward(g, x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1, [True, True, False])"
    m = timed(back, {"x": x, "w": w, "g": g})
    results.append(result("conv2d_backward", conv_shape, 2 * conv_flops, "GFLOP/s", m))
    # the backward of stride-2 convolutions, as hwadvisor bench times it
    from hwadvisor.bench.kernels import (
        STRIDED_BACKWARD,
        _strided_backward_builder,
        strided_backward_work,
    )

    for shape in STRIDED_BACKWARD:
        fn = _strided_backward_builder(torch, torch.device("cpu"))(shape)
        m = timed("fn()", {"fn": fn})
        work = strided_backward_work(shape)
        results.append(result("conv2d_backward_strided", list(shape), work, "GFLOP/s", m))
    # the 3x3 convolutions in NCHW, forward and backward, as hwadvisor bench times them
    from hwadvisor.bench.kernels import NCHW_CONVS, _conv_builder, conv_backward_work, conv_work

    for shape in NCHW_CONVS:
        for backward in (False, True):
            fn = _conv_builder(torch, torch.device("cpu"), "fp32", backward=backward, nchw=True)(shape)  # fmt: skip
            m = timed("fn()", {"fn": fn})
            kernel = "conv2d_nchw_backward" if backward else "conv2d_nchw"
            work = (conv_backward_work if backward else conv_work)(shape)
            results.append(result(kernel, list(shape), work, "GFLOP/s", m))
    n = 1 << 23
    a, b, c = torch.randn(n), torch.randn(n), torch.randn(n)
    m = timed("torch.add(b, c, alpha=2.0, out=a)", {"a": a, "b": b, "c": c})
    results.append(result("triad", [n], 3 * 4 * n, "GB/s", m))
    results += memory_sweep(timed, result)
    best = [r.model_copy(update={"value": r.value * r.median_s / BEST_S[id(r)]}) for r in results]
    BEST_S.clear()
    return (
        BenchReport(budget_s=10.0, elapsed_s=0.0, results=results),
        BenchReport(budget_s=10.0, elapsed_s=0.0, results=best),
    )


def probed() -> Any:
    """This machine's facts as a job on this run's threads sees them: the probe's, with
    the usable cores (and the theoretical peak, which scales with them) at ``threads()``.
    The estimate's fallback to the peak, for a bench figure marked unreliable, then uses
    the same cores as the bench and the steps."""
    from hwadvisor.probe import probe_machine
    from hwadvisor.probe.cpu_build import finish_cpu

    facts = probe_machine()
    if facts.cpu.usable_cores == threads():
        return facts
    fields = facts.cpu.model_dump()
    for derived in ("features", "amx_note", "peak_gflops"):  # finish_cpu makes these
        fields.pop(derived, None)
    cpu = finish_cpu({**fields, "usable_cores": threads()})
    return facts.model_copy(update={"cpu": cpu})


def product_bench() -> tuple[Any, Any]:
    """``hwadvisor bench``'s own CPU run at this run's thread count (:func:`probed`), as a
    user gets it: one figure per kernel at the size its sizing settles on, the memory
    sweep, the dispatch cost. It has no best blocks; both reports are the same."""
    from hwadvisor.bench.runner import run_bench

    report = run_bench(facts=FACTS, device="cpu")
    return report, report


def memory_sweep(timed: Any, result: Any) -> list[Any]:
    """The bench's memory sweep (``hwadvisor.bench.sweep``) at this run's thread count."""
    import torch

    from hwadvisor.bench.sweep import (
        BACKWARD_WORK,
        DISPATCH_WORK,
        FAMILIES,
        FIRST_TOUCH_BYTES,
        OPTIMIZER_KERNELS,
        OPTIMIZER_TENSORS,
        backward_statement,
        dispatch_statement,
        family_shape,
        family_statement,
        family_work,
        first_touch_statement,
        level_bytes,
        optimizer_statement,
    )

    out = [
        result(
            "dispatch",
            [64],
            DISPATCH_WORK,
            "Mop/s",
            timed("fn()", {"fn": dispatch_statement(torch)}),
        ),
        result(
            "dispatch_backward",
            [64],
            BACKWARD_WORK,
            "Mop/s",
            timed("fn()", {"fn": backward_statement(torch)}),
        ),
        result(
            "first_touch",
            [FIRST_TOUCH_BYTES // 4],
            float(FIRST_TOUCH_BYTES),
            "GB/s",
            timed("fn()", {"fn": first_touch_statement(torch)}),
        ),
    ]
    for name, kernel in OPTIMIZER_KERNELS.items():
        fn = optimizer_statement(torch, name)
        work = OPTIMIZER_TENSORS * DISPATCH_WORK
        out.append(result(kernel, [64], work, "Mop/s", timed("fn()", {"fn": fn})))
    sizes = level_bytes(FACTS, threads())
    for family in FAMILIES:
        for level in family.levels:
            shape = family_shape(family, sizes[level])
            fn = family_statement(torch, family.name, shape)
            work = family_work(family)(shape)
            r = result(family.name, list(shape), work, "GB/s", timed("fn()", {"fn": fn}))
            placed = r.model_copy(update={"level": level, "working_set_bytes": int(work)})
            BEST_S[id(placed)] = BEST_S.pop(id(r))
            out.append(placed)
    return out


#: Real steps run in a fresh Python process, as a training job does (``--in-process``:
#: in this one, after the bench). glibc's malloc remembers what a process freed: a
#: mapping freed raises its mapping and trim thresholds for good (up to 32 and 64 MiB),
#: so after the bench's sweep the steps of this process hardly fault, where a job's own
#: process faults its heap in again at every step (docs/estimates.md section 3).
FRESH = True


def measure(spec: str, shape: list[int], batch: int, steps: int, *, loss: str = "labels") -> list[float]:  # fmt: skip
    """Seconds of each of ``steps`` AdamW training steps of the real model here (in a
    fresh process unless :data:`FRESH` is off); the loss is cross-entropy against class
    labels (``labels``) or the output's sum (``sum``, for models whose output is not one
    row of logits per sample)."""
    if not FRESH:
        return _steps(spec, shape, batch, steps, loss)
    import subprocess

    call = json.dumps([spec, shape, batch, steps, loss, threads()])
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
        "import estimate_accuracy as ea; a = json.loads(sys.argv[1]); ea.THREADS = a[5]; "
        "print(json.dumps(ea._steps(*a[:5])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, call], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise RuntimeError(f"the steps of {spec} failed: {done.stderr.strip()[-400:]}")
    return [float(t) for t in json.loads(done.stdout.strip().splitlines()[-1])]


def _steps(spec: str, shape: list[int], batch: int, steps: int, loss: str) -> list[float]:
    import torch

    from hwadvisor.estimate.workload.loading import load_callable

    torch.set_num_threads(threads())
    model = load_callable(spec)()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = isinstance(
        next(m for m in model.modules() if len(list(m.children())) == 0), torch.nn.Embedding
    )
    x = torch.randint(0, 1000, (batch, *shape)) if tokens else torch.randn(batch, *shape)
    times = []
    for i in range(steps + 2):
        start = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = model(x)
        labels = torch.zeros(batch, dtype=torch.long)
        (out.sum() if loss == "sum" else torch.nn.functional.cross_entropy(out, labels)).backward()
        opt.step()
        if i >= 2:  # the first steps allocate optimizer state and warm caches
            times.append(time.perf_counter() - start)
    return times


def ratios() -> list[tuple[str, str, float | None]]:
    """Estimated CPU-over-GPU time ratios for the GUIDANCE R1, R3-R5 situations."""
    from hwadvisor.estimate import build_workload, estimate_workload

    out: list[tuple[str, str, float | None]] = []
    # label, model, task, batch, CPU id, CPU precision, GPU id, GPU precision
    checks = [
        (
            "R1 ResNet-50 train b64 fp32: 20-core Xeon vs V100-16GB (doc ~10x)",
            "resnet50",
            "train",
            64,
            "xeon-6248",
            "fp32",
            "v100-16gb",
            "fp32",
        ),
        (
            "R3 ResNet-50 train b256: EPYC 9654 fp32 vs A100 AMP (doc 10-100x+)",
            "resnet50",
            "train",
            256,
            "epyc-9654",
            "fp32",
            "a100-80gb",
            "amp",
        ),
        (
            "R4 BERT-base infer b1: Xeon 6248 fp32 vs T4 fp32 (doc 5-20x)",
            "bert-base",
            "infer",
            1,
            "xeon-6248",
            "fp32",
            "t4",
            "fp32",
        ),
        (
            "R4 BERT-base infer b1: Xeon 6248 fp32 vs T4 fp16 (doc 5-20x)",
            "bert-base",
            "infer",
            1,
            "xeon-6248",
            "fp32",
            "t4",
            "fp16",
        ),
        (
            "R5 YOLOv5n infer b1: laptop CPU fp32 vs T4 fp32 (doc 2-5x)",
            "yolov5n",
            "infer",
            1,
            "laptop-i7-1165g7",
            "fp32",
            "t4",
            "fp32",
        ),
    ]
    for label, model, task, batch, cpu, cpu_prec, gpu, gpu_prec in checks:
        times = []
        for dev, prec in ((cpu, cpu_prec), (gpu, gpu_prec)):
            wl = build_workload(model=model, task=task, batch_size=batch, precision=prec)
            times.append(
                estimate_workload(wl, facts=None, bench=None, on=[dev]).estimates[0].step_time_s
            )
        t_cpu, t_gpu = times
        detail = (
            f"{cpu} {t_cpu * 1e3:.1f} ms / {gpu} {t_gpu * 1e3:.2f} ms"
            if t_cpu and t_gpu
            else "unknown"
        )
        out.append((label, detail, t_cpu / t_gpu if t_cpu and t_gpu else None))
    return out


#: The flags that decide which kernels torch can use, in the order they are printed.
FLAGS = ("avx2", "fma", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8")


def _cpu() -> str:
    """``model name`` from /proc/cpuinfo and the vector flags present (Linux)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    name = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model name")),
        "?",
    )
    fam = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("cpu family")),
        "?",
    )
    model = next(
        (ln.split(":", 1)[1].strip() for ln in text.splitlines() if ln.startswith("model\t")), "?"
    )
    flags = set(
        next(
            (ln.split(":", 1)[1].split() for ln in text.splitlines() if ln.startswith("flags")), []
        )
    )
    have = " ".join(f for f in FLAGS if f in flags) or "none of " + " ".join(FLAGS)
    return f"{name} (family {fam} model {model}), flags: {have}"


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "unknown"


def main() -> int:
    """Run every case, print the table; exit 1 when the goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help="default: all usable cores")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--in-process", action="store_true",
                        help="run the real steps in this process, after the bench")  # fmt: skip
    parser.add_argument(
        "--bench",
        choices=("product", "ladder"),
        default="ladder",
        help="ladder: matmul at six sizes (default); product: hwadvisor bench's own run",
    )
    args = parser.parse_args()
    global THREADS, FACTS, FRESH
    THREADS = args.threads
    FRESH = not args.in_process
    FACTS = probed()
    import torch

    from hwadvisor.estimate import build_workload, estimate_workload

    torch.set_num_threads(threads())
    rows = []
    print(f"cpu: {_cpu()}; load average at the start: {_load()}")
    print(
        f"threads: {threads()}, torch {torch.__version__}, {args.rounds} rounds of (bench, steps),"
        f" bench: {args.bench}, real steps {'in this process' if args.in_process else 'each in a fresh process'}"
    )
    print(
        f"{'model':20s} {'batch':>5s} {'estimated':>10s} {'naive':>9s} {'measured':>9s} {'error':>7s} {'paired':>8s} {'fastest':>8s}"
    )
    for name, spec, run_spec, shape, batch in CASES:
        kw: dict[str, Any] = {"model": spec, "batch_size": batch}
        if ":" in spec:
            kw["input_shape"] = shape
        wl = build_workload(**kw)
        ests, bests, naives, meas, parts = [], [], [], [], []
        for _ in range(args.rounds):
            # Bench right before the steps, so both see the same load on the shared machine.
            bench, best_blocks = product_bench() if args.bench == "product" else micro_bench()
            est = estimate_workload(wl, facts=FACTS, bench=bench, on=["here"]).estimates[0]
            fast = estimate_workload(wl, facts=FACTS, bench=best_blocks, on=["here"])
            top = max(
                r.value for r in best_blocks.results if r.kernel == "matmul" and r.dtype == "fp32"
            )
            top *= 1e9
            naives.append(3 * (wl.flops_per_sample or 0) * batch / top)
            ests.append(est.step_time_s or float("nan"))
            bests.append(fast.estimates[0].step_time_s or float("nan"))
            parts.append(est.time_breakdown_s)
            meas.append(measure(run_spec, shape, batch, args.steps))
        steps = [t for r in meas for t in r]
        estimated, measured = statistics.median(ests), statistics.median(steps)
        naive = min(naives)
        err = (estimated - measured) / measured
        # Each round's estimate against the same round's steps: both under the same load.
        paired = statistics.median(
            e / statistics.median(m) - 1.0 for e, m in zip(ests, meas, strict=True)
        )
        # Best blocks against the fastest step: both as free of the neighbours as it got.
        fastest = min(bests) / min(steps) - 1.0
        rows.append(
            {
                "model": name,
                "batch": batch,
                "estimated_s": estimated,
                "naive_s": naive,
                "measured_s": measured,
                "error": err,
                "paired_error": paired,
                "fastest_error": fastest,
                "estimates_s": ests,
                "best_block_estimates_s": bests,
                "measured_all_s": meas,
                "breakdown_s": parts[len(parts) // 2],
            }
        )
        print(
            f"{name:20s} {batch:5d} {estimated * 1e3:8.1f}ms {naive * 1e3:7.1f}ms "
            f"{measured * 1e3:7.1f}ms {err:+7.1%} {paired:+8.1%} {fastest:+8.1%}",
            flush=True,
        )
    errs = [abs(r["error"]) for r in rows]
    med, worst = statistics.median(errs), max(errs)
    print(f"median |error| {med:.1%}, max {worst:.1%} (goal: median <= 12%, none over 30%)")
    pair = [abs(r["paired_error"]) for r in rows]
    print(
        f"paired (each round's estimate against its own steps): median {statistics.median(pair):.1%}, max {max(pair):.1%}"
    )
    print(f"load average at the end: {_load()}")
    print("\nestimated CPU/GPU step-time ratios (catalog devices, no measurement):")
    rat = ratios()
    for label, detail, ratio in rat:
        print(f"  {label}: {ratio:.1f}x  ({detail})" if ratio else f"  {label}: unknown")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "rows": rows,
                    "median": med,
                    "max": worst,
                    "ratios": [{"check": a, "detail": b, "ratio": c} for a, b, c in rat],
                },
                indent=2,
            )
        )
    return 0 if med <= 0.12 and worst <= 0.30 else 1


if __name__ == "__main__":
    sys.exit(main())
