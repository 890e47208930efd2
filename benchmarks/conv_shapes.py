"""Each convolution of a CNN timed alone against the price the CPU estimate gives it.

For a model (default ResNet-50, ``tests/data/models/resnet.py``, at batch 4) it records
every ``nn.Conv2d``'s input and output shapes in one forward pass, then times each
convolution's forward (``F.conv2d``) and backward (``aten.convolution_backward`` with the
gradients autograd asks for: no input gradient for the first layer) on real tensors of
those shapes, in the model's own layout (NCHW). The estimate's price of each is its FLOPs
over ``timing.onednn_conv_rate`` (the bench's convolution rate read at the shape's size,
and for a 1x1 no faster than the matmul curve), from the same bench figures
``estimate_accuracy.py`` uses (its ladder: median blocks). Rows are grouped by kind
(kernel, stride, channels, output side); the totals are at the end. Convolutions that
PyTorch runs on its native path (one thread, batch under 16, unstrided 1x1) are marked
and priced as the estimate prices them: per-sample products on the matmul curve.

Not a test; the figures depend on this machine and its load (printed).

    python benchmarks/conv_shapes.py [--threads N] [--batch 4] [--model FILE.py:build --input-shape 3,224,224]
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

import estimate_accuracy as ea  # the sibling benchmark: its bench and helpers

ROOT = Path(__file__).resolve().parents[1]


def _timed(fn: Any, reps: int = 5) -> float:
    """Median seconds of ``reps`` calls after one warm-up call."""
    fn()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _time_conv(
    torch: Any, conv: Any, ish: tuple[int, ...], osh: tuple[int, ...], *, first: bool
) -> tuple[float, float]:
    """Seconds of one forward and one backward of ``conv`` on tensors of these shapes."""
    x, w, grad = torch.randn(ish), conv.weight.detach().clone(), torch.randn(osh)
    stride, pad, dil = list(conv.stride), list(conv.padding), list(conv.dilation)
    mask = [not first, True, False]  # the first layer's input needs no gradient
    back = torch.ops.aten.convolution_backward

    def forward() -> Any:
        return torch.nn.functional.conv2d(x, w, None, stride, pad, dil, conv.groups)

    def backward() -> Any:
        return back(grad, x, w, None, stride, pad, dil, False, [0, 0], conv.groups, mask)

    return _timed(forward), _timed(backward)


def _shapes(model: Any, x: Any) -> list[tuple[Any, tuple[int, ...], tuple[int, ...]]]:
    """(conv module, input shape, output shape) of every Conv2d in one forward pass."""
    import torch

    seen: list[tuple[Any, tuple[int, ...], tuple[int, ...]]] = []
    hooks = [
        mod.register_forward_hook(lambda m, i, o: seen.append((m, tuple(i[0].shape), tuple(o.shape))))
        for mod in model.modules()
        if isinstance(mod, torch.nn.Conv2d)
    ]  # fmt: skip
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return seen


def main() -> int:
    """Print each kind of convolution's real and estimated forward and backward time."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="default: all usable cores")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--model", default=f"{ROOT}/tests/data/models/resnet.py:build")
    parser.add_argument("--input-shape", default="3,224,224")
    args = parser.parse_args()
    import torch

    from hwadvisor.estimate.timing.cpu import here_rates
    from hwadvisor.estimate.timing.step import native_conv, native_conv_rate, onednn_conv_rate
    from hwadvisor.estimate.workload.counting import effective_size
    from hwadvisor.estimate.workload.loading import load_callable
    from hwadvisor.models.workload import ConvShape, Precision

    ea.THREADS = args.threads
    ea.FACTS = ea.probed()
    torch.set_num_threads(ea.threads())
    print(f"cpu: {ea._cpu()}; load average at the start: {ea._load()}")
    bench, _ = ea.micro_bench()
    rates = here_rates(ea.FACTS, bench, Precision.FP32)
    print(f"threads: {ea.threads()}, torch {torch.__version__}; conv2d {(rates.conv or 0) / 1e9:.0f} "
          f"GFLOP/s, backward {(rates.conv_backward or 0) / 1e9:.0f}")  # fmt: skip
    model = load_callable(args.model)()
    shape = [int(d) for d in args.input_shape.split(",")]
    b = args.batch
    rows: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0, 0.0])
    for i, (conv, ish, osh) in enumerate(_shapes(model, torch.randn(b, *shape))):
        fwd, bwd = _time_conv(torch, conv, ish, osh, first=i == 0)
        w, stride, dil, groups = conv.weight, list(conv.stride), list(conv.dilation), conv.groups
        kh, kw = w.shape[2:]
        product = [int(w.shape[0]) // groups, int(w.shape[1]) * kh * kw, osh[2] * osh[3]]
        flops = 2.0 * b * product[0] * product[1] * product[2] * groups
        # As the counter sizes it (counting._product_dims): all output channels, one group's K.
        size = effective_size(b * product[2], int(w.shape[0]), product[1])
        c = ConvShape(count=1, kernel=[kh, kw], stride=stride, dilation=dil, groups=groups,
                      input_elements=ish[1] * ish[2] * ish[3], product=product,
                      flops=flops / b, size=size)  # fmt: skip
        on_native = native_conv(c, b, ea.threads())
        forward_rate = native_conv_rate(c, rates) if on_native else onednn_conv_rate(c, rates, b)
        backward_rate = native_conv_rate(c, rates) if on_native else onednn_conv_rate(c, rates, b, backward=True)  # fmt: skip
        est_f = flops / (forward_rate or 1.0)
        est_b = flops * (2.0 if i > 0 else 1.0) / (backward_rate or 1.0)
        native = " native" if on_native else ""
        key = f"{kh}x{kw} s{stride[0]} {ish[1]}->{osh[1]} at {osh[2]}{native}"
        row = rows[key]
        row[0] += 1
        row[1] += fwd
        row[2] += est_f
        row[3] += bwd
        row[4] += est_b
    print(f"{'convolution':30s} {'n':>3s} {'forward':>9s} {'est.':>8s} {'ratio':>6s} "
          f"{'backward':>9s} {'est.':>8s} {'ratio':>6s}")  # fmt: skip
    for key, (n, f, ef, bw, eb) in sorted(rows.items(), key=lambda kv: -kv[1][1] - kv[1][3]):
        print(f"{key:30s} {int(n):3d} {f * 1e3:7.2f}ms {ef * 1e3:6.2f}ms {f / ef:6.2f} "
              f"{bw * 1e3:7.2f}ms {eb * 1e3:6.2f}ms {bw / eb:6.2f}")  # fmt: skip
    tf, tef = sum(r[1] for r in rows.values()), sum(r[2] for r in rows.values())
    tb, teb = sum(r[3] for r in rows.values()), sum(r[4] for r in rows.values())
    print(f"all: forward {tf * 1e3:.1f} ms against {tef * 1e3:.1f} ({tf / tef:.2f}x), "
          f"backward {tb * 1e3:.1f} ms against {teb * 1e3:.1f} ({tb / teb:.2f}x)")  # fmt: skip
    print(f"load average at the end: {ea._load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
