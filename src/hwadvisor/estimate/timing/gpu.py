"""GPU time of a counted model: each operator on the roofline, and eager PyTorch's host cost.

For a workload whose profile lists its operators (a counted model, or a catalog CNN with
counted groups in ``catalog/data/op_profiles.yaml``), a step on a catalog GPU is

- convolutions with counted activations: their FLOPs at the compute roof plus the bytes
  they read and write at the bandwidth (on Hopper and Blackwell the compute roof is the
  share of the peak the synchronous MMA path reaches);
- products (and convolutions without counted bytes): FLOPs at the lower of the compute roof (the catalog's
  large-GEMM achieved fraction of the peak at the job's precision; TF32 for convolutions
  under fp32 on Ampere and later, as PyTorch lets cuDNN do by default) and the memory roof
  (arithmetic intensity x bandwidth; a product of effective size s moving its three
  operands once does 2s/3 FLOPs per element, so 2s/(3b) per byte at b bytes per element);
- memory-bound operators: their counted bytes (at the job's element size; autocast keeps
  layer norm and softmax in fp32) times the passes their CUDA kernels make, over the
  catalog's achieved share of the bandwidth; training batch norm's per-channel
  statistics and gradient reductions at most at a ceiling that faster memory does not
  raise (one thread block per channel);
- the optimizer's passes over its state, over the same bandwidth.

The host launches every operator asynchronously and pays for each: a forward launch what
one costs inside a real model's forward (measured per launch in a profiled model, more
than the same operator timed alone), a cuDNN convolution more, autograd's backward
operators their C++ call and launch; the step takes the longer of the host's time and
the GPU's. Figures and sources: ``catalog/data/gpu_time.yaml``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from hwadvisor.catalog.schema import DeviceEntry
from hwadvisor.estimate.timing.device import DeviceModel, Links, Roofline, catalog_peak, size_curve
from hwadvisor.io import load_yaml
from hwadvisor.models.workload import RNN_LAYER, OpProfile, Precision, Task, Workload

#: Families that are products rather than memory-bound operators (``bmm``: an attention
#: product, ``torch.matmul`` of two activations: no weight, no module).
PRODUCTS = frozenset({"conv", "gemm", "bmm", "other"})
#: Calls that launch no kernel: a dispatcher op without one (``view``: a reshape, a
#: permute, dropout in eval), and a container module's own call (``module``).
VIEW, MODULE = "view", "module"
NO_LAUNCH = frozenset({VIEW, MODULE})
#: Forward FLOPs of a sample are multiplied by this for a training step (forward + backward).
TRAIN_WORK = 3.0
#: Kernels one optimizer step launches per pass (foreach / multi-tensor kernels).
OPTIMIZER_PASSES = {"adamw": 8, "sgd": 3}
#: Size of products whose size is unknown.
UNKNOWN_SIZE = 256.0
#: The family an operator known only as a launch is priced as (no nn.Module wrapper).
PLAIN_FAMILY = "eltwise"


@functools.cache
def gpu_constants() -> dict[str, Any]:
    """``catalog/data/gpu_time.yaml``: host costs, kernel passes, autocast and TF32 rules."""
    text = resources.files("hwadvisor.catalog").joinpath("data").joinpath("gpu_time.yaml")
    return dict(load_yaml(text.read_text(encoding="utf-8")))


def element_bytes(precision: Precision, family: str) -> float:
    """Bytes per element a memory-bound operator of ``family`` moves at ``precision``."""
    if precision is Precision.FP32:
        return 4.0
    if precision is Precision.AMP:
        fp32 = gpu_constants()["autocast"]["fp32_families"]
        return 4.0 if family in fp32 else 2.0
    return 1.0 if precision is Precision.INT8 else 2.0


@dataclass
class GpuStep:
    """Seconds by part on the GPU, the host's seconds, and the note that explains them."""

    parts: dict[str, float]
    host_s: float
    launches: int
    notes: list[str] = field(default_factory=list)


def conv_bytes(wl: Workload, prof: OpProfile) -> float:
    """Bytes the convolutions of one step read and write (inputs, outputs, their gradients),
    at the job's element size; 0 when the profile does not count them."""
    train = wl.task is Task.TRAIN
    scale = element_bytes(wl.precision, "conv") / 4.0
    return sum(
        g.count * g.bytes * wl.batch_size * scale
        for g in prof.op_groups
        if g.family == "conv" and g.bytes and (train or not g.backward)
    )


def _products(wl: Workload, prof: OpProfile, roof: Roofline, work: float) -> dict[str, float]:
    gemm = sum(b.flops * work / roof.rate(b.size, conv=False) for b in prof.gemm)
    if prof.other_flops:
        gemm += prof.other_flops * work / roof.rate(UNKNOWN_SIZE, conv=False)
    parts = {"gemm": gemm}
    if prof.conv_flops:
        moved = conv_bytes(wl, prof)
        if moved:
            # Counted activations: a convolution of few channels over a large image multiplies
            # little per byte it moves, and cuDNN's kernels stream their tiles, then multiply
            # them: the FLOPs at the compute roof plus the bytes at the bandwidth.
            parts["conv"] = prof.conv_flops * work / roof.conv_flops_s + moved / roof.bandwidth
            return parts
        buckets = prof.conv or []
        known = sum(b.flops for b in buckets)
        conv = sum(b.flops * work / roof.rate(b.size, conv=True) for b in buckets)
        rest = max(prof.conv_flops - known, 0.0)
        conv += rest * work / roof.rate(UNKNOWN_SIZE, conv=True)
        parts["conv"] = conv
    return parts


def memory_traffic(wl: Workload, prof: OpProfile, *, layout: bool = False) -> tuple[float, float]:
    """Bytes the memory-bound operators of one step move on a GPU, and (``layout``) those
    of the transposes of the tensors NCHW convolutions read on tensor cores (cuDNN's
    kernels write their result in NCHW themselves).

    Each group's counted bytes at the job's element size (autocast keeps layer norm and
    softmax in fp32), times the passes its CUDA kernel makes over them
    (``catalog/data/gpu_time.yaml``).
    """
    train = wl.task is Task.TRAIN
    passes = gpu_constants()["passes"]
    shares = gpu_constants()["layout"]["transposed_share"]
    moved = moved_layout = 0.0
    for g in prof.op_groups:
        if (g.backward and not train) or not g.bytes:
            continue
        scale = element_bytes(wl.precision, g.family) / 4.0
        if g.family == "conv":
            if layout:  # the tensors a call reads: read and written once more
                share = float(shares["backward" if g.backward else "forward"])
                moved_layout += 2.0 * share * g.count * g.bytes * wl.batch_size * scale
            continue
        if g.family in PRODUCTS:
            continue
        # Eval-mode batch norm is one element-wise kernel (read, write): the counted bytes.
        key = g.family if train or g.family != "batch_norm" else "batch_norm_eval"
        factor = float(passes.get(key, 1.0))
        moved += g.count * g.bytes * wl.batch_size * scale * factor
    return moved, moved_layout


def normalization_traffic(wl: Workload, prof: OpProfile) -> float:
    """Bytes of one step's training batch-norm kernels (statistics and gradient reductions,
    their passes included): the share of :func:`memory_traffic` that runs at the
    normalisation ceiling rather than the bandwidth (0 for inference)."""
    if wl.task is not Task.TRAIN:
        return 0.0
    rules = gpu_constants()["normalization"]
    passes = gpu_constants()["passes"]
    families = set(rules["families"])
    return sum(
        g.count * g.bytes * wl.batch_size * element_bytes(wl.precision, g.family) / 4.0
        * float(passes.get(g.family, 1.0))
        for g in prof.op_groups
        if g.family in families and g.bytes
    )  # fmt: skip


def normalization_rate(roof: Roofline) -> float:
    """Bytes/s training batch norm moves: the bandwidth, or the ceiling of its per-channel
    reductions where the memory is faster (``catalog/data/gpu_time.yaml``)."""
    ceiling = float(gpu_constants()["normalization"]["ceiling_bytes_s"])
    return min(roof.bandwidth, ceiling)


def _memory(wl: Workload, prof: OpProfile, roof: Roofline) -> tuple[float, float]:
    """Seconds of the memory-bound operators, and of the layout transposes around convolutions.

    Training batch norm's bytes run at :func:`normalization_rate`, the rest at the bandwidth.
    """
    layout = gpu_constants()["layout"]
    nchw = layout["default"] == "nchw" and not wl.channels_last
    transposes = roof.conv_tensor_cores and nchw and bool(layout["tensor_core_transposes"])
    moved, moved_layout = memory_traffic(wl, prof, layout=transposes)
    norm = normalization_traffic(wl, prof)
    seconds = (moved - norm) / roof.bandwidth + norm / normalization_rate(roof)
    return seconds, moved_layout / roof.bandwidth


def cudnn_host_s() -> float:
    """cuDNN's own host work in a convolution: ``conv_s`` less a plain module operator.

    Both timed alone in a loop (``conv_s`` end to end; the plain operator as its Python,
    module call and launch), so the difference is what cuDNN adds on the host: descriptors,
    the plan lookup, the workspace.
    """
    host = gpu_constants()["host"]
    plain = float(host["python_s"]) + float(host["module_s"]) + float(host["op_s"])
    return max(float(host["conv_s"]) - plain, 0.0)


def op_host_s(family: str, *, backward: bool, train: bool) -> float:
    """Host seconds of one eager operator of ``family`` inside a model's step.

    A forward operator that launches a kernel costs ``model_launch_s``, a launch as
    measured inside a real model's forward (its Python, module call, views and casts
    around it included), plus what autograd adds in training and, for a convolution,
    cuDNN's own host work. Views and container modules add nothing of their own in the
    forward: the per-launch figure holds them. A backward operator is called from C++ by
    autograd and pays that call and the launch (a convolution's data and weight
    gradients: two, each with cuDNN's work); a view's backward node the C++ call alone.
    """
    host = gpu_constants()["host"]
    cpp, launch = float(host["cpp_s"]), float(host["op_s"])
    if backward:
        if family == MODULE:
            return 0.0
        if family == VIEW:
            return cpp
        return 2.0 * (cpp + launch + cudnn_host_s()) if family == "conv" else cpp + launch
    if family in NO_LAUNCH:
        return 0.0
    seconds = float(host["model_launch_s"])
    if train:
        seconds += float(host["python_grad_s"]) - float(host["python_s"])
    return seconds + (cudnn_host_s() if family == "conv" else 0.0)


def python_ops_s(*, launching: int, casts: int = 0, grad: bool = False) -> float:
    """Host seconds of Python-level work priced like the model's own forward operators.

    ``launching`` operators that each launch a kernel and ``casts`` dtype casts (autocast)
    each cost a launch inside a model (views and module calls around them included); for
    a loop's own work around the model (loss, metrics) and the optimizer's step.
    """
    per = op_host_s(PLAIN_FAMILY, backward=False, train=grad)
    return (launching + casts) * per


def host_note(device: str, host_s: float, launches: int, device_s: float) -> str:
    """The assumption a GPU step's host cost adds: host against GPU, and, when the host is
    the longer, what its per-launch figure rests on and what would shorten it."""
    text = (
        f"{device}: eager PyTorch's host cost {host_s * 1e3:.2f} ms for {launches} launches "
        f"against the GPU's {device_s * 1e3:.2f} ms: the step takes the longer"
    )
    if host_s <= device_s:
        return text
    host = gpu_constants()["host"]
    per = float(host["model_launch_s"]) * 1e6
    return (
        f"{text}; host-bound: a forward launch at {per:.0f} µs, as measured inside a model "
        f"on {host['model_launch_host']}; a newer host launches faster, and CUDA graphs or "
        "torch.compile launch far fewer kernels"
    )


def _autocast_casts(wl: Workload, prof: OpProfile) -> int:
    """Casts autocast launches per step: each product's fp32 weight, and the input once."""
    if wl.precision is not Precision.AMP:
        return 0
    rules = gpu_constants()["autocast"]
    products = sum(
        g.count for g in prof.op_groups if not g.backward and g.family in ("conv", "gemm")
    )
    if not products:
        return 0
    return products * int(rules["casts_per_product"]) + int(rules["casts_per_step"])


def host_seconds(wl: Workload, prof: OpProfile) -> tuple[float, int]:
    """Host seconds of one eager step and the kernel launches among what they pay for."""
    train = wl.task is Task.TRAIN
    seconds, launches = 0.0, 0
    for g in prof.op_groups:
        if (g.backward and not train) or g.family == RNN_LAYER:
            continue  # a recurrent layer's call on a CPU: its operators are listed apart
        seconds += g.count * op_host_s(g.family, backward=g.backward, train=train)
        launches += 0 if g.family in NO_LAUNCH else g.count
    casts = _autocast_casts(wl, prof)
    seconds += python_ops_s(launching=0, casts=casts, grad=train)
    launches += casts
    if train:
        passes = OPTIMIZER_PASSES.get(wl.optimizer.value, 3)
        seconds += python_ops_s(launching=passes)  # optimizer.step runs under no_grad
        launches += passes
    return seconds, launches


def eager_host_s(wl: Workload, prof: OpProfile) -> tuple[float, int]:
    """Host seconds and launches of one eager step on a GPU, whichever path prices it.

    A profile with operator groups (a counted model, a catalog CNN, an analytic transformer)
    pays each group's host cost (:func:`host_seconds`); one with only a launch count (bare
    FLOPs) pays each forward launch as a plain operator inside a model, the backward's as
    operators called from C++. One definition of the host cost
    for the per-operator roofline and the class fractions alike.
    """
    if prof.op_groups:
        return host_seconds(wl, prof)
    train = wl.task is Task.TRAIN
    forward, total = prof.kernels, launch_count(prof, train)
    plain = op_host_s(PLAIN_FAMILY, backward=False, train=train)
    seconds = forward * plain + (total - forward) * op_host_s(
        PLAIN_FAMILY, backward=True, train=train
    )
    return seconds, total


def launch_count(prof: OpProfile, train: bool) -> int:
    """Operator launches of one step: the forward's, plus the backward's when training
    (twice the forward's where the profile does not count them)."""
    if not train:
        return prof.kernels
    back = prof.backward_kernels
    return prof.kernels + (back if back is not None else 2 * prof.kernels)


def gpu_step(wl: Workload, prof: OpProfile, roof: Roofline) -> GpuStep:
    """The GPU's parts of one step of ``wl`` and the host time that feeds them."""
    work = float(wl.batch_size) * (TRAIN_WORK if wl.task is Task.TRAIN else 1.0)
    parts = _products(wl, prof, roof, work)
    parts["memory"], layout = _memory(wl, prof, roof)
    if layout:
        parts["layout"] = layout
    host, launches = host_seconds(wl, prof)
    return GpuStep(
        parts=parts, host_s=host, launches=launches, notes=layout_notes(wl, prof, roof, layout)
    )


def layout_notes(wl: Workload, prof: OpProfile, roof: Roofline, layout_s: float) -> list[str]:
    """What the estimate assumed of the convolutions' memory format, when it matters."""
    if not roof.conv_tensor_cores or not any(g.family == "conv" for g in prof.op_groups):
        return []
    if wl.channels_last:
        return ["convolutions in channels_last (NHWC, --channels-last): no layout transposes"]
    if layout_s:
        return [
            "convolutions in PyTorch's default NCHW: tensor-core convolutions transpose their "
            f"inputs to NHWC ({layout_s * 1e3:.2f} ms a step); --channels-last if "
            "the model runs in torch.channels_last"
        ]
    return []


def roofline(entry: DeviceEntry, precision: Precision, peak: float, tensor: bool) -> Roofline:
    """The roofs of a catalog GPU for counted models: products and bandwidth.

    Products reach the catalog's large-GEMM fraction of the peak at the job's precision:
    on tensor cores ``gemm``, on the FMA units (fp32 without TF32) ``fp32_gemm`` where it
    was measured. Under fp32 on a GPU with TF32 (Ampere and later) convolutions use the
    TF32 peak and matmuls the fp32 one, as PyTorch's defaults do
    (``catalog/data/gpu_time.yaml``).
    """
    a = entry.achieved
    on_tensor = a.tensor_gemm or a.gemm
    frac = on_tensor if tensor else (a.fp32_gemm or a.gemm)
    gemm = peak * 1e12 * frac
    elem = 1.0 if precision is Precision.INT8 else (2.0 if tensor else 4.0)
    conv = gemm
    tf32 = entry.peaks_tflops.tf32
    tf32_conv = (
        precision is Precision.FP32 and bool(tf32) and gpu_constants()["tf32"]["convolutions"]
    )
    if tf32_conv and tf32:
        conv = tf32 * 1e12 * on_tensor
    legacy = gpu_constants()["legacy_mma"]
    if (tensor or tf32_conv) and entry.id in legacy["devices"]:
        # cuDNN's convolutions reach these parts' tensor cores through the previous
        # generation's synchronous MMA, which issues at a share of the new peak.
        conv *= float(legacy["fraction"])
    if precision is Precision.FP32 and tf32 and gpu_constants()["tf32"]["matmuls"]:
        gemm = tf32 * 1e12 * on_tensor
    bandwidth = entry.streaming_bytes_s
    return Roofline(conv, gemm, elem, elem, bandwidth, conv_tensor_cores=tensor or tf32_conv)


#: Workload classes with a published end-to-end fraction in the catalog (a missing
#: ``transformer_infer`` falls back to the device's ``inference`` fraction).
CLASSES = ("gemm", "cnn_train", "transformer_train", "inference", "transformer_infer")
#: A GPU reaches half its large-product rate at about this product size.
HALF_RATE_SIZE = 256.0


def _class_fractions(
    entry: DeviceEntry, precision: Precision, peak: float, tensor: bool, notes: list[str]
) -> dict[str, float]:
    """The achieved fraction of the peak for each workload class."""
    a = entry.achieved
    if tensor:
        return {k: getattr(a, k) or a.inference for k in CLASSES}
    # Without tensor cores every class runs on the FMA units at about the fp32 fraction.
    fracs = dict.fromkeys(CLASSES, a.fp32)
    notes.append(
        f"{entry.id}: fp32 without tensor cores: {a.fp32:.0%} of the fp32 peak for products"
    )
    if precision is Precision.FP32 and entry.peaks_tflops.tf32:
        # PyTorch lets cuDNN use TF32 for convolutions by default (allow_tf32), not matmuls.
        tf32 = entry.peaks_tflops.tf32 / peak
        fracs["cnn_train"] = a.cnn_train * tf32
        fracs["inference"] = max(a.inference * tf32, a.fp32)
        notes.append(f"{entry.id}: fp32 convolutions run as TF32 (cuDNN default in PyTorch)")
    return fracs


def catalog_gpu_model(entry: DeviceEntry, precision: Precision) -> DeviceModel:
    """A catalog GPU: its peak at ``precision`` times the catalog's achieved fractions."""
    notes: list[str] = []
    peak, tensor = catalog_peak(entry, precision, notes)
    host = op_host_s(PLAIN_FAMILY, backward=False, train=False)
    if peak is None:
        return DeviceModel(
            entry.id, entry.name, (), None, None, None, host, gpu=True,
            assumptions=(f"{entry.id}: no peak for {precision.value}: time unknown",),
            basis="unknown",
        )  # fmt: skip
    class_rate = {
        k: peak * 1e12 * v
        for k, v in _class_fractions(entry, precision, peak, tensor, notes).items()
    }
    roof = roofline(entry, precision, peak, tensor)
    # fp32 convolutions on TF32 tensor cores (PyTorch's default) are said in the basis.
    tf32 = roof.conv_elem_bytes == 4.0 and roof.conv_tensor_cores
    link = entry.interconnect
    return DeviceModel(
        entry.id,
        entry.name,
        size_curve(class_rate["gemm"], HALF_RATE_SIZE),
        class_rate["cnn_train"],
        None,
        entry.streaming_bytes_s,
        host,
        gpu=True,
        memory_bytes=entry.memory_bytes,
        class_rate=class_rate,
        roofline=roof,
        links=Links(
            link.gb_s_per_direction,
            link.kind,
            link.network_gb_s_per_gpu,
            link.network_source,
            link.host or (link.kind if link.kind.startswith("pcie") else None),
        ),
        assumptions=tuple(notes),
        basis=f"catalog peak {peak:g} TFLOP/s{' (convolutions on TF32 tensor cores)' if tf32 else ''} x achieved fraction ({entry.source})",
    )
