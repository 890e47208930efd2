"""Counting a user's model on the meta device: parameters, FLOPs per operator, activations.

The model is built under ``torch.device("meta")`` (no memory, no weights initialised) and
one forward pass is run inside ``torch.utils.flop_counter.FlopCounterMode`` and a small
dispatch mode of our own that sorts each aten operator into matrix products (with their
size), convolutions, and memory-bound operators (with the bytes they read and write).
Saved-for-backward bytes at batch 1 and 2 give the activation bytes per sample.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.errors import UsageError

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
}


@dataclass
class Count:
    """What one pass counted: FLOPs by class, gemm FLOPs by size, bytes, operator launches."""

    total_flops: float = 0.0
    gemm: dict[int, float] = field(default_factory=dict)
    conv: dict[int, float] = field(default_factory=dict)
    conv_flops: float = 0.0
    other_flops: float = 0.0
    memory_bytes: float = 0.0
    kernels: int = 0
    saved_bytes: float = 0.0


def _tensors(obj: Any) -> list[Any]:
    import torch
    from torch.utils._pytree import tree_flatten

    return [t for t in tree_flatten(obj)[0] if isinstance(t, torch.Tensor)]


def effective_size(m: float, n: float, k: float) -> int:
    """Effective size of an (m x k) @ (k x n) product: the harmonic mean of m, n and k.

    A skinny product runs at the speed its smallest side allows, so the harmonic mean
    (dominated by the smallest side) predicts its rate better than the cube root.
    """
    dims = [max(float(d), 1.0) for d in (m, n, k)]
    return max(1, round(3.0 / sum(1.0 / d for d in dims)))


def _product_dims(name: str, args: Any, out: Any) -> tuple[float, float, float] | None:
    """M, N, K of a product or of a convolution's implicit product."""
    ts = _tensors(args)
    outs = _tensors(out)
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
            counter = flop_registry.get(func.overloadpacket)
            if counter is not None:
                flops = float(counter(*args, **kwargs, out_val=out))
                count.total_flops += flops
                dims = _product_dims(name, args, out)
                size = effective_size(*dims) if dims else 256
                if name in _CONV_OPS:
                    count.conv_flops += flops
                    count.conv[size] = count.conv.get(size, 0.0) + flops
                elif name in _GEMM_OPS:
                    count.gemm[size] = count.gemm.get(size, 0.0) + flops
                else:
                    count.other_flops += flops
                return out
            moved = sum(t.numel() * t.element_size() for t in _tensors((args, kwargs, out)))
            count.memory_bytes += moved
            return out

    return _Sorter()


def _sample_input(shape: list[int], batch: int, tokens: bool) -> Any:
    import torch

    size = [batch, *shape]
    if tokens:
        return torch.zeros(size, dtype=torch.long, device="meta")
    return torch.empty(size, dtype=torch.float32, device="meta")


def _first_leaf_is_embedding(model: Any) -> bool:
    import torch

    for mod in model.modules():
        if len(list(mod.children())) == 0 and any(True for _ in mod.parameters(recurse=False)):
            return isinstance(mod, torch.nn.Embedding)
    return False


@dataclass
class Counted:
    """A counted model: sizes per sample at the counted batch."""

    params: int
    forward: Count
    activation_bytes_per_sample: float
    tokens_input: bool
    batch: int


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


def _run(model: Any, x: Any, count: Count, *, backward: bool) -> None:
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
        if backward:
            floats = [t for t in _tensors(out) if t.is_floating_point() and t.requires_grad]
            if floats:
                sum(t.sum() for t in floats).backward()
    # FlopCounterMode is the reference count; ours must agree on the products it knows.
    count.total_flops = float(fcm.get_total_flops()) if not backward else count.total_flops
    count.saved_bytes = sum(saved)


def count_model(model: Any, input_shape: list[int], batch: int, spec: str) -> Counted:
    """Parameters, the forward count at ``batch`` and activation bytes per sample."""
    tokens = _first_leaf_is_embedding(model)
    params = sum(p.numel() for p in model.parameters())
    fwd = Count()
    try:
        model.train()
        _run(model, _sample_input(input_shape, batch, tokens), fwd, backward=False)
        one, two = Count(), Count()
        _run(model, _sample_input(input_shape, 1, tokens), one, backward=False)
        _run(model, _sample_input(input_shape, 2, tokens), two, backward=False)
    except UsageError:
        raise
    except Exception as exc:
        shape = ",".join(str(d) for d in input_shape)
        raise UsageError(
            f"model '{spec}': a forward pass with input shape {shape} (one sample, batch first added) "
            f"failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from exc
    per_sample = max(0.0, two.saved_bytes - one.saved_bytes)
    return Counted(
        params=params,
        forward=fwd,
        activation_bytes_per_sample=per_sample,
        tokens_input=tokens,
        batch=batch,
    )
