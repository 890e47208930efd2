"""``--measure``: run a few real training (or inference) steps of the user's model here.

The result is labelled measured, never mixed with the estimates: it needs the model's
code, so catalog entries (which carry only their figures) cannot be measured.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.loading import load_callable, looks_like_user_model
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.workload import Precision, Task, Workload

#: Steps timed after two warm-up steps (optimizer state allocation, caches).
STEPS = 3
WARMUP = 2


def _input(model: Any, wl: Workload) -> Any:
    import torch

    shape = [wl.batch_size, *(wl.input_shape or [])]
    first = next((m for m in model.modules() if not list(m.children())), None)
    if isinstance(first, torch.nn.Embedding):
        return torch.randint(0, first.num_embeddings, shape)
    return torch.randn(shape)


def measure_here(wl: Workload, *, steps: int = STEPS) -> DeviceEstimate:
    """Median seconds of real steps of ``wl``'s model on this CPU, as a measured estimate."""
    from hwadvisor.bench.runner import import_torch

    if wl.model is None or not looks_like_user_model(wl.model):
        raise UsageError(
            "--measure needs your own model (--model module:callable or file.py:callable)"
        )
    torch = import_torch()  # a broken torch is a clear error (exit 3), not a traceback
    model = load_callable(wl.model)()
    train = wl.task is Task.TRAIN
    model.train(train)
    opt: Any = None
    if train:
        params = model.parameters()
        opt = (
            torch.optim.AdamW(params, lr=1e-4)
            if wl.optimizer.value == "adamw"
            else torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        )
    x = _input(model, wl)
    autocast = wl.precision in (Precision.AMP, Precision.BF16)
    times: list[float] = []
    for i in range(steps + WARMUP):
        start = time.perf_counter()
        with (
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast),
            torch.set_grad_enabled(train),
        ):
            out = model(x)
            loss = sum(t.float().sum() for t in _tensors(out))
        if train and isinstance(loss, torch.Tensor):
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
        if i >= WARMUP:
            times.append(time.perf_counter() - start)
    step = statistics.median(times)
    total = None
    if wl.dataset_size is not None:
        total = -(-int(wl.dataset_size * (wl.epochs if train else 1.0)) // wl.batch_size) * step
    return DeviceEstimate(
        device="here",
        name="this machine (measured)",
        step_time_s=step,
        total_time_s=total,
        throughput_samples_s=wl.batch_size / step,
        basis=f"measured: median of {steps} real steps here",
        measured=True,
        assumptions=[f"measured with torch {torch.__version__}, {torch.get_num_threads()} threads"],
    )


def _tensors(obj: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [
        t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
