"""The buffers a CPU kernel allocates inside one call, which no fake tensor shows.

A fake-tensor run sees what each operator returns, not what its kernel allocates while
it runs. On a CPU, PyTorch's convolutions and its fused transformer layer run through
oneDNN (via ideep): oneDNN computes in its own blocked layouts (``nChw8c`` /
``nChw16c``), so a convolution on a plain NCHW tensor first reorders its input and
weights into those layouts, computes into a blocked destination and reorders that into
the NCHW tensor it returns (oneDNN developer guide, "Memory Format Propagation" and
"Reorder"; PyTorch ``aten/src/ATen/native/mkldnn/Conv.cpp``). Those buffers are freed
before the call returns, but under glibc's malloc they shape the heap and so the
resident memory of the job (:mod:`hwadvisor.estimate.workload.cpu_alloc`).

:func:`kernel_script` gives, for one operator call, the buffers in the order the kernel
allocates and frees them around the outputs the fake run records. The sequences are the
ones an allocation trace of real runs showed on this project's development machine
(torch 2.13.0+cpu, oneDNN through ideep; every ``malloc``/``free``/``posix_memalign``
between dispatcher calls, recorded by an ``LD_PRELOAD`` shim), for each kind of call:

- ``convolution`` (NCHW, float, where PyTorch sends it to oneDNN: see
  :func:`_uses_onednn`; its own kernel makes no such copies): a copy of the input (skipped below 8 input channels,
  where oneDNN's first-layer kernels read NCHW directly) and of the weights, the
  blocked destination; the input and weight copies are freed, the output made, then
  the destination freed;
- ``convolution_backward``: for the input's gradient, a copy of the output's gradient
  and of the weights and a blocked gradient; for the weights' gradient, a second copy of
  the output's gradient, a copy of the input and a blocked weight gradient; forward and
  backward, oneDNN's small descriptor blocks around them (:data:`MEMORY_DESC`), in the
  order a steady call (its primitive cached) showed;
- ``native_batch_norm_backward``: one buffer the size of the input;
- ``_transformer_encoder_layer_fwd`` (the encoder's inference fast path): the
  projected input, the packed and the split q/k/v (three times the input each), the
  attention scores (batch x heads x length x length), the attention output and its
  projection, the feed-forward hidden layer;
- ``mm`` / ``addmm``: a contiguous copy of an operand BLAS cannot read as it is (the
  gradient of a summed output arrives expanded, every stride 0; a transposed slice);
- ``mkldnn_rnn_layer`` and its backward (an LSTM layer): the weights reordered and, in
  training, a buffer of every step's gates (steps x batch x 4 x hidden) each way, with the
  hidden states' gradient in the backward. In inference the kernel allocates the gates
  buffer too but writes little of it, so it costs no resident memory and is left out.

Sizes follow from the call's own tensors, so they scale with the model and the batch;
only the order comes from the trace. Channels-last inputs need no reorder and get none.

One output is also misreported by the fake kernels: ``mkldnn_rnn_layer`` (an LSTM layer
on a CPU) returns an empty workspace on fake tensors, while in training the real kernel
returns oneDNN's forward-training workspace (the gates and states of every step, kept
for the backward pass: 251 MB for a 512-unit layer over 128 steps at batch 64). The
forward pass writes about a third of it and its backward, which takes the workspace as
its last argument, writes a quarter more as scratch (32.8% and 59.6% of a 512-unit
layer's pages, read with ``mincore(2)`` after each; a fresh mapping of 64 MB per layer
and step at batch 16 under ``strace``). Resident memory holds only the pages written, so
:func:`output_sizes` gives the workspace's real size, the part its forward writes and
the part written once its backward has run: it runs the real kernel on zero tensors of
the layer's own width (8 samples over 8 and 16 steps) to find the size, linear in steps
and batch, then once forward and backward at a size above glibc's largest mmap threshold
(a fresh mapping, untouched until written) and counts the pages written after each. The
layer's own scratch (its weights reordered; in training a gates-sized buffer each way)
is in :func:`kernel_script`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from hwadvisor.estimate.timing.convpath import native_path

#: One step of a call's script: ("+", slot, bytes) allocates an aligned buffer, ("s",
#: slot, bytes) a plain malloc, ("-", slot, 0) frees either, and ("out", i, 0) is where
#: the call's i-th output is made (outputs a script does not place are made after its
#: last step).
Step = tuple[str, int, int]
OUT: Step = ("out", 0, 0)

#: Below this many input channels oneDNN reads a plain NCHW source (no input copy).
FIRST_LAYER_CHANNELS = 8
#: The small blocks a traced oneDNN call makes around its buffers (torch 2.13.0+cpu,
#: oneDNN 3.12): 2144-byte blocks through ``posix_memalign(64)``, several per memory
#: object it wraps (by their size and alignment, oneDNN's memory descriptors: its
#: ``c_compatible`` objects are allocated 64-aligned), and in a backward call a
#: 2216-byte aligned block and a 6560-byte plain ``malloc`` of its primitive. They
#: are few and small, but they take the head of the freed chunk they land in, so a
#: buffer of the freed one's size no longer fits there.
MEMORY_DESC = 2144
PRIMITIVE_BLOCK = 2216
PD_MALLOC = 6560
_BLOCK_SLOT = 1000


def _bytes(t: Any) -> int:
    return int(t.numel()) * int(t.element_size())


def _plain_nchw(t: Any) -> bool:
    import torch

    if t.dim() != 4 or t.dtype not in (torch.float32, torch.bfloat16):
        return False
    return bool(t.is_contiguous()) and not (
        t.shape[1] > 1 and t.is_contiguous(memory_format=torch.channels_last)
    )


def _uses_onednn(x: Any, w: Any, stride: Any, dilation: Any, groups: Any, transposed: Any) -> bool:
    """Whether PyTorch sends this convolution to oneDNN (its rule: :mod:`.convpath`;
    bf16 always goes to oneDNN), with the thread count the count runs with."""
    import torch

    if x.dtype != torch.float32:
        return True
    return not native_path(
        kernel=tuple(int(k) for k in w.shape[2:]),
        stride=stride,
        dilation=dilation,
        groups=int(groups),
        batch=int(x.shape[0]),
        input_elements=int(x.numel()) // max(1, int(x.shape[0])),
        threads=torch.get_num_threads(),
        transposed=bool(transposed),
    )


def _traced(script: str, big: dict[str, int]) -> list[Step]:
    """A call's script from its trace: ``dN`` makes oneDNN's N-th descriptor block,
    ``pN`` a primitive's block, ``mN`` a plain malloc of the primitive's (each freed by
    ``-dN``, ``-pN``, ``-mN``); a name in ``big`` makes that buffer of the call
    (``-name`` frees it) and ``outI`` is where the call's I-th output is made."""
    slots = {name: i for i, name in enumerate(big, 1)}
    steps: list[Step] = []
    for tok in script.split():
        free, name = tok.startswith("-"), tok.lstrip("-")
        if name.startswith("out"):
            steps.append(("out", int(name[3:]), 0))
            continue
        if name in big:
            slot, n, op = slots[name], big[name], "+"
        else:
            slot = _BLOCK_SLOT + 100 * "dpm".index(name[0]) + int(name[1:])
            n, op = {"d": (MEMORY_DESC, "+"), "p": (PRIMITIVE_BLOCK, "+"), "m": (PD_MALLOC, "s")}[
                name[0]
            ]
        steps.append(("-", slot, 0) if free else (op, slot, n))
    return steps


#: A steady oneDNN convolution (its primitive cached), as traced: the descriptors, the
#: input copy (``x``, not below 8 channels), the weights' (``w``) and the destination.
_CONV_FWD = (
    "d0 d1 d2 d3 d4 d5 -d1 d6 -d6 d7 d8 d9 {x} -d9 d12 w d14 -d14 -d12 dst "
    "-w {free_x} -d8 -d7 -d4 -d3 -d2 -d5 out0 d17 d18 -d18 -d17 -dst -d0"
)
#: Its backward, the input's gradient then the weights': copies of the output's
#: gradient (``gy``) and of the weights or the input (``b``), a blocked gradient.
_CONV_BWD_INPUT = (
    "d0 d1 d2 d3 -d3 -d2 p4 m5 d6 gy d8 -d8 -d6 d9 b d11 -d11 -d9 dst "
    "-b -gy -m5 -p4 -d1 out0 d14 d15 -d15 -d14 -dst -d0"
)
_CONV_BWD_WEIGHT = (
    "d16 d17 d18 -d18 p19 m20 d21 gy2 d23 -d23 -d21 d24 b2 d26 -d26 -d24 dst2 "
    "-b2 -gy2 -m20 -p19 -d17 out1 d29 d30 -d30 -d29 -dst2 -d16"
)


def _conv(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    x, w = args[0], args[1]
    if not outs or not _plain_nchw(x) or not _uses_onednn(x, w, args[3], args[5], args[8], args[6]):
        return []
    copy = x.shape[1] >= FIRST_LAYER_CHANNELS
    big = {"x": _bytes(x), "w": _bytes(w), "dst": _bytes(outs[0])}
    script = _CONV_FWD.format(x="x d11 -d11" if copy else "", free_x="-x" if copy else "")
    return _traced(script, big)


def _conv_backward(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    gy, x, w = args[0], args[1], args[2]
    mask = args[10] if len(args) > 10 else (True, True, True)
    if not _plain_nchw(x) or not _uses_onednn(x, w, args[4], args[6], args[9], args[7]):
        return []
    script = (_CONV_BWD_INPUT if mask[0] else "") + " " + (_CONV_BWD_WEIGHT if mask[1] else "")
    big = {"gy": _bytes(gy), "b": _bytes(w), "dst": _bytes(x)}
    big |= {"gy2": _bytes(gy), "b2": _bytes(x), "dst2": _bytes(w)}
    return _traced(script, big)


def _batch_norm_backward(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    return [("+", 1, _bytes(args[1])), OUT, ("-", 1, 0)]


def _encoder_layer(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    src, heads = args[0], int(args[2])
    if src.dim() != 3:
        return []
    d = _bytes(src)
    batch, length = int(src.shape[0]), int(src.shape[1])
    scores = batch * heads * length * length * int(src.element_size())
    hidden = d * int(args[14].shape[0]) // max(1, int(src.shape[2]))
    return [
        ("+", 1, d),
        ("+", 2, 3 * d),
        ("+", 3, 3 * d),
        ("-", 2, 0),
        ("+", 4, scores),
        ("-", 4, 0),
        ("+", 5, d),
        ("+", 6, d),
        ("-", 5, 0),
        ("-", 3, 0),
        ("-", 1, 0),
        ("+", 7, d),
        ("+", 8, hidden),
        OUT,
        ("-", 8, 0),
        ("-", 7, 0),
        ("-", 6, 0),
    ]


def _rnn_layer(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    x, w_ih, w_hh = args[0], args[1], args[2]
    made = [("+", 1, _bytes(w_ih)), ("+", 3, _bytes(w_hh))]
    if len(args) > 15 and args[15]:
        # in training the gates scratch (every step's gates) is written whole; in
        # inference most of it is never written, so it holds no resident pages (a
        # 128-step, batch-64 call peaked at 39 MB resident for its 16 MB of outputs,
        # 6 MB of reordered weights and a 64 MB scratch)
        gates = int(x.shape[0]) * int(x.shape[1]) * int(w_ih.shape[0]) * int(x.element_size())
        made.insert(1, ("+", 2, gates))
    return [*made, OUT, *_freed(made)]


def _rnn_layer_backward(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    x, w_ih, w_hh = args[0], args[1], args[2]
    steps_batch = int(x.shape[0]) * int(x.shape[1])
    gates = steps_batch * int(w_ih.shape[0]) * int(x.element_size())
    hidden = steps_batch * int(w_hh.shape[1]) * int(x.element_size())
    made = [
        ("+", 1, gates),
        ("+", 2, _bytes(w_hh)),
        ("+", 3, _bytes(w_hh)),
        ("+", 4, _bytes(w_ih)),
        ("+", 5, hidden),
    ]
    return [*made, OUT, *_freed(made)]


def _freed(made: list[Step]) -> list[Step]:
    return [("-", slot, 0) for _, slot, _ in reversed(made)]


def _blas_ready(m: Any) -> bool:
    """Whether BLAS can read the matrix ``m`` as it is, in either order (PyTorch's CPU
    ``addmm`` copies any other operand into a contiguous buffer first,
    ``aten/src/ATen/native/LinearAlgebra.cpp``)."""
    rows, cols = int(m.shape[0]), int(m.shape[1])
    s0, s1 = int(m.stride(0)), int(m.stride(1))
    return (s0 == 1 and s1 >= max(1, rows)) or (s1 == 1 and s0 >= max(1, cols))


def _product(operands: Sequence[Any]) -> list[Step]:
    made: list[Step] = [
        ("+", slot, int(m.numel()) * int(m.element_size()))
        for slot, m in enumerate(operands, 1)
        if _is_tensor(m) and m.dim() == 2 and m.numel() > 1 and not _blas_ready(m)
    ]
    return [*made, OUT, *_freed(made)] if made else []


def _mm(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    return _product(args[:2])


def _addmm(args: Sequence[Any], outs: Sequence[Any]) -> list[Step]:
    return _product(args[1:3])


_SCRIPTS = {
    "aten.convolution.default": _conv,
    "aten.convolution_backward.default": _conv_backward,
    "aten.native_batch_norm_backward.default": _batch_norm_backward,
    "aten._transformer_encoder_layer_fwd.default": _encoder_layer,
    "aten.mkldnn_rnn_layer.default": _rnn_layer,
    "aten.mkldnn_rnn_layer_backward.default": _rnn_layer_backward,
    "aten.mm.default": _mm,
    "aten.addmm.default": _addmm,
}


def kernel_script(func: Any, args: Sequence[Any], out: Any) -> list[Step]:
    """The buffers the CPU kernel of ``func`` allocates around its outputs, in order.

    An empty list for an operator whose kernel makes no buffer of note (or one this
    model does not know)."""
    make = _SCRIPTS.get(str(func))
    if make is None:
        return []
    outs = [t for t in (out if isinstance(out, (tuple, list)) else [out]) if _is_tensor(t)]
    try:
        return make(args, outs)
    except (AttributeError, IndexError, TypeError, ValueError):
        return []


def in_place_bias(func: Any, args: Sequence[Any], fresh: set[int]) -> bool:
    """Whether ``func`` is the bias add of ``F.linear`` that real tensors do in place.

    On an input it cannot flatten (not contiguous, as a batch-first RNN's output is),
    ``torch.nn.functional.linear`` multiplies, then adds the bias with ``add_`` into the
    product, except for tensor subclasses, which get an out-of-place ``add`` ("for
    composite compliance", ``aten/src/ATen/native/Linear.cpp``): a fake run then holds a
    second product-sized tensor the real one never makes. The add is known by its
    operands: a product made by the last operator that made a storage (views of it
    between), and a one-dimensional bias parameter along its last dimension."""
    if str(func) != "aten.add.Tensor" or len(args) != 2:
        return False
    import torch

    x, b = args
    if not (_is_tensor(x) and isinstance(b, torch.nn.Parameter)) or b.dim() != 1 or x.dim() < 2:
        return False
    return int(b.shape[0]) == int(x.shape[-1]) and x.untyped_storage()._cdata in fresh


_RNN = "aten.mkldnn_rnn_layer.default"
_WORKSPACE = 3
_PROBE_BATCH, _PROBE_STEPS = 8, (8, 16)
#: A probe workspace this large is a fresh mapping whatever glibc's threshold has risen to.
_FRESH_BYTES = 40 << 20
_workspace_rates: dict[tuple[Any, ...], tuple[float, float, float, float]] = {}


@dataclass(frozen=True)
class Partial:
    """An output whose fake kernel reports too few bytes: its real ``size``, the bytes
    its own call writes, and the bytes written once the call that reads it next (its
    backward) has run. Pages never written hold no memory."""

    size: int
    written: int
    read_written: int


def output_sizes(func: Any, args: Sequence[Any], out: Any) -> dict[int, Partial]:
    """The outputs of ``func`` whose fake kernel reports too few bytes, by output index
    (empty for every operator but a training LSTM layer)."""
    if str(func) != _RNN or len(args) < 16 or not args[15]:
        return {}
    try:
        ws = out[_WORKSPACE]
        if _bytes(ws) > 0:
            return {}
        # the layer is called time-major whatever the module's batch_first
        steps, batch = int(args[0].shape[0]), int(args[0].shape[1])
        per_step, per_sample, written, read_written = _workspace_rate(args)
    except (AttributeError, ImportError, IndexError, TypeError, RuntimeError, ValueError, OSError):
        return {}
    size = round(batch * (per_step * steps + per_sample))
    return {_WORKSPACE: Partial(size, round(size * written), round(size * read_written))}


def _probe(args: Sequence[Any], steps: int, batch: int, *, backward: bool = False) -> Any:
    """The real layer's workspace on zero tensors of ``steps`` x ``batch`` (after its
    backward has run too, where ``backward``)."""
    import torch

    real = [torch.zeros(steps, batch, *args[0].shape[2:], dtype=args[0].dtype)]
    real += [torch.zeros(tuple(w.shape), dtype=w.dtype) for w in args[1:5]]
    real += [torch.zeros(batch, *h.shape[-1:], dtype=h.dtype) for h in args[5:7]]
    out = torch.ops.aten.mkldnn_rnn_layer.default(*real, args[7], [], *args[9:15], True)
    if backward:
        reverse, mode, hidden, layers, biases, bidirectional, first = (
            args[7], *args[9:14], args[14],
        )  # fmt: skip
        torch.ops.aten.mkldnn_rnn_layer_backward.default(
            *real, out[0], out[1], out[2], torch.zeros_like(out[0]), None, None,
            reverse, mode, hidden, layers, biases, True, bidirectional, [], first, out[3],
        )  # fmt: skip
    return out[_WORKSPACE]


def _written(t: Any) -> float:
    """The share of ``t``'s pages that are resident (written), by ``mincore(2)``."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p]
    page = 4096
    start = t.data_ptr() & ~(page - 1)
    end = (t.data_ptr() + _bytes(t) + page - 1) & ~(page - 1)
    vec = ctypes.create_string_buffer((end - start) // page)
    if libc.mincore(start, end - start, vec) != 0:
        raise OSError(ctypes.get_errno(), "mincore")
    return sum(b & 1 for b in vec.raw) / len(vec.raw)


def _workspace_rate(args: Sequence[Any]) -> tuple[float, float, float, float]:
    """Workspace bytes per sample per step and per sample of the layer in ``args``, and
    the shares of them written by its forward pass and after its backward."""
    from torch.utils._python_dispatch import _disable_current_modes

    flags = tuple(tuple(a) if isinstance(a, list) else a for a in args[7:15])
    key = (
        str(args[0].dtype),
        tuple(args[0].shape[2:]),
        *(tuple(w.shape) for w in args[1:5]),
        *flags,
    )
    if key not in _workspace_rates:
        from torch._subclasses.fake_tensor import unset_fake_temporarily

        # grad mode stays on: under no_grad the kernel makes no workspace
        with _disable_current_modes(), unset_fake_temporarily():
            lo, hi = _PROBE_STEPS
            sizes = [_bytes(_probe(args, n, _PROBE_BATCH)) / _PROBE_BATCH for n in (lo, hi)]
            rate = (sizes[1] - sizes[0]) / (hi - lo)
            steps = max(hi, int(_FRESH_BYTES / (_PROBE_BATCH * max(rate, 1.0))) + 1)
            written = _written(_probe(args, steps, _PROBE_BATCH))
            read_written = _written(_probe(args, steps, _PROBE_BATCH, backward=True))
        _workspace_rates[key] = (rate, sizes[0] - rate * lo, written, max(written, read_written))
    return _workspace_rates[key]


def _is_tensor(t: Any) -> bool:
    import torch

    return isinstance(t, torch.Tensor)
