"""Counting a user's model on the meta device: parameters, FLOPs per operator, activations.

The model is built under ``torch.device("meta")`` (no memory, no weights initialised) and
one forward pass is run inside ``torch.utils.flop_counter.FlopCounterMode`` and a small
dispatch mode of our own that sorts each aten operator into matrix products (with their
size), convolutions, and memory-bound operators (with the bytes they read and write).
Saved-for-backward bytes at batch 1 and 2 give the activation bytes per sample.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.loading import load_callable, looks_like_user_model
from hwadvisor.estimate.workload.memtrack import fake_model, takes_tokens, tensors_of
from hwadvisor.models.workload import RNN_LAYER

_GEMM_OPS = {
    "mm",
    "addmm",
    "bmm",
    "baddbmm",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_cudnn_attention",
    "_flash_attention_forward",
    "_efficient_attention_forward",
}
_CONV_OPS = {
    "convolution",
    "_convolution",
    "convolution_overrideable",
    "_slow_conv2d_forward",
    "cudnn_convolution",
    "convolution_backward",
}
# Operators that only describe memory (shape changes, allocation) and move no data.
_FREE_OPS = {
    "t",
    "view",
    "_unsafe_view",
    "transpose",
    "permute",
    "expand",
    "reshape",
    "as_strided",
    "slice",
    "select",
    "unsqueeze",
    "squeeze",
    "detach",
    "alias",
    "split",
    "split_with_sizes",
    "unbind",
    "chunk",
    "narrow",
    "empty",
    "empty_like",
    "empty_strided",
    "lift_fresh",
    "_to_copy",
    "new_empty",
    "new_empty_strided",
    "device",
}
#: oneDNN's fused recurrent layer, what an LSTM runs as on a CPU (forward, backward).
_RNN_LAYERS = {"mkldnn_rnn_layer", "mkldnn_rnn_layer_backward"}


#: Memory-bound operators by aten name: the family they are grouped in
#: (``OpProfile.op_groups``) and how many times slower than streaming (a triad) they run
#: in eager PyTorch on a CPU per byte read and written, the weights of the profile's
#: cost-weighted ``memory_bytes`` (from profiling the models of
#: ``benchmarks/estimate_accuracy.py``): per-element work sets them apart (batch norm's
#: statistics, pooling's indices, dropout's random number per element, a causal mask's
#: selections). An operator not listed is element-wise at the triad rate (as batch norm
#: in eval mode, a per-channel affine, is).
MEMORY_OPS: dict[str, tuple[str, float]] = {
    "native_batch_norm": ("batch_norm", 14.0),
    "_native_batch_norm_legit": ("batch_norm", 14.0),
    "_native_batch_norm_legit_functional": ("batch_norm", 14.0),
    "native_batch_norm_backward": ("batch_norm_backward", 9.5),
    "max_pool2d_with_indices": ("max_pool", 35.0),
    "max_pool2d_with_indices_backward": ("max_pool_backward", 2.0),
    "avg_pool2d": ("eltwise", 3.0),
    "avg_pool2d_backward": ("eltwise", 3.0),
    "threshold_backward": ("eltwise", 4.0),
    "native_layer_norm": ("layer_norm", 2.0),
    "native_layer_norm_backward": ("layer_norm", 2.0),
    "_softmax": ("softmax", 3.0),
    "_safe_softmax": ("softmax", 3.0),
    "_softmax_backward_data": ("softmax_backward", 1.2),
    "gelu": ("gelu", 3.0),
    "gelu_backward": ("gelu", 3.0),
    "bernoulli_": ("dropout", 23.0),
    "native_dropout": ("dropout", 10.0),
    "mul": ("eltwise", 2.0),
    "sum": ("eltwise", 3.5),
    "masked_fill": ("masked_fill", 2.0),
    "masked_fill_": ("masked_fill", 2.0),
    "where": ("where", 1.8),
}
#: The cost weights alone, by operator.
MEMORY_OP_COST = {name: cost for name, (_, cost) in MEMORY_OPS.items()}
_STREAMING = ("eltwise", 1.0)


@dataclass
class Count:
    """What one pass counted: FLOPs by class, gemm FLOPs by size, bytes, operator launches."""

    total_flops: float = 0.0
    #: effective size -> FLOPs of the products (:func:`effective_size`).
    gemm: dict[int, float] = field(default_factory=dict)
    conv: dict[int, float] = field(default_factory=dict)
    conv_flops: float = 0.0
    other_flops: float = 0.0
    memory_bytes: float = 0.0
    kernels: int = 0
    saved_bytes: float = 0.0
    #: FLOPs of operators torch's FlopCounterMode does not count (oneDNN's recurrent layer).
    rnn_flops: float = 0.0
    #: family -> [operators, raw bytes moved in all]: the profile's ``op_groups``;
    #: products and convolutions by count (0 bytes).
    groups: dict[str, list[float]] = field(default_factory=dict)

    def scaled(self, factor: float) -> Count:
        """The count with its FLOPs and bytes times ``factor`` (a larger batch's, where a
        real run counted a small one): operators as many."""
        out = Count(kernels=self.kernels)
        for name in ("total_flops", "conv_flops", "other_flops", "memory_bytes",
                     "saved_bytes", "rnn_flops"):  # fmt: skip
            setattr(out, name, getattr(self, name) * factor)
        out.gemm = {k: v * factor for k, v in self.gemm.items()}
        out.conv = {k: v * factor for k, v in self.conv.items()}
        out.groups = {k: [n, moved * factor] for k, (n, moved) in self.groups.items()}
        return out

    def add_group(self, family: str, nbytes: float) -> None:
        """Record one operator of ``family`` moving ``nbytes`` (raw, not cost-weighted)."""
        entry = self.groups.setdefault(family, [0.0, 0.0])
        entry[0] += 1
        entry[1] += nbytes


def _blas_copies(name: str, args: Any) -> list[int]:
    """Bytes of the contiguous copies a CPU matrix product makes of its broadcast operands.

    BLAS takes a matrix with one unit stride; PyTorch's CPU ``mm`` and ``addmm`` copy an
    operand with a zero stride (an expanded tensor, such as the gradient of a sum) into
    a fresh contiguous one first (``addmm_impl_cpu_``), at every call; ``bmm`` does not.
    """
    if name not in ("mm", "addmm"):
        return []
    ts = tensors_of(args)
    operands = ts[1:3] if name == "addmm" else ts[:2]
    return [
        t.numel() * t.element_size()
        for t in operands
        if any(st == 0 and d > 1 for st, d in zip(t.stride(), t.shape, strict=False))
    ]


def effective_size(m: float, n: float, k: float) -> int:
    """Effective size of an (m x k) @ (k x n) product: the harmonic mean of m, n and k.

    A skinny product runs at the speed its smallest side allows, so the harmonic mean
    (dominated by the smallest side) predicts its rate better than the cube root.
    """
    dims = [max(float(d), 1.0) for d in (m, n, k)]
    return max(1, round(3.0 / sum(1.0 / d for d in dims)))


def _product_dims(name: str, args: Any, out: Any) -> tuple[float, float, float] | None:
    """M, N, K of a product or of a convolution's implicit product."""
    ts = tensors_of(args)
    outs = tensors_of(out)
    try:
        if name in ("mm", "addmm", "bmm", "baddbmm"):
            a, b = (ts[1], ts[2]) if name in ("addmm", "baddbmm") else (ts[0], ts[1])
            return float(a.shape[-2]), float(b.shape[-1]), float(a.shape[-1])
        if name in _CONV_OPS and len(ts) >= 2 and outs:
            w, o = ts[1], outs[0]
            m = o.shape[0] * math.prod(o.shape[2:])
            return float(m), float(w.shape[0]), float(math.prod(w.shape[1:]))
        if "attention" in name and len(ts) >= 2:
            q, k = ts[0], ts[1]
            return float(q.shape[-2]), float(k.shape[-2]), float(q.shape[-1])
    except (IndexError, AttributeError):
        return None
    return None


def _add_rnn_layer(count: Count, name: str, args: Any) -> None:
    """Record one oneDNN recurrent layer as the products and passes its kernel makes.

    ``mkldnn_rnn_layer(input [T, B, I], w_ih [G*H, I], w_hh [G*H, H], ...)`` runs one
    direction of one layer (PyTorch ``aten/src/ATen/native/mkldnn/RNN.cpp``). oneDNN's RNN
    primitive multiplies the whole sequence's input by ``w_ih`` in one product and each
    step's hidden state by ``w_hh`` in a product of B rows; an element-wise kernel per
    step reads the G gates and the cell state and writes the hidden and cell states, and
    in training the gates it keeps for the backward (oneDNN developer guide, "RNN":
    the cell functions and the workspace). The weights are reordered into oneDNN's
    layout at every call. The backward is priced as a training step's backward always is
    (two forwards' products at the same sizes); here only its element-wise passes are
    counted: per step it reads the kept gates, the cell states and the states' gradients
    and writes the gates' and the cell state's gradients.
    """
    x, w_ih, w_hh = args[0], args[1], args[2]
    count.add_group(RNN_LAYER, 0.0)  # the layer's call itself, apart from its operators
    steps, batch, width = (int(d) for d in x.shape)
    gates, hidden = int(w_ih.shape[0]), int(w_hh.shape[1])
    item = x.element_size()
    weights = float(w_ih.numel() + w_hh.numel()) * w_ih.element_size()
    count.add_group("eltwise", 2.0 * weights)
    count.memory_bytes += 2.0 * weights
    if name == "mkldnn_rnn_layer":
        train = bool(args[15]) if len(args) > 15 else True
        products = [((steps * batch, gates, width), 1), ((batch, gates, hidden), steps)]
        for (m, n, k), times in products:
            flops = 2.0 * m * n * k * times
            count.rnn_flops += flops
            count.total_flops += flops
            # Each time step's product is its own call of batch rows, priced at its
            # effective size as every product is.
            size = effective_size(m, n, k)
            count.gemm[size] = count.gemm.get(size, 0.0) + flops
            for _ in range(times):
                count.add_group("gemm", 0.0)
        per_step = batch * (gates + hidden + 2 * hidden + (gates if train else 0)) * item
    else:
        per_step = batch * (2 * gates + 5 * hidden) * item
    for _ in range(steps):
        count.add_group("eltwise", float(per_step))
    count.memory_bytes += float(per_step) * steps


def _make_mode(count: Count) -> Any:
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils.flop_counter import flop_registry

    class _Sorter(TorchDispatchMode):
        """Sorts operators into products, convolutions and memory-bound work."""

        def __torch_dispatch__(
            self, func: Any, types: Any, args: Any = (), kwargs: Any = None
        ) -> Any:
            kwargs = kwargs or {}
            out = func(*args, **kwargs)
            name = func.overloadpacket.__name__
            if name in _FREE_OPS or getattr(func, "is_view", False):
                return out
            count.kernels += 1
            if name in _RNN_LAYERS:
                _add_rnn_layer(count, name, args)
                return out
            counter = flop_registry.get(func.overloadpacket)
            ts = tensors_of((args, kwargs, out))
            moved = float(sum(t.numel() * t.element_size() for t in ts))
            if counter is not None:
                flops = float(counter(*args, **kwargs, out_val=out))
                count.total_flops += flops
                dims = _product_dims(name, args, out)
                size = effective_size(*dims) if dims else 256
                if name in _CONV_OPS:  # its tensors' bytes: a GPU's layout transposes move them
                    count.conv_flops += flops
                    count.conv[size] = count.conv.get(size, 0.0) + flops
                    count.add_group("conv", moved)
                elif name in _GEMM_OPS:
                    count.gemm[size] = count.gemm.get(size, 0.0) + flops
                    count.add_group("gemm", 0.0)
                    for nbytes in _blas_copies(name, args):
                        count.add_group("eltwise", 2.0 * nbytes)
                        count.memory_bytes += 2.0 * nbytes
                else:
                    count.other_flops += flops
                    count.add_group("other", 0.0)
                return out
            family, cost = MEMORY_OPS.get(name, _STREAMING)
            count.memory_bytes += moved * cost
            count.add_group(family, moved)
            return out

    return _Sorter()


def _sampler(device: str) -> Callable[[list[int], int, bool], Any]:
    """An input maker on ``device``: (one sample's shape, batch, token ids?) -> a batch."""
    import torch

    def sample(shape: list[int], batch: int, tokens: bool) -> Any:
        dtype = torch.long if tokens else torch.float32
        return torch.zeros([batch, *shape], dtype=dtype, device=device)

    return sample


def has_recurrent(model: Any) -> bool:
    """Whether the model has recurrent layers (``nn.LSTM``, ``nn.GRU``, ``nn.RNN``)."""
    import torch

    return any(isinstance(mod, torch.nn.RNNBase) for mod in model.modules())


@contextmanager
def _dispatch_like_cpu(model: Any) -> Iterator[tuple[Any, Callable[..., Any]]]:
    """The model and an input maker for the timed count.

    Recurrent layers dispatch by device: on a CPU an LSTM layer runs as one oneDNN
    primitive and a GRU's cells get the whole sequence's input product at once
    (``aten/src/ATen/native/RNN.cpp``, ``FullLayer`` with ``pre_compute_input`` on a CPU),
    while on the meta device every step multiplies its own input. So a model with them
    is counted on fake CPU tensors, which follow the CPU's dispatch (a copy of the model:
    the meta one keeps counting the activations). Other models are counted on the meta
    device as they are.
    """
    if not has_recurrent(model):
        yield model, _sampler("meta")
        return
    from torch._subclasses.fake_tensor import FakeTensorMode

    mode = FakeTensorMode()
    timed = fake_model(copy.deepcopy(model), mode)
    with mode:
        yield timed, _sampler("cpu")


@dataclass
class Counted:
    """A counted model: sizes per sample at the counted batch."""

    params: int
    #: Parameter tensors an optimizer updates (those that require grad).
    param_tensors: int
    forward: Count
    backward: Count
    activation_bytes_per_sample: float
    tokens_input: bool
    batch: int
    #: "meta": counted on the meta device; "real": by a real run on the CPU, scaled.
    method: str


def _counted(
    model: Any, passes: tuple[Count, Count], per_sample: float, batch: int, method: str
) -> Counted:
    return Counted(
        params=sum(p.numel() for p in model.parameters()),
        param_tensors=sum(1 for p in model.parameters() if p.requires_grad),
        forward=passes[0],
        backward=passes[1],
        activation_bytes_per_sample=per_sample,
        tokens_input=takes_tokens(model),
        batch=batch,
        method=method,
    )


def build_on_meta(fn: Callable[[], Any], spec: str) -> Any:
    """Call the user's factory with the meta device as default; it must return a Module."""
    import torch

    try:
        with torch.device("meta"):
            model = fn()
    except Exception as exc:
        raise UsageError(f"model '{spec}': building it raised {type(exc).__name__}: {exc}") from exc
    if not isinstance(model, torch.nn.Module):
        raise UsageError(
            f"model '{spec}': the callable returned {type(model).__name__}, not a torch.nn.Module"
        )
    return model.to("meta")


def _run(model: Any, x: Any, count: Count, back: Count | None = None) -> None:
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    saved: list[float] = []

    def pack(t: Any) -> Any:
        saved.append(float(t.numel() * t.element_size()))
        return t

    with (
        FlopCounterMode(display=False) as fcm,
        torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t),
    ):
        with _make_mode(count):
            out = model(x)
        if back is not None:
            floats = [t for t in tensors_of(out) if t.is_floating_point() and t.requires_grad]
            if floats:
                loss = sum(t.sum() for t in floats)
                with _make_mode(back):
                    loss.backward()
    # FlopCounterMode is the reference count; ours must agree on the products it knows.
    if back is None:
        count.total_flops = float(fcm.get_total_flops()) + count.rnn_flops
    count.saved_bytes = sum(saved)


def _saved_per_sample(
    model: Any, sample: Callable[..., Any], shape: list[int], tokens: bool
) -> float:
    """Bytes ``model`` saves for backward per sample (batch 2 less batch 1)."""
    one, two = Count(), Count()
    _run(model, sample(shape, 1, tokens), one)
    _run(model, sample(shape, 2, tokens), two)
    return max(0.0, two.saved_bytes - one.saved_bytes)


def _passes(model: Any, x: Callable[[], Any]) -> tuple[Count, Count]:
    """The forward count, and the backward's on its own (its memory-bound mix differs: no
    dropout masks, cheap pooling), each on a fresh input from ``x``."""
    fwd, bwd = Count(), Count()
    _run(model, x(), fwd)
    _run(model, x(), Count(), bwd)
    return fwd, bwd


def count_model(
    model: Any, input_shape: list[int], batch: int, spec: str, *, train: bool = True
) -> Counted:
    """Parameters, the forward (and backward) count at ``batch`` and activation bytes per sample.

    ``train`` counts in training mode (dropout active, batch norm on batch statistics);
    inference counts in eval mode. A model the meta device cannot run (it reads its
    tensors' values) is counted by a real run on the CPU at batch 2, scaled
    (:func:`count_real`, in the contained child that counts it, ``method`` says so); one that fails
    there too is one UsageError line with its own error.
    """
    tokens = takes_tokens(model)
    try:
        model.train(train)
        per_sample = _saved_per_sample(model, _sampler("meta"), input_shape, tokens)
        with _dispatch_like_cpu(model) as (timed, sample):
            timed.train(train)
            fwd, bwd = _passes(timed, lambda: sample(input_shape, batch, tokens))
    except UsageError:
        raise
    except Exception as exc:
        from hwadvisor.estimate.workload.realrun import (
            RealRunFailed,
            failed_both,
            one_line,
            run_real,
        )

        shape = ",".join(str(d) for d in input_shape)
        what = f"a forward pass with input shape {shape} (one sample, batch first added)"
        if not looks_like_user_model(spec):
            raise UsageError(f"model '{spec}': {what} failed: {one_line(exc)}") from exc
        try:
            counted: Counted = run_real(
                "operators", spec, input_shape=input_shape, batch=batch, train=train
            )
        except RealRunFailed as failed:
            raise failed_both(spec, what, "on the meta device", one_line(exc), failed) from exc
        return counted
    return _counted(model, (fwd, bwd), per_sample, batch, "meta")


#: The batch a real run counts operators at (then scaled to the job's, linearly).
REAL_BATCH = 2


def count_real(model: Any, input_shape: list[int], batch: int, *, train: bool) -> Counted:
    """:func:`count_model` by a real run on the CPU: ``model`` is a real CPU module,
    counted at batches 1 and :data:`REAL_BATCH`, the counts scaled to ``batch`` along the
    line through the two FLOP totals."""
    tokens = takes_tokens(model)
    sample = _sampler("cpu")
    model.train(train)
    small = min(batch, REAL_BATCH)
    per_sample = _saved_per_sample(model, sample, input_shape, tokens)
    fwd, bwd = _passes(model, lambda: sample(input_shape, small, tokens))
    if batch > small:
        one = Count()
        _run(model, sample(input_shape, 1, tokens), one)
        per = fwd.total_flops - one.total_flops
        factor = (one.total_flops + per * (batch - 1)) / max(fwd.total_flops, 1.0)
        fwd, bwd = fwd.scaled(factor), bwd.scaled(factor)
    return _counted(model, (fwd, bwd), per_sample, batch, "real")


def count_real_spec(spec: str, *, input_shape: list[int], batch: int, train: bool) -> Counted:
    """:func:`count_real` of the model ``spec`` names (a real run calls this)."""
    return count_real(load_callable(spec)(), input_shape, batch, train=train)
