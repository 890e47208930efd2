"""The small C++ objects autograd and the Python argument parser make around the tensors.

A fake run counts storages; on a CPU every one of them also has a ``c10::StorageImpl``
(:data:`hwadvisor.estimate.workload.cpu_alloc.STORAGE_IMPL`). An allocation trace of a real
training step (every ``malloc``/``free``/``posix_memalign`` of the small ResNet at batch
8 and 32, torch 2.13.0+cpu, an ``LD_PRELOAD`` shim with a marker around each dispatcher
call) showed which other small objects live long enough to matter to glibc's heap (those
alive across many tensor allocations, which keep a freed tensor's chunk split):

- **the autograd graph**: before each operator it records, the autograd kernel
  (``torch/csrc/autograd/generated/VariableType*.cpp``) makes the operator's backward
  node (``ConvolutionBackward0``, ``NativeBatchNormBackward0``, ...: a ``malloc`` of
  ``sizeof`` the generated class, :data:`NODE_BYTES` as traced), and for each parameter
  the graph reaches for the first time its ``AccumulateGrad`` node
  (:data:`ACCUMULATE_GRAD`); the graph is held by the step's output, so these live until
  the output is dropped, after the optimizer step;
- **the ``AutogradMeta``** (:data:`AUTOGRAD_META`) of each output autograd gives a
  ``grad_fn`` (``set_history``, after the call: its differentiable outputs, not batch
  norm's saved statistics nor max pooling's indices), freed with the tensor;
- **the backward engine's bookkeeping**: when backward starts, the graph task counts each
  node's dependencies and makes an input buffer per node (a 16- and a 24-byte block per
  node as traced: ``torch/csrc/autograd/engine.cpp``), freed when the task ends;
- **wrapped scalars**: a Python number passed where a schema takes a ``Tensor`` (the
  for-loop AdamW's ``param.mul_(1 - lr * wd)``, ``step_t += 1``, ``denom / bc2``, ``+ eps``)
  becomes a 0-dim double tensor in the argument parser (``TensorImpl``, its version
  counter, a ``StorageImpl`` and 8 bytes of data), and ``TensorIterator`` copies it to the
  operation's float type inside the call (the same, with 4 bytes); both die with the call.

Sizes are ``sizeof`` the objects on x86-64 as the trace showed them; counts follow from
the operators, parameters and arguments of the counted run itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

#: ``sizeof(c10::TensorImpl)`` plus its ``VariableVersion`` counter (torch 2.13, x86-64).
TENSOR_IMPL = 176
VERSION_COUNTER = 24
#: ``sizeof(torch::autograd::AutogradMeta)`` as traced.
AUTOGRAD_META = 184
#: ``sizeof(torch::autograd::AccumulateGrad)`` as traced, one per parameter in a graph.
ACCUMULATE_GRAD = 472
#: The backward nodes traced (``sizeof`` each generated class, torch 2.13.0+cpu).
NODE_BYTES = {
    "aten.convolution.default": 768,
    "aten.native_batch_norm.default": 960,
    "aten.relu.default": 544,
    "aten.add.Tensor": 512,
    "aten.addmm.default": 800,
    "aten.mean.dim": 536,
    "aten.view.default": 488,
    "aten.sum.default": 488,
    "aten.t.default": 464,
}
#: A node of an operator not traced: the median of the traced ones.
NODE_DEFAULT = 536
#: The engine's per-node blocks while a backward pass runs (dependency count, buffer).
ENGINE_BLOCKS = (16, 24)
#: A wrapped scalar's data: a double from Python, the operation's float inside.
SCALAR_OUTER, SCALAR_INNER = 8, 4
#: Calls that record nothing in the graph (not differentiable, or no tensor math).
_NO_NODE = (
    "aten.detach.",
    "aten.alias.",
    "prim.",
    "profiler.",
    "aten._local_scalar_dense.",
    "aten.ones_like.",
    "aten.zeros_like.",
    "aten.empty_like.",
    "aten.full_like.",
    "aten.new_",
)


def _tensors(obj: Any) -> list[Any]:
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for o in obj for t in _tensors(o)]
    return []


def recorded(func: Any, args: Sequence[Any]) -> bool:
    """Whether autograd records ``func`` on ``args`` (grad mode on, an input needing
    a gradient): the call has a backward node."""
    import torch

    name = str(func)
    if not torch.is_grad_enabled() or name.startswith(_NO_NODE):
        return False
    return any(t.requires_grad for t in _tensors(list(args)))


def node_bytes(func: Any) -> int:
    """``sizeof`` the backward node of ``func`` (traced, else :data:`NODE_DEFAULT`)."""
    return NODE_BYTES.get(str(func), NODE_DEFAULT)


def new_leaves(args: Sequence[Any], seen: set[int]) -> list[Any]:
    """The leaf tensors needing a gradient in ``args`` not yet in this graph (each gets
    its ``AccumulateGrad`` node); adds them to ``seen``."""
    out = []
    for t in _tensors(list(args)):
        if t.requires_grad and t.grad_fn is None and id(t) not in seen:
            seen.add(id(t))
            out.append(t)
    return out


def wrapped_scalars(func: Any, args: Sequence[Any]) -> int:
    """How many Python numbers ``args`` pass where ``func``'s schema takes a Tensor."""
    schema = getattr(func, "_schema", None)
    if schema is None:
        return 0
    count = 0
    for arg, value in zip(schema.arguments, args, strict=False):
        if str(arg.type) == "Tensor" and isinstance(value, (int, float)):
            count += 1
    return count
