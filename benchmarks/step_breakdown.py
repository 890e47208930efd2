"""Where a training step's time goes: the estimate's parts against the real step's, by class.

For one model of ``estimate_accuracy.py`` it estimates an AdamW training step "here" from
the bench figures as ``hwadvisor bench`` records them (the products, each memory-bound
family, the optimizer), then runs real steps on this CPU and times every aten operator
inside them with a dispatch mode: a ``perf_counter`` around each call, no profiler, so
an operator's time includes nothing but its own call. Operators are sorted into the
estimate's classes: products (matrix products and convolutions), the memory-bound
families (``estimate.counting.op_family``), operators without data (views), and the
optimizer's step, timed as a whole. The dispatch mode adds its own few microseconds
between calls, so the plain step (no mode) is printed too, and the rest of it (Python,
autograd's bookkeeping) is the plain step less the operators.

The real steps run in this process, after the bench (the dispatch mode has to wrap
them), so they fault in fewer pages than a fresh process's steps: glibc's thresholds
stay raised after the bench's sweep (docs/estimates.md section 3, "The heap's faults,
replayed"), and the estimate's ``first_touch`` class will read higher than here.

Not a test; the figures depend on this machine and its load (printed).

    python benchmarks/step_breakdown.py encoder [--threads N] [--steps 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import estimate_accuracy as ea  # the sibling benchmark: its models and bench
from memory_models import MODELS as HELD_OUT  # time_models.py's ten models

HELD_OUT_FILE = Path(__file__).resolve().parent / "memory_models.py"


def cases() -> dict[str, tuple[str, str, list[int], int, bool]]:
    """name -> (estimate spec, run spec, one sample's shape, batch, loss is the output's sum).

    ``estimate_accuracy.py``'s four models (cross-entropy on class labels) and
    ``time_models.py``'s ten at their smaller batch (the output's sum, as there).
    """
    out = {c[0].split()[0]: (c[1], c[2], c[3], c[4], False) for c in ea.CASES}
    for name, (build, shape, _tokens, (batch, _)) in HELD_OUT.items():
        spec = f"{HELD_OUT_FILE}:{build.__name__}"
        out[name] = (spec, spec, shape, batch, True)
    return out


#: aten operators that are products: priced at the matmul or convolution rate.
PRODUCTS = frozenset(
    {"mm", "addmm", "bmm", "baddbmm", "convolution", "convolution_backward", "_slow_conv2d_forward",
     "_slow_conv2d_backward", "mkldnn_convolution", "linear"}
)  # fmt: skip
#: aten operators that move no data (a view or a metadata change).
VIEWS = frozenset(
    {"view", "_unsafe_view", "t", "transpose", "permute", "expand", "detach", "unsqueeze",
     "squeeze", "select", "slice", "as_strided", "alias", "split", "unbind", "unflatten",
     "reshape", "empty", "empty_strided", "zeros_like", "_to_copy", "lift_fresh"}
)  # fmt: skip


def estimated(wl: Any, bench: Any) -> dict[str, float]:
    """Seconds of one step by class, as the estimate prices them here."""
    from hwadvisor.estimate import estimate_workload
    from hwadvisor.estimate.timing.cpu import here_rates
    from hwadvisor.estimate.timing.step import memory_by_family

    est = estimate_workload(wl, facts=ea.FACTS, bench=bench, on=["here"]).estimates[0]
    parts = dict(est.time_breakdown_s or {})
    out = {"products": sum(parts.pop(k, 0.0) for k in ("gemm", "conv", "other"))}
    out["optimizer"] = parts.pop("optimizer", 0.0)
    out["dispatch"] = parts.pop("overhead", 0.0)
    out["first_touch"] = parts.pop("first_touch", 0.0)
    rates = here_rates(ea.FACTS, bench, wl.precision)
    families = memory_by_family(wl, wl.profile, rates) if wl.profile is not None else {}
    out.update(families or {"memory": parts.get("memory", 0.0)})
    return out


def measured(
    run_spec: str, shape: list[int], batch: int, steps: int, summed: bool = False
) -> dict[str, float]:
    """Seconds of one real step by class (median step without the mode as ``step``)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    from hwadvisor.estimate.workload.counting import op_family
    from hwadvisor.estimate.workload.loading import load_callable

    model = load_callable(run_spec)()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    first = next(m for m in model.modules() if len(list(m.children())) == 0)
    tokens = isinstance(first, torch.nn.Embedding)
    x = torch.randint(0, 1000, (batch, *shape)) if tokens else torch.randn(batch, *shape)
    y = torch.zeros(batch, dtype=torch.long)
    spent: dict[str, float] = defaultdict(float)

    class Timed(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:  # fmt: skip
            start = time.perf_counter()
            out = func(*args, **(kwargs or {}))
            name = func.overloadpacket.__name__
            key = "products" if name in PRODUCTS else "views" if name in VIEWS else op_family(name)
            spent[key] += time.perf_counter() - start
            return out

    def loss() -> Any:
        out = model(x)
        return out.sum() if summed else torch.nn.functional.cross_entropy(out, y)

    def step(mode: Any = None) -> None:
        opt.zero_grad(set_to_none=True)
        if mode is None:
            loss().backward()
            opt.step()
            return
        with mode:
            loss().backward()
        start = time.perf_counter()
        opt.step()
        spent["optimizer"] += time.perf_counter() - start

    for _ in range(3):
        step()
    plain = []
    for _ in range(steps):
        start = time.perf_counter()
        step()
        plain.append(time.perf_counter() - start)
    for _ in range(steps):
        step(Timed())
    out = {k: v / steps for k, v in spent.items()}
    out["step"] = statistics.median(plain)
    return out


def main() -> int:
    """Print the estimate's classes beside the real step's."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", choices=list(cases()))
    parser.add_argument("--threads", type=int, default=None, help="default: all usable cores")
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    import torch

    from hwadvisor.estimate import build_workload

    ea.THREADS = args.threads
    ea.FACTS = ea.probed()
    torch.set_num_threads(ea.threads())
    name = args.model
    spec, run_spec, shape, batch, summed = cases()[name]
    kw: dict[str, Any] = {"model": spec, "batch_size": batch}
    if ":" in spec:
        kw["input_shape"] = shape
    wl = build_workload(**kw)
    print(f"cpu: {ea._cpu()}; load average at the start: {ea._load()}")
    bench, _ = ea.micro_bench()
    est = estimated(wl, bench)
    real = measured(run_spec, shape, batch, args.steps, summed)
    step = real.pop("step")
    print(f"{name}, batch {batch}, {ea.threads()} threads, median of {args.steps} steps")
    print(f"{'class':22s} {'estimated':>10s} {'measured':>10s} {'ratio':>7s}")
    for key in sorted(set(est) | set(real), key=lambda k: -max(est.get(k, 0), real.get(k, 0))):
        e, m = est.get(key, 0.0), real.get(key, 0.0)
        ratio = f"{m / e:6.2f}x" if e else "      -"
        print(f"{key:22s} {e * 1e3:8.2f}ms {m * 1e3:8.2f}ms {ratio}")
    rest = step - sum(real.values())
    print(f"{'(rest of the step)':22s} {'':>10s} {rest * 1e3:8.2f}ms")
    print(f"{'step':22s} {sum(est.values()) * 1e3:8.2f}ms {step * 1e3:8.2f}ms")
    print(f"load average at the end: {ea._load()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
