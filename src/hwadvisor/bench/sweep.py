"""The memory sweep: memory-bound operator families at cache-resident and DRAM working sets.

As the Empirical Roofline Toolkit measures bandwidth per memory level (L1, L2, L3, DRAM)
by sweeping the working-set size, this sweep runs the operators that dominate the
memory-bound part of a training step (element-wise, batch norm and its backward, max
pooling and its backward, dropout's Bernoulli mask, layer norm, softmax, GELU, and the
masked selections of causal attention, ``masked_fill`` and ``where``) at three working
sets:

- ``l2``: half of the L2 of the cores used (``facts.cpu.l2_bytes`` per core x threads),
- ``l3``: half of the last-level cache (``facts.cpu.l3_bytes``), moved past the L2s of
  the cores used where they hold as much (but inside the L3),
- ``dram``: twice the last-level cache, so it streams from memory.

The last-level cache counted is at most 48 MB for each thread used (:func:`reachable_l3`):
a guest's sysfs shows its host's whole L3.

Each figure is the bytes the project's operator counter records for that call
(``estimate.counting``: every tensor read or written, fp32) over its median time, so the
estimator can price each counted operator by its family and working set directly. The
statements are the aten operators themselves, with fresh outputs as eager PyTorch makes
them, except outputs over 32 MiB: glibc maps those fresh at every call, and their page
faults are the ``first_touch`` figure's, so those calls write into outputs made once.

A ``dispatch`` figure times a 64-element add whose input requires grad: the per-operator
cost of eager PyTorch on this CPU (dispatcher, autograd bookkeeping, allocation), in
million operators per second. The two masked families are measured at the L2 and L3
sizes only: their kernels select element by element (``masked_fill`` ran at 5.2-5.7 GB/s
at every size on a Zen 3 guest at two threads, where an add ran at 48-51), so past the L3
the estimate takes the slower of that rate and the element-wise DRAM figure.

A ``dispatch_backward`` figure times autograd's backward through a chain of such small
operators: what the engine pays per operator of a backward pass (its node, the
gradient's allocation, the dispatch), which is several times the forward's. Two
optimizer figures (``adamw_step``, ``sgd_step``) time torch.optim's step over 64 tiny
tensors: its cost per parameter tensor on a CPU.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwadvisor.bench.case import KernelCase
from hwadvisor.bench.sizing import Shape
from hwadvisor.glibc import always_mapped

if TYPE_CHECKING:
    from hwadvisor.bench.devices import Target
    from hwadvisor.models.facts import Facts

MIB = 1024 * 1024
#: Cache sizes assumed when the probe could not read them (per core L2, total L3).
DEFAULT_L2 = 1 * MIB
DEFAULT_L3 = 32 * MIB
#: The most last-level cache a core of a shipping x86 server part has to itself: AMD's
#: EPYC 9184X (Genoa-X), 768 MB of L3 over 16 cores, 48 MB a core (AMD's EPYC 9004
#: product pages). A virtual machine's sysfs shows its host's whole L3, which every other
#: tenant of the host shares: 480 MiB to a 2-vCPU Xeon guest. Sized by that, the stream's
#: buffers came to 1.9 GB each and its copy alone took 10.8 s of a 10 s budget, leaving the
#: memory sweep no time for a second run; and a 251 MB working set ran at the same rate
#: as a 1 GB one (26 and 28 GB/s element-wise), so the guest could not hold it in cache.
L3_PER_CORE_MAX = 48 * 10**6
#: Channels and spatial size of the NCHW tensors of the batch-norm and pooling families.
CHANNELS, SIDE = 64, 16
#: Row length of the layer-norm (a hidden size) and softmax (a sequence) families.
HIDDEN, SEQ = 768, 128
#: Side of the masked families' square boolean mask, broadcast over the leading dimension
#: as a causal mask is over batch and heads (64: a working set lands within 1/8 of an L2
#: point of 256 KiB).
MASK_SIDE = 64
#: Budget weight of each (family, level) figure, by level, and of the dispatch figure. A
#: figure moves 32x (L3) and 128x (DRAM) the L2 figure's bytes a call: a DRAM figure of a
#: slow family (dropout's random numbers: 0.1 s a call at two threads on a Zen 3 guest)
#: needs its 4 timed runs to know a spread.
SWEEP_WEIGHTS = {"l2": 0.05, "l3": 0.08, "dram": 0.16}
DISPATCH_WEIGHT = 0.05
#: The first-touch figure's tensor: past the 32 MiB ceiling of glibc's mmap threshold, so
#: malloc maps it fresh at every call (``glibc.always_mapped``), and its weight: a call
#: took 25-40 ms on a Zen 3 guest (1.5-2 GB/s), as long as a DRAM figure's.
FIRST_TOUCH_BYTES = 40 * MIB
FIRST_TOUCH_WEIGHT = SWEEP_WEIGHTS["dram"]
#: Elements written at the start of each of its pages: at least this many, and enough in
#: all for ATen to split the write into one task a thread (a task per
#: ``at::internal::GRAIN_SIZE`` elements, 32,768, ``aten/src/ATen/Parallel.h``), as it
#: splits a large tensor's own writes, so the pages fault on every thread at once. One
#: element a page (10,240) stayed on one thread: on a Zen 3 guest at two threads that
#: read 1.5-1.8 GB/s, where eight a page read 2.6 and a whole fresh 40 MiB fill, less
#: the same fill of pages already in, 2.9-3.9; at one thread all three read 1.5-2.1.
TOUCH_PER_PAGE = 8
GRAIN_SIZE = 32768
#: The optimizer figures' parameter tensors (64 elements each): what torch.optim's
#: for-loop, its path for CPU tensors, pays per tensor beyond the tensor's bytes.
OPTIMIZER_TENSORS = 64
#: The optimizer figures, by the ``--optimizer`` they price.
OPTIMIZER_KERNELS = {"adamw": "adamw_step", "sgd": "sgd_step"}
#: The aten operators torch.optim's for-loop runs per parameter tensor (AdamW; SGD with
#: momentum, as the optimizer figures run them), counted with a dispatch mode on torch
#: 2.13 (``tests/bench/test_sweep.py``): AdamW's ``add_`` (its step count), ``mul_``
#: (weight decay), ``lerp_``, ``mul_``, ``addcmul_``, the count's ``item()``, ``sqrt``,
#: ``div``, ``add_``, ``addcdiv_``; SGD's ``mul_``, ``add_``, ``add_``. Where a figure is missing
#: the estimate prices a tensor as these operators at the per-operator cost.
FOR_LOOP_OPS = {"adamw": 10, "sgd": 3}
#: Each sweep figure may start with this little of the budget (one short measurement).
SWEEP_MIN_ALLOT_S = 0.03
#: The least the first-touch and optimizer figures get: four timed calls and the
#: confirming ones, where one call takes 25-40 ms (first touch) or 2-3 ms in blocks of
#: 10 ms (an optimizer's step) on a Zen 3 guest. With the sweep's 0.03 s, a quick bench,
#: whose budget is spent by then, left all three with one to three runs, unreliable; with
#: these, four or five runs each in two quick runs (0.08 s still left AdamW's at two).
FIRST_TOUCH_MIN_ALLOT_S = 0.2
OPTIMIZER_MIN_ALLOT_S = 0.15
LEVELS = ("l2", "l3", "dram")
#: The work of one dispatch call: one operator, in the runner's units (work / s / 1e9),
#: so that the figure reads in millions of operators per second.
DISPATCH_WORK = 1000.0
#: Operators in the chain the backward figure runs back through (sigmoid, multiply, ...).
BACKWARD_CHAIN = 16
#: The operators one backward call dispatches: one gradient formula per link of the
#: chain (``sigmoid_backward``, ``mul``) and the leaf's accumulation into ``.grad``.
BACKWARD_OPS = BACKWARD_CHAIN + 1
BACKWARD_WORK = DISPATCH_WORK * BACKWARD_OPS
#: The per-call figure of a recurrent layer (:func:`rnn_layer_statement`), and the
#: operator family a counted profile records each such call under (bytes 0).
RNN_LAYER = "rnn_layer"


@dataclass(frozen=True)
class Family:
    """One operator family: counted bytes per element of its input, and its row layout."""

    name: str
    bytes_per_element: float
    layout: str  # "nchw", "nchw:<channels>", "rows:<n>", "mask:<side>" or "flat"
    #: The working-set levels it is measured at.
    levels: tuple[str, ...] = LEVELS

    def fixed_bytes(self) -> float:
        """Counted bytes of one call besides its per-element ones (a broadcast mask)."""
        if self.layout.startswith("mask:"):
            side = int(self.layout.split(":")[1])
            return float(side * side)  # one byte per boolean
        return 0.0


#: Counted bytes per input element (fp32): all tensors read and written, as the counter
#: sums them. add: a, b, out; batch norm: x, out; its backward: grad, x, grad_in;
#: max pool 2x2 with indices: x + out/4 + int64 indices/4; its backward: grad/4 + x +
#: int64 indices/4 + grad_in (zeroed, then each gradient scattered to its maximum's
#: place); bernoulli_: self in and out;
#: masked_fill: x, out (and the mask once); where(mask, value, x): x, out (the mask once).
FAMILIES = (
    Family("eltwise", 12.0, "flat"),
    Family("batch_norm", 8.0, "nchw"),
    Family("batch_norm_backward", 12.0, "nchw"),
    Family("max_pool", 7.0, "nchw"),
    Family("max_pool_backward", 11.0, "nchw:16"),
    Family("dropout", 8.0, "flat"),
    Family("layer_norm", 8.0, f"rows:{HIDDEN}"),
    Family("softmax", 8.0, f"rows:{SEQ}"),
    Family("gelu", 8.0, "flat"),
    Family("masked_fill", 8.0, f"mask:{MASK_SIDE}", ("l2", "l3")),
    Family("where", 8.0, f"mask:{MASK_SIDE}", ("l2", "l3")),
)


#: What ``--quick`` keeps of the sweep (the estimates and ``recommend`` run it): the
#: per-operator cost, every family at the L3 size, and the streaming family at all three.
QUICK_SWEEP = frozenset(
    {("dispatch", None), ("dispatch_backward", None), ("first_touch", None), (RNN_LAYER, None)}
    | {(k, None) for k in OPTIMIZER_KERNELS.values()}
    | {("eltwise", "l2"), ("eltwise", "dram")}
    | {(f.name, "l3") for f in FAMILIES}
)


def in_quick_sweep(kernel: str, level: str | None) -> bool:
    """Whether ``--quick`` measures this sweep figure."""
    return (kernel, level) in QUICK_SWEEP


def reachable_l3(facts: Facts | None, threads: int) -> int:
    """The last-level cache the sizing counts on: the probed L3 (else :data:`DEFAULT_L3`),
    at most :data:`L3_PER_CORE_MAX` for each thread used."""
    l3 = facts.cpu.l3_bytes if facts is not None and facts.cpu.l3_bytes else DEFAULT_L3
    return int(min(l3, max(1, threads) * L3_PER_CORE_MAX))


def level_bytes(facts: Facts | None, threads: int) -> dict[str, int]:
    """The working set (bytes moved by one call) aimed at for each level."""
    l2 = facts.cpu.l2_bytes if facts is not None and facts.cpu.l2_bytes else DEFAULT_L2
    l3 = reachable_l3(facts, threads)
    l2_all = l2 * max(1, threads)
    l2_point = l2_all // 2
    # Half the L3, moved past the L2s where they hold as much, but inside the L3.
    l3_point = max(l3 // 2, min(2 * l2_all, 3 * l3 // 4))
    if l3_point <= l2_point:  # the L2s hold more than the L3: the next level is past them
        l3_point = 2 * l2_point
    return {"l2": l2_point, "l3": l3_point, "dram": max(2 * l3, 2 * l3_point)}


def family_shape(family: Family, working_set: int) -> Shape:
    """The input shape of ``family`` whose call moves about ``working_set`` bytes."""
    elements = max(1, int((working_set - family.fixed_bytes()) / family.bytes_per_element))
    kind, _, arg = family.layout.partition(":")
    if kind == "nchw":
        # "nchw:<channels>": fewer channels, so that a family of many bytes an element
        # still lands within a tenth of a small working set.
        c = int(arg) if arg else CHANNELS
        return (max(1, elements // (c * SIDE * SIDE)), c, SIDE, SIDE)
    if family.layout.startswith("rows:"):
        row = int(family.layout.split(":")[1])
        return (max(1, elements // row), row)
    if family.layout.startswith("mask:"):
        side = int(family.layout.split(":")[1])
        return (max(1, elements // (side * side)), side, side)
    return (elements,)


def family_work(family: Family) -> Callable[[Shape], float]:
    """Counted bytes of one call at ``shape``."""

    def work(shape: Shape) -> float:
        n = 1
        for d in shape:
            n *= d
        return family.bytes_per_element * n + family.fixed_bytes()

    return work


#: Period of :func:`filled`'s values: a prime, so no row length of a family lines up with it.
FILL_PERIOD = 65521


def filled(torch: Any, shape: Shape, phase: int = 0) -> Any:
    """An fp32 tensor of ``shape`` with values spread evenly over [-2, 2) in no order a
    core can learn: :data:`FILL_PERIOD` uniform draws of a generator seeded with
    ``phase`` (so each phase is another tensor, and every run the same one), repeated.

    One pass over memory, where ``torch.randn`` over the whole tensor draws random
    numbers: a 64 MiB DRAM figure's input took 0.19 s to draw at two threads on a Zen 3
    guest, longer than the figure's own timing, and came out of the bench's budget. The
    values must not follow a pattern: max pooling branches on which of each window's
    elements is largest, and on a regular sequence (each value the last plus a fixed step,
    as this fill made them until 2026-12) the branch predictor learns the comparisons and
    the kernel ran 2.5x as fast as on a model's activations (7.0 against 2.8 GB/s at two
    threads on an Intel Xeon guest; shuffled, the same values ran at 2.8).
    """
    n = 1
    for d in shape:
        n *= d
    gen = torch.Generator().manual_seed(phase)
    base = torch.rand(FILL_PERIOD, generator=gen, dtype=torch.float32).mul_(4.0).sub_(2.0)
    return base.repeat(-(-n // FILL_PERIOD))[:n].reshape(*shape)


#: Each family's aten call without an output of its own: its ``out=`` overload and the
#: names of its output arguments (dropout's ``bernoulli_`` writes its input in place).
OUT_OVERLOADS: dict[str, tuple[str, tuple[str, ...]]] = {
    "eltwise": ("out", ("out",)),
    "batch_norm": ("out", ("out", "save_mean", "save_invstd")),
    "batch_norm_backward": ("out", ("out0", "out1", "out2")),
    "max_pool": ("out", ("out", "indices")),
    "max_pool_backward": ("grad_input", ("grad_input",)),
    "layer_norm": ("out", ("out0", "out1", "out2")),
    "softmax": ("out", ("out",)),
    "gelu": ("out", ("out",)),
    "masked_fill": ("Scalar_out", ("out",)),
    "where": ("self_out", ("out",)),
}


def _family_call(torch: Any, family: str, shape: Shape) -> tuple[Any, tuple[Any, ...]]:
    """The aten overload packet of one call of ``family`` at ``shape`` and its arguments."""
    aten = torch.ops.aten
    x = filled(torch, shape)
    if family == "eltwise":
        return aten.add, (x, filled(torch, shape, 1))
    if family in ("batch_norm", "batch_norm_backward"):
        c = shape[1]
        w, b = torch.ones(c), torch.zeros(c)
        rm, rv = torch.zeros(c), torch.ones(c)
        if family == "batch_norm":
            return aten.native_batch_norm, (x, w, b, rm, rv, True, 0.1, 1e-5)
        _, mean, invstd = aten.native_batch_norm(x, w, b, rm, rv, True, 0.1, 1e-5)
        g = filled(torch, shape, 2)
        mask = [True, True, True]
        return aten.native_batch_norm_backward, (g, x, w, rm, rv, mean, invstd, True, 1e-5, mask)
    if family == "max_pool":
        return aten.max_pool2d_with_indices, (x, [2, 2], [2, 2])
    if family == "max_pool_backward":
        _, indices = aten.max_pool2d_with_indices(x, [2, 2], [2, 2])
        g = filled(torch, (*shape[:2], shape[2] // 2, shape[3] // 2), 2)
        back = (g, x, [2, 2], [2, 2], [0, 0], [1, 1], False, indices)
        return aten.max_pool2d_with_indices_backward, back
    if family == "dropout":
        return aten.bernoulli_, (x, 0.9)
    if family == "layer_norm":
        w, b = torch.ones(shape[-1]), torch.zeros(shape[-1])
        return aten.native_layer_norm, (x, [shape[-1]], w, b, 1e-5)
    if family == "softmax":
        return aten._softmax, (x, -1, False)
    if family == "gelu":
        return aten.gelu, (x,)
    if family in ("masked_fill", "where"):
        side = shape[-1]
        mask = torch.ones(side, side, dtype=torch.bool).triu(1)  # a causal mask
        if family == "masked_fill":
            return aten.masked_fill, (x, mask, float("-inf"))
        return aten.where, (mask, torch.tensor(float("-inf")), x)
    raise ValueError(f"unknown sweep family {family}")


def family_statement(torch: Any, family: str, shape: Shape) -> Callable[[], object]:
    """Inputs for one call of ``family`` at ``shape``, and the call.

    Each call makes fresh outputs, as eager PyTorch does, except where an output is so
    large that glibc's malloc maps it fresh at every call (``glibc.always_mapped``): there the
    call writes into outputs made once (its ``out=`` overload), so the figure is the
    operator's bandwidth, and the first touch of fresh pages is the ``first_touch``
    figure's, priced once per such tensor of a step.
    """
    packet, args = _family_call(torch, family, shape)
    if family == "dropout":
        return lambda: packet(*args)
    outs = packet(*args)
    outs = outs if isinstance(outs, tuple) else (outs,)
    if not any(always_mapped(o.numel() * o.element_size()) for o in outs):
        return lambda: packet(*args)
    overload, names = OUT_OVERLOADS[family]
    out_op, kwargs = getattr(packet, overload), dict(zip(names, outs, strict=True))
    return lambda: out_op(*args, **kwargs)


def touch_per_page(threads: int, pages: int, page_elements: int) -> int:
    """Elements to write at the start of each page so that ``threads`` threads share it."""
    want = -(-max(1, threads) * GRAIN_SIZE // max(1, pages))
    return min(page_elements, max(TOUCH_PER_PAGE, want))


def first_touch_statement(torch: Any) -> Callable[[], object]:
    """A fresh private anonymous mapping of :data:`FIRST_TOUCH_BYTES`, the first elements
    of every page written through a tensor over it (:func:`touch_per_page`: on all the
    threads torch runs, as a large operator's output is), then unmapped: what the
    kernel's page faults cost per byte of a tensor glibc maps fresh.

    The mapping is made here, not by ``torch.empty``: in a process whose heap has grown
    (a bench run before this one, a model built), glibc serves even a 40 MiB request
    from the free top of its heap, whose pages are already in, and the figure read 600
    GB/s where a fresh process's read 1.9. Where Python's ``mmap`` has no private
    anonymous mappings (Windows), a fresh tensor stands in."""
    import mmap

    n = FIRST_TOUCH_BYTES // 4
    step = max(TOUCH_PER_PAGE, mmap.PAGESIZE // 4)

    def head(tensor: Any) -> Any:
        """The first elements of each page of ``tensor``, as many as the threads need."""
        per = touch_per_page(torch.get_num_threads(), n // step, step)
        return tensor.view(-1, step)[:, :per]

    if not (hasattr(mmap, "MAP_PRIVATE") and hasattr(mmap, "MAP_ANONYMOUS")):
        return lambda: head(torch.empty(n)).fill_(0.0)
    private = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
    prot = mmap.PROT_READ | mmap.PROT_WRITE

    def touch() -> int:
        with mmap.mmap(-1, FIRST_TOUCH_BYTES, flags=private, prot=prot) as pages:
            tensor = torch.frombuffer(pages, dtype=torch.float32)
            head(tensor).fill_(0.0)
            written = int(tensor.numel())
            del tensor  # the mapping closes only once nothing holds its memory
        return written

    return touch


def dispatch_statement(torch: Any) -> Callable[[], object]:
    """A 64-element add with autograd recording: what eager pays per operator here."""
    x = torch.randn(64, requires_grad=True)
    y = torch.randn(64)
    return lambda: torch.add(x, y)


def backward_statement(torch: Any) -> Callable[[], object]:
    """Autograd's backward through :data:`BACKWARD_CHAIN` small operators (the graph kept)."""
    x = torch.randn(64, requires_grad=True)
    y = torch.randn(64)
    h = x
    for i in range(BACKWARD_CHAIN):
        h = torch.sigmoid(h) if i % 2 == 0 else h * y
    grad = torch.ones(64)
    x.grad = torch.zeros(64)  # every call accumulates into it, as a step's second backward
    return lambda: h.backward(grad, retain_graph=True)


def rnn_layer_statement(torch: Any) -> Callable[[], object]:
    """One step of a one-layer LSTM of 8 features at batch 1, without autograd: what a
    recurrent layer's call costs on a CPU beyond its work. PyTorch runs each LSTM layer
    there as one oneDNN primitive (``aten/src/ATen/native/mkldnn/RNN.cpp``), which reorders
    its weights into oneDNN's layout at every call; a one-step layer of 8 features is
    almost nothing else (81 us a call against 5 us for a Linear of the same width on a
    Zen 4 guest)."""
    layer = torch.nn.LSTM(8, 8)
    x = torch.randn(1, 1, 8)

    def call() -> object:
        with torch.no_grad():
            return layer(x)

    return call


def optimizer_statement(torch: Any, optimizer: str) -> Callable[[], object]:
    """One step of ``torch.optim.AdamW`` (or SGD with momentum, as the estimate prices it)
    over :data:`OPTIMIZER_TENSORS` tensors of 64 elements, their state made by two steps.

    On CPU tensors torch.optim takes its single-tensor path: a Python loop over the
    parameters, about ten operators each for AdamW (``_single_tensor_adamw``) and three
    for SGD, so a tiny tensor's update is almost all per-tensor cost.
    """
    params = [torch.nn.Parameter(torch.ones(64)) for _ in range(OPTIMIZER_TENSORS)]
    for p in params:
        p.grad = torch.full((64,), 1e-3)
    if optimizer == "sgd":
        opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9)
    else:
        opt = torch.optim.AdamW(params, lr=1e-4)
    opt.step()
    opt.step()
    return opt.step


def sweep_cases(torch: Any, target: Target, facts: Facts | None) -> list[KernelCase]:
    """The dispatch figures and every (family, level) figure, for a CPU target."""

    def per_call(
        kernel: str,
        work: float,
        build: Callable[[Any], Callable[[], object]],
        least: float = SWEEP_MIN_ALLOT_S,
    ) -> KernelCase:
        return KernelCase(
            target,
            kernel,
            "fp32",
            "Mop/s",
            ((64,),),
            lambda _s: work,
            lambda _s: build(torch),
            weight=DISPATCH_WEIGHT,
            min_allot_s=least,
        )

    cases = [
        per_call("dispatch", DISPATCH_WORK, dispatch_statement),
        per_call("dispatch_backward", BACKWARD_WORK, backward_statement),
        # 80-90 us a call: with the sweep's least share a quick bench got three runs of it
        per_call(RNN_LAYER, DISPATCH_WORK, rnn_layer_statement, OPTIMIZER_MIN_ALLOT_S),
        KernelCase(
            target,
            "first_touch",
            "fp32",
            "GB/s",
            ((FIRST_TOUCH_BYTES // 4,),),
            lambda s: 4.0 * s[0],
            lambda _s: first_touch_statement(torch),
            weight=FIRST_TOUCH_WEIGHT,
            min_allot_s=FIRST_TOUCH_MIN_ALLOT_S,
        ),
    ]
    for name, kernel in OPTIMIZER_KERNELS.items():

        def step(t: Any, name: str = name) -> Callable[[], object]:
            return optimizer_statement(t, name)

        work = OPTIMIZER_TENSORS * DISPATCH_WORK
        cases.append(per_call(kernel, work, step, OPTIMIZER_MIN_ALLOT_S))
    sizes = level_bytes(facts, target.threads)
    # Level by level, the cheap figures first: a budget spent before the end of the sweep
    # costs DRAM figures (the costliest: a working set past the L3 each call), not whole
    # families, and a family without its DRAM figure is priced from its own L3 one.
    for level in LEVELS:
        for family in (f for f in FAMILIES if level in f.levels):
            shape = family_shape(family, sizes[level])

            def build(s: Shape, name: str = family.name) -> Callable[[], object]:
                return family_statement(torch, name, s)

            cases.append(
                KernelCase(
                    target,
                    family.name,
                    "fp32",
                    "GB/s",
                    (shape,),
                    family_work(family),
                    build,
                    weight=SWEEP_WEIGHTS[level],
                    level=level,
                    min_allot_s=SWEEP_MIN_ALLOT_S,
                )
            )
    return cases
