"""A user's own model (``module:callable``, ``file.py:callable``) as a workload.

Imported, built on the meta device and counted (FLOPs per operator with
``FlopCounterMode``, memory on fake tensors through :mod:`.usermem`). This runs the
user's code, so it runs only in the contained child (:mod:`.contained`), which answers
with the workload as JSON; :func:`hwadvisor.estimate.build_workload` asks for it there.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.estimate.workload.counting import build_on_meta, count_model, has_recurrent
from hwadvisor.estimate.workload.loading import load_callable
from hwadvisor.estimate.workload.profile import counted_profile
from hwadvisor.estimate.workload.usermem import user_memory_counts
from hwadvisor.models.workload import (
    ModelKind,
    Optimizer,
    Precision,
    Task,
    Workload,
    checked_workload,
)
from hwadvisor.optional import import_torch


def user_workload_data(
    spec: str, input_shape: list[int], seq_len: int | None, common: dict[str, Any]
) -> dict[str, Any]:
    """:func:`user_workload` as JSON-ready data (what the contained child answers)."""
    typed = {
        **common,
        "task": Task(common["task"]),
        "precision": Precision(common["precision"]),
        "optimizer": Optimizer(common["optimizer"]),
    }
    return user_workload(spec, input_shape, seq_len, typed).model_dump(mode="json")


def user_workload(
    spec: str, input_shape: list[int], seq_len: int | None, common: dict[str, Any]
) -> Workload:
    """The user's model imported, built on the meta device and counted, in this process
    (the contained child calls this; see :func:`_from_user_model`)."""
    # Torch first, quietly and with a clear error: the user's file usually imports it, and
    # a broken torch (or its import-time warnings) must not surface as the user's fault.
    import_torch()
    fn = load_callable(spec)
    module = build_on_meta(fn, spec)
    batch = int(common["batch_size"])
    counted = count_model(module, input_shape, batch, spec, train=common["task"] is Task.TRAIN)
    fwd = counted.forward
    kind = ModelKind.CNN if fwd.conv_flops > 0.5 * max(fwd.total_flops, 1.0) else ModelKind.MLP
    if counted.tokens_input:
        kind = ModelKind.ENCODER
    notes = [
        (
            f"counted on the meta device with FlopCounterMode at batch {batch}, input shape {input_shape}"
            if counted.method != "real"
            else f"FLOPs counted by a real run at batch 1 and 2 on the CPU (the meta device cannot "
            f"run this model), scaled to batch {batch}; input shape {input_shape}"
        ),
        "backward = 2 x forward FLOPs at the same product sizes; its memory-bound operators counted on their own",
    ]
    if has_recurrent(module):
        notes.append(
            "recurrent layers: operators counted on fake CPU tensors, as a CPU dispatches them "
            "(an LSTM layer as one oneDNN primitive; a GRU's input product for the whole sequence "
            "at once); each step's recurrent product priced as its own call of batch rows"
        )
    if counted.tokens_input:
        notes.append("first layer is an embedding: integer token inputs")
    mem, mem_notes = user_memory_counts(
        spec, input_shape, batch, precision=common["precision"], optimizer=common["optimizer"]
    )
    fields: dict[str, Any] = dict(
        model=spec,
        kind=kind,
        # A model without weights or products (pooling only) leaves them null: the
        # workload's sizes are above zero or unknown.
        params=counted.params or None,
        param_tensors=counted.param_tensors or None,
        flops_per_sample=(fwd.total_flops / batch) or None,
        input_shape=input_shape,
        seq_len=seq_len or (input_shape[0] if counted.tokens_input else None),
        activation_bytes_per_sample=counted.activation_bytes_per_sample,
        source="counted",
        assumptions=[*notes, *mem_notes],
        **common,
    )
    wl = checked_workload(fields, derived=True)
    update = {"profile": counted_profile(fwd, batch, counted.backward), "memory_counts": mem}
    return wl.model_copy(update=update)
