"""``--measure``: time real training (or inference) steps of the user's model here.

The result is labelled measured, never mixed with the estimates: it needs the model's
code, so catalog entries (which carry only their figures) cannot be measured.

The steps run in a fresh Python process, as the user's job will (memory this process
freed before would spare them page faults the job's own steps pay): the contained child
(:mod:`hwadvisor.estimate.workload.contained`), with its deadline and memory limit, its
output kept off stdout, and any way the model's code ends as one error line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.timing.scaling import total_time
from hwadvisor.estimate.workload.loading import load_callable, looks_like_user_model
from hwadvisor.estimate.workload.memtrack import tensors_of
from hwadvisor.models.estimate import DeviceEstimate
from hwadvisor.models.workload import Optimizer, Precision, Task, Workload
from hwadvisor.optional import import_torch

#: Untimed steps first: the optimizer allocates its state and caches fill on these.
WARMUP = 2
#: What the fresh process needs of the workload to run its steps.
_STEP_FIELDS = {"model", "batch_size", "input_shape", "task", "optimizer", "precision"}
#: How the measured steps run each precision.
_PRECISION_NOTES = {
    Precision.FP32: "measured in fp32",
    Precision.AMP: "measured in amp: fp32 weights, CPU autocast to bfloat16",
    Precision.BF16: "measured in bf16: the model and its input cast to bfloat16",
    Precision.FP16: "measured in fp16: the model and its input cast to float16",
    Precision.INT8: "measured in fp32: --measure does not quantize the model to int8",
}
#: Seconds of timed steps: ``torch.utils.benchmark``'s ``blocked_autorange`` repeats
#: blocks of steps until this much time is spent (at least one block, however slow).
MIN_RUN_S = 1.0


def _input(model: Any, wl: Workload, dtype: Any = None) -> Any:
    """A batch for ``model``: token ids for a model that starts with an embedding, else
    normal values (in ``dtype``, where given)."""
    import torch

    shape = [wl.batch_size, *(wl.input_shape or [])]
    first = next((m for m in model.modules() if not list(m.children())), None)
    if isinstance(first, torch.nn.Embedding):
        return torch.randint(0, first.num_embeddings, shape)
    return torch.randn(shape, dtype=dtype)


def measure_here(wl: Workload, *, min_run_s: float = MIN_RUN_S) -> DeviceEstimate:
    """Seconds of real steps of ``wl``'s model on this CPU, as a measured estimate.

    The steps run in the contained child (:func:`measure_data`) on torch's current number of
    threads, timed by ``torch.utils.benchmark.Timer``: the median over blocks of steps,
    after :data:`WARMUP` untimed ones.
    """
    if wl.model is None or not looks_like_user_model(wl.model):
        raise UsageError(
            "--measure needs your own model (--model module:callable or file.py:callable)"
        )
    from hwadvisor.estimate.workload.contained import run_contained

    step = wl.model_dump(mode="json", include=_STEP_FIELDS)
    got = run_contained("measure", wl.model, spec=wl.model, workload=step, min_run_s=min_run_s)
    seconds, runs, threads = float(got["median_s"]), int(got["runs"]), int(got["threads"])
    return DeviceEstimate(
        device="here",
        name="this machine (measured)",
        step_time_s=seconds,
        total_time_s=total_time(wl, seconds, wl.batch_size),
        throughput_samples_s=wl.batch_size / seconds,
        basis=f"measured: median of {runs} timed runs of real steps here, in a fresh process",
        measured=True,
        assumptions=[
            f"measured with torch {got['torch']}, {threads} threads, "
            "timed by torch.utils.benchmark in a fresh process, as the job will run",
            _PRECISION_NOTES[wl.precision],
        ],
    )


def measure_data(spec: str, workload: dict[str, Any], min_run_s: float) -> dict[str, Any]:
    """The steps of ``workload`` (what :func:`measure_here` sends; ``spec`` is its model),
    timed in this process, the contained child: median seconds, runs, threads, torch."""
    torch = import_torch()  # a broken torch is a clear error (exit 3), not a traceback
    threads = torch.get_num_threads()
    wl = Workload(**workload)
    step = _one_step(torch, load_callable(spec)(), wl)
    for _ in range(WARMUP):
        step()
    from torch.utils.benchmark import Timer

    timer = Timer(stmt="step()", globals={"step": step}, num_threads=threads)
    m = timer.blocked_autorange(min_run_time=float(min_run_s))
    return {
        "median_s": float(m.median),
        "runs": len(m.times),
        "threads": threads,
        "torch": str(torch.__version__),
    }


def _one_step(torch: Any, model: Any, wl: Workload) -> Callable[[], None]:
    """One training step (forward, backward, optimizer) or one inference pass of ``model``:
    in ``bf16`` and ``fp16`` the model and its input in that dtype, in ``amp`` under CPU
    autocast to bfloat16."""
    train = wl.task is Task.TRAIN
    model.train(train)
    # The weights in 16 bits for bf16 and fp16 (what the memory model counts,
    # docs/estimates.md 2.1); amp keeps fp32 weights and autocasts each product.
    dtype = {Precision.BF16: torch.bfloat16, Precision.FP16: torch.float16}.get(wl.precision)
    if dtype is not None:
        model = model.to(dtype)
    opt: Any = None
    if train:
        params = model.parameters()
        opt = (
            torch.optim.AdamW(params, lr=1e-4)
            if wl.optimizer is Optimizer.ADAMW
            else torch.optim.SGD(params, lr=1e-3, momentum=0.9)
        )
    x = _input(model, wl, dtype)
    autocast = wl.precision is Precision.AMP

    def step() -> None:
        with (
            torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast),
            torch.set_grad_enabled(train),
        ):
            out = model(x)
            loss = sum(t.float().sum() for t in tensors_of(out) if t.is_floating_point())
        if train and isinstance(loss, torch.Tensor):
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()

    return step
