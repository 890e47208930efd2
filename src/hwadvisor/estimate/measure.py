"""``--measure``: time real training (or inference) steps of the user's model here.

The result is labelled measured, never mixed with the estimates: it needs the model's
code, so catalog entries (which carry only their figures) cannot be measured.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.loading import load_callable, looks_like_user_model
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.workload import Optimizer, Precision, Task, Workload

#: Untimed steps first: the optimizer allocates its state and caches fill on these.
WARMUP = 2
#: Seconds of timed steps: ``torch.utils.benchmark``'s ``blocked_autorange`` repeats
#: blocks of steps until this much time is spent (at least one block, however slow).
MIN_RUN_S = 1.0


def _input(model: Any, wl: Workload) -> Any:
    import torch

    shape = [wl.batch_size, *(wl.input_shape or [])]
    first = next((m for m in model.modules() if not list(m.children())), None)
    if isinstance(first, torch.nn.Embedding):
        return torch.randint(0, first.num_embeddings, shape)
    return torch.randn(shape)


def measure_here(wl: Workload, *, min_run_s: float = MIN_RUN_S) -> DeviceEstimate:
    """Seconds of real steps of ``wl``'s model on this CPU, as a measured estimate.

    The steps are timed by the benchmark's own clock (:func:`hwadvisor.bench.timing.time_statement`,
    ``torch.utils.benchmark.Timer``) on torch's current number of threads: the median
    over blocks of steps, after :data:`WARMUP` untimed ones.
    """
    from hwadvisor.bench.runner import import_torch
    from hwadvisor.bench.timing import time_statement

    if wl.model is None or not looks_like_user_model(wl.model):
        raise UsageError(
            "--measure needs your own model (--model module:callable or file.py:callable)"
        )
    torch = import_torch()  # a broken torch is a clear error (exit 3), not a traceback
    step = _one_step(torch, load_callable(wl.model)(), wl)
    for _ in range(WARMUP):
        step()
    threads = torch.get_num_threads()
    timing = time_statement(step, threads=threads, sync=None, min_run_s=min_run_s)
    seconds = timing.median_s
    train = wl.task is Task.TRAIN
    total = None
    if wl.dataset_size is not None:
        steps = -(-int(wl.dataset_size * (wl.epochs if train else 1.0)) // wl.batch_size)
        total = steps * seconds
    return DeviceEstimate(
        device="here",
        name="this machine (measured)",
        step_time_s=seconds,
        total_time_s=total,
        throughput_samples_s=wl.batch_size / seconds,
        basis=f"measured: median of {timing.runs} timed runs of real steps here",
        measured=True,
        assumptions=[
            f"measured with torch {torch.__version__}, {threads} threads, "
            "timed by torch.utils.benchmark"
        ],
    )


def _one_step(torch: Any, model: Any, wl: Workload) -> Callable[[], None]:
    """One training step (forward, backward, optimizer) or one inference pass of ``model``."""
    train = wl.task is Task.TRAIN
    model.train(train)
    opt: Any = None
    if train:
        params = model.parameters()
        opt = (
            torch.optim.AdamW(params, lr=1e-4)
            if wl.optimizer is Optimizer.ADAMW
            else torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        )
    x = _input(model, wl)
    autocast = wl.precision in (Precision.AMP, Precision.BF16)

    def step() -> None:
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

    return step


def _tensors(obj: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [
        t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor) and t.is_floating_point()
    ]
