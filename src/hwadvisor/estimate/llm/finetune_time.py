"""Time of one fine-tuning step as recipes run it (one micro-batch per GPU).

- **matrix products**: tokens x training FLOPs per token / (16-bit peak x the achieved
  fraction of the framework's recipes on this class of GPU, ``frameworks.yaml``). The
  forward costs ``F = 2 x matrix parameters + attention`` per token
  (``LlmArch.flops_per_token`` at the mean position). Full fine-tuning costs ``3F``
  (Kaplan et al., arXiv:2001.08361, section 2.1: C = 6N per token); LoRA and QLoRA skip
  the frozen weights' gradients: ``2F`` plus 6 FLOPs per adapter parameter (LoRA,
  arXiv:2106.09685, section 4.2). Checkpointing recomputes the forward: ``+F``, about a
  third more (Korthikanti et al., arXiv:2205.05198, section 5).
- **memory-bound work** over the achieved bandwidth: unfused LoRA's dropout, x·A, ·B and
  add on every adapted projection (read the input, write and read the dropout output,
  write the rank-r product, read and add into the output: ``6·in + 8·out`` bytes a token,
  each pass); QLoRA's NF4 -> bf16 expansion of every base matrix per pass; the loss over
  the vocabulary (the framework's bytes per token and entry); the optimizer step.
- **host cost**: the small operators of each layer (norms, rotary, elementwise; and
  five per unfused LoRA projection) at the framework's launch cost, per pass.
- **several GPUs**: DDP all-reduces the gradients (``2(n-1)/n`` of their bytes); ZeRO-1/2
  reduce-scatter them and all-gather the updated weights; ZeRO-3/FSDP all-gather the
  16-bit weights for the forward, the recompute and the backward and reduce-scatter the
  gradients (ZeRO, arXiv:1910.02054, section 7), over the catalog's link. FSDP prefetches
  the next layer's gather during the current layer's compute, so the step takes the
  longer of compute and communication; a GeForce card has no NVLink and no peer-to-peer
  over PCIe (NVIDIA disables P2P on GeForce RTX 40 series), so its traffic crosses the
  host twice: half the link.
- **offload**: the optimizer (and with ZeRO-3/FSDP the weights and gradients) crosses
  PCIe each step, and the CPU runs the optimizer over host memory bandwidth.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.estimate.timing.step import HOST_LINK_BYTES_S  # offload and paging: PCIe 4.0
from hwadvisor.llm import DeviceSpec, LlmArch, find_format
from hwadvisor.llm.finetune import FinetuneMemory, FinetuneRequest, _projections

#: Training FLOPs per token as a multiple of the forward's (see the module docstring).
FULL_FLOP_RATIO = 3.0
FROZEN_FLOP_RATIO = 2.0
RECOMPUTE_FLOP_RATIO = 1.0
ATTENTION_FLOP_RATIO = 3.5
#: Optimizer step bytes per trainable parameter read and written on the GPU: AdamW with
#: fp32 master (read 2 + 12, write 12 + 2), 8-bit (read 2 + 4 + 2, write 2 + 4 + 2).
STEP_BYTES = {
    "adamw": 28.0,
    "adamw8bit": 16.0,
    "paged_adamw8bit": 16.0,
    "sgd": 16.0,
    "adafactor": 16.0,
}
#: Link rate when the catalog names none (PCIe 4.0 x16, 32 GB/s per direction).
DEFAULT_LINK_BYTES_S = 32e9
#: Host memory bandwidth a CPU optimizer step streams over: one socket of 8 x DDR5-4800
#: (307 GB/s) at ~65% (assumed; STREAM-style 70-80% of wire rate, less for the CPU Adam).
HOST_MEMORY_BYTES_S = 200e9
#: CPU AdamW bytes per parameter: fp32 master, two moments read and written, gradient read.
CPU_ADAM_BYTES = 28.0
#: Small operators an unfused LoRA projection adds per pass (dropout, x·A, ·B, scale, add).
LORA_KERNELS = 5


@dataclass(frozen=True)
class StepTime:
    """Seconds of one step by part, and the FLOPs per token it rests on."""

    compute_s: float
    memory_s: float
    overhead_s: float
    comm_s: float
    offload_s: float
    flops_per_token: float
    flop_ratio: float

    @property
    def total_s(self) -> float:
        """Compute and communication overlap (prefetched gathers); the rest adds up."""
        return max(self.compute_s + self.memory_s + self.overhead_s, self.comm_s) + self.offload_s


def gpu_class(spec: DeviceSpec) -> str:
    """``consumer`` for GeForce and RTX workstation cards, else ``datacenter``."""
    return "consumer" if spec.name.startswith("rtx") else "datacenter"


def flops_per_token(arch: LlmArch, mem: FinetuneMemory, seq: int) -> tuple[float, float]:
    """Training FLOPs per token and their ratio to the forward's.

    The weight products cost 3x their forward (2x with a frozen base); attention has no
    weights, so its backward is whole whatever the method: 2.5x its forward
    (FlashAttention-2, arXiv:2307.08691, section 4.1: the backward does 5 products to
    the forward's 2), 3.5x in all; checkpointing adds one forward of both.
    """
    forward = arch.flops_per_token(max(1, seq // 2))
    attention = forward - arch.flops_per_token(0)
    matrices = forward - attention
    ratio = FULL_FLOP_RATIO if mem.method == "full" else FROZEN_FLOP_RATIO
    recompute = RECOMPUTE_FLOP_RATIO if mem.checkpointing else 0.0
    extra = 0.0 if mem.method == "full" else 6.0 * mem.trainable_params
    total = (ratio + recompute) * matrices + (ATTENTION_FLOP_RATIO + recompute) * attention
    total += extra
    return total, total / forward


def step_time(
    arch: LlmArch, mem: FinetuneMemory, req: FinetuneRequest, spec: DeviceSpec
) -> StepTime:
    """One step of one micro-batch per GPU, part by part."""
    prof = req.profile
    tokens = req.batch_size * req.seq_len
    peak, _ = spec.flops("bf16")
    flops, ratio = flops_per_token(arch, mem, req.seq_len)
    compute = tokens * flops / (peak * prof.fraction(gpu_class(spec)))
    bw = spec.effective_bandwidth
    passes = 3 + (1 if mem.checkpointing else 0)  # forward, backward (x2), recompute
    moved = tokens * arch.vocab * prof.logits_traffic_bytes
    kernels = arch.layers * prof.kernels_per_layer
    if mem.method != "full" and not prof.fused_lora:
        projs = _projections(arch, req.target_modules)
        moved += tokens * arch.layers * passes * sum(6 * i + 8 * o for i, o in projs)
        kernels += arch.layers * LORA_KERNELS * len(projs)
    if mem.method == "qlora":
        nf4 = find_format("nf4").bits_per_weight
        expand = passes - 1  # the backward's two products share one expansion
        moved += expand * arch.body_matrix_params(arch.experts) * (nf4 / 8 + 2)
    shards = req.shards if req.stage >= 1 else 1
    on_gpu_step = req.optimizer != "paged_adamw8bit" and not req.offload
    if on_gpu_step:
        moved += mem.trainable_params * STEP_BYTES[req.optimizer] / shards
    overhead = passes * kernels * prof.kernel_us * 1e-6
    return StepTime(
        compute_s=compute,
        memory_s=moved / bw,
        overhead_s=overhead,
        comm_s=_comm_seconds(arch, mem, req, spec) + _paging_seconds(mem, req, overlapped=True),
        offload_s=_offload_seconds(arch, mem, req) + _paging_seconds(mem, req, overlapped=False),
        flops_per_token=flops,
        flop_ratio=ratio,
    )


def _link(spec: DeviceSpec) -> float:
    link = spec.link_bytes_s or DEFAULT_LINK_BYTES_S
    return link / 2 if gpu_class(spec) == "consumer" else link


def _comm_seconds(
    arch: LlmArch, mem: FinetuneMemory, req: FinetuneRequest, spec: DeviceSpec
) -> float:
    n = req.gpus
    if n <= 1:
        return 0.0
    share = (n - 1) / n
    grads = 2.0 * mem.trainable_params
    if req.stage >= 3:
        gathers = 3 if mem.checkpointing else 2
        weights = 2.0 * arch.params_total
        volume = gathers * weights + grads
    elif req.stage >= 1:
        volume = grads + grads  # reduce-scatter, then all-gather the updated weights
    else:
        volume = 2 * grads  # ring all-reduce
    return volume * share / _link(spec)


def _paging_seconds(mem: FinetuneMemory, req: FinetuneRequest, *, overlapped: bool) -> float:
    """A paged 8-bit optimizer's state read in and written back over PCIe each step;
    with the optimizer in the backward it pages while the backward computes (overlapped)."""
    if req.optimizer != "paged_adamw8bit":
        return 0.0
    in_backward = req.profile.optimizer_in_backward and mem.method == "full" and req.gpus == 1
    if in_backward != overlapped:
        return 0.0
    per_gpu = mem.trainable_params / (req.shards if req.stage >= 1 else 1)
    return 2 * 2.0 * per_gpu / HOST_LINK_BYTES_S


def _offload_seconds(arch: LlmArch, mem: FinetuneMemory, req: FinetuneRequest) -> float:
    """PCIe traffic and the CPU optimizer of an offloaded or paged optimizer."""
    seconds = 0.0
    if req.profile.offload_checkpoints and mem.checkpointing:
        # Layer inputs out in the forward and back in the backward, mostly overlapped:
        # counted once.
        seconds += arch.layers * 2 * arch.hidden * req.seq_len * req.batch_size / HOST_LINK_BYTES_S
    per_gpu = mem.trainable_params / (req.shards if req.stage >= 1 else 1)
    if req.offload:
        seconds += 2 * 2.0 * per_gpu / HOST_LINK_BYTES_S  # gradients out, weights in
        seconds += per_gpu * CPU_ADAM_BYTES * req.gpus / HOST_MEMORY_BYTES_S
        if req.stage >= 3:
            passes = 3 if mem.checkpointing else 2
            seconds += passes * 2.0 * arch.params_total / req.shards / HOST_LINK_BYTES_S
    return seconds
