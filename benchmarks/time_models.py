"""The CPU time estimate on the ten models of the memory benchmark: estimated vs real steps.

``estimate_accuracy.py`` checks four models. This runs the same method on the models
``memory_models.py`` builds for ``memory_accuracy.py``: a VGG-style CNN, a small ResNet,
a MobileNet-style depthwise CNN, a U-Net, an LSTM, a GRU encoder-decoder, a transformer
encoder, ``nn.Transformer``, a GPT-style decoder and an MLP. None of them was looked at
while the time model was built. For each, at the smaller of its two batch sizes, it
estimates one AdamW training step "here" from the bench figures (median blocks, as
``hwadvisor bench`` records them), then runs real steps (loss: the output's sum, as the
memory benchmark does) and compares the estimate with the median step. Rounds of (bench,
steps) as in ``estimate_accuracy.py``.

Not a test; the figures depend on this machine and its load (printed).

    python benchmarks/time_models.py [--threads N] [--rounds 2] [--steps 6] [--bench product] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import estimate_accuracy as ea  # the sibling benchmark: its bench and helpers
from memory_models import MODELS

HERE = Path(__file__).resolve().parent / "memory_models.py"


def main() -> int:
    """Print each model's estimate beside its median step, then the median and worst error."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="default: all usable cores")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--only", nargs="*", default=None, choices=sorted(MODELS))
    parser.add_argument("--bench", choices=("product", "ladder"), default="ladder",
                        help="as estimate_accuracy.py's")  # fmt: skip
    parser.add_argument("--in-process", action="store_true",
                        help="as estimate_accuracy.py's: the real steps in this process")  # fmt: skip
    args = parser.parse_args()
    import torch

    from hwadvisor.estimate import build_workload, estimate_workload

    ea.THREADS = args.threads
    ea.FRESH = not args.in_process
    ea.FACTS = ea.probed()
    torch.set_num_threads(ea.threads())
    print(f"cpu: {ea._cpu()}; load average at the start: {ea._load()}")
    where = "in this process" if args.in_process else "each in a fresh process"
    print(
        f"threads: {ea.threads()}, torch {torch.__version__}, {args.rounds} rounds, real steps {where}"
    )
    print(f"{'model':20s} {'batch':>5s} {'estimated':>10s} {'measured':>10s} {'error':>7s}")
    errors = []
    for name in args.only or list(MODELS):
        _, shape, _, (batch, _) = MODELS[name]
        spec = f"{HERE}:{MODELS[name][0].__name__}"
        wl = build_workload(model=spec, input_shape=shape, batch_size=batch)
        ests, steps = [], []
        for _ in range(args.rounds):
            bench, _best = ea.product_bench() if args.bench == "product" else ea.micro_bench()
            est = estimate_workload(wl, facts=ea.FACTS, bench=bench, on=["here"]).estimates[0]
            ests.append(est.step_time_s or float("nan"))
            steps += ea.measure(spec, shape, batch, args.steps, loss="sum")
        e, m = statistics.median(ests), statistics.median(steps)
        errors.append(abs(e / m - 1.0))
        print(f"{name:20s} {batch:5d} {e * 1e3:8.1f}ms {m * 1e3:8.1f}ms {e / m - 1.0:+7.1%}", flush=True)  # fmt: skip
    print(f"median |error| {statistics.median(errors):.1%}, worst {max(errors):.1%}")
    print(f"load average at the end: {ea._load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
