"""Fine-tuning a language model on one device: memory from :mod:`hwadvisor.llm.finetune`,
time from the FLOPs per token, and lighter options when it does not fit.

Time per step (one micro-batch of ``batch x seq`` tokens per GPU):

- **compute**: tokens x training FLOPs per token / (16-bit peak x achieved GEMM fraction).
  A forward pass costs ``F = 2 x active parameters + attention`` per token
  (``LlmArch.flops_per_token`` at the mean position). Full fine-tuning costs ``3F``: the
  backward pass computes the gradients with respect to the inputs and to the weights, each
  as many FLOPs as the forward (Kaplan et al., arXiv:2001.08361, section 2.1: C = 6N per
  token). LoRA and QLoRA freeze the base, so the weight-gradient products are skipped:
  ``2F`` plus ``6`` FLOPs per adapter parameter (LoRA, arXiv:2106.09685, section 4.2:
  no gradients for the frozen weights; they measure 25% faster training than full
  fine-tuning of GPT-3 175B). Gradient checkpointing recomputes the forward once more:
  ``+F`` (Chen et al., arXiv:1604.06174; Korthikanti et al., arXiv:2205.05198, section 5:
  full recomputation adds about a third, 8/6). QLoRA always checkpoints.
- **QLoRA dequantization**: the NF4 base is expanded to bf16 for each of the forward,
  the recomputed forward and the backward: ``3 x base parameters x (bits/8 + 2)`` bytes
  over the achieved bandwidth.
- **optimizer**: AdamW reads the gradient (2 bytes), the fp32 master weight and two
  moments (12) and writes them back with the 16-bit weight (14): 28 bytes per trainable
  parameter over the achieved bandwidth.
- **several GPUs**: DDP all-reduces the 16-bit gradients (``2 x 2(n-1)/n`` bytes per
  trainable parameter); FSDP (ZeRO-3) all-gathers the 16-bit weights for the forward and
  the backward and reduce-scatters the gradients (ZeRO, arXiv:1910.02054, section 7:
  3 x the parameters per step), over the catalog's interconnect, not overlapped with
  compute (an upper bound).
"""

from __future__ import annotations

from hwadvisor.estimate.llm.target import LlmDevice
from hwadvisor.estimate.memory.parts import fits
from hwadvisor.estimate.timing.scaling import total_time
from hwadvisor.estimate.workload.llm_shape import arch_of
from hwadvisor.llm import FinetuneMemory, FinetuneRequest, LlmArch, find_format, finetune_memory
from hwadvisor.llm.finetune import lighter_methods
from hwadvisor.models.estimate import DeviceEstimate, MemoryBreakdown, MemoryFix, MultiGpuPlan
from hwadvisor.models.llm import FinetuneFigures, FinetuneOption
from hwadvisor.models.workload import LoraTargets, Task, Workload

#: Training FLOPs per token as a multiple of the forward's (see the module docstring).
FULL_FLOP_RATIO = 3.0
FROZEN_FLOP_RATIO = 2.0
RECOMPUTE_FLOP_RATIO = 1.0
#: AdamW step bytes per trainable parameter (read 2 + 12, write 12 + 2).
ADAMW_STEP_BYTES = 28
#: Link rate when the catalog names none (PCIe 4.0 x16, 32 GB/s per direction).
DEFAULT_LINK_BYTES_S = 32e9
#: GPU counts sharding is tried over when the job does not fit one GPU.
SHARD_COUNTS = (2, 4, 8)
_LABEL = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def request_for(wl: Workload, method: str | None = None) -> FinetuneRequest:
    """The llm package's request for ``wl`` (``method`` overrides the workload's)."""
    return FinetuneRequest(
        method=method or (wl.method.value if wl.method else "lora"),
        lora_rank=wl.lora_rank,
        target_modules="all-linear" if wl.lora_targets is LoraTargets.ALL_LINEAR else "attention",
        batch_size=wl.batch_size,
        seq_len=wl.seq_len or 2048,
    )


def flops_per_token(arch: LlmArch, mem: FinetuneMemory, seq: int) -> tuple[float, float]:
    """Training FLOPs per token and their ratio to the forward's."""
    forward = arch.flops_per_token(max(1, seq // 2))
    ratio = FULL_FLOP_RATIO if mem.method == "full" else FROZEN_FLOP_RATIO
    if mem.checkpointing:
        ratio += RECOMPUTE_FLOP_RATIO
    extra = 0.0 if mem.method == "full" else 6.0 * mem.trainable_params
    return ratio * forward + extra, ratio + extra / forward


def _placement(mem: FinetuneMemory, gpus: int, device_memory: int | None) -> tuple[str, float]:
    """Strategy and bytes per GPU: one GPU; DDP when it fits one; else FSDP (ZeRO-3)."""
    if gpus <= 1:
        return "single", mem.total_bytes
    if fits(int(mem.total_bytes), device_memory):
        return "DDP", mem.total_bytes
    return "FSDP (ZeRO-3)", mem.sharded_total(gpus)


def step_seconds(
    arch: LlmArch,
    mem: FinetuneMemory,
    req: FinetuneRequest,
    target: LlmDevice,
    gpus: int,
    strategy: str,
) -> float | None:
    """Seconds of one step of one micro-batch per GPU; None when the speed is unknown."""
    spec = target.spec
    if spec is None:
        return None
    peak, _ = spec.flops("bf16")
    flops, _ = flops_per_token(arch, mem, req.seq_len)
    seconds = req.batch_size * req.seq_len * flops / (peak * spec.gemm_fraction)
    bandwidth = spec.effective_bandwidth
    shards = gpus if "FSDP" in strategy else 1
    seconds += mem.trainable_params * ADAMW_STEP_BYTES / shards / bandwidth
    if mem.method == "qlora":
        nf4 = find_format("nf4").bits_per_weight
        seconds += 3 * arch.body_matrix_params(arch.experts) * (nf4 / 8 + 2) / bandwidth
    if gpus > 1:
        link = spec.link_bytes_s or DEFAULT_LINK_BYTES_S
        grads = mem.trainable_params * 2
        if "FSDP" in strategy:
            weights = 2.0 * arch.params_total
            seconds += (2 * weights + grads) * (gpus - 1) / gpus / link
        else:
            seconds += grads * 2 * (gpus - 1) / gpus / link
    return seconds


def _priced(
    wl: Workload, arch: LlmArch, mem: FinetuneMemory, target: LlmDevice, gpus: int
) -> FinetuneOption:
    req = request_for(wl, mem.method)
    strategy, per_gpu = _placement(mem, gpus, target.device_memory_bytes)
    step = step_seconds(arch, mem, req, target, gpus, strategy)
    return FinetuneOption(
        method=mem.method,
        gpus=gpus,
        strategy=strategy,
        memory_bytes=int(per_gpu),
        fits=bool(fits(int(per_gpu), target.device_memory_bytes)),
        step_time_s=step,
        total_time_s=total_time(wl, step, wl.batch_size * gpus),
    )


def finetune_options(
    wl: Workload, arch: LlmArch, mem: FinetuneMemory, target: LlmDevice
) -> list[FinetuneOption]:
    """LoRA, then QLoRA (lighter than the method asked), then the fewest GPUs that shard it."""
    # Lighter methods (LoRA, QLoRA) change a fine-tuning job, not a training one.
    lighter = lighter_methods(arch, request_for(wl)) if wl.task is Task.FINETUNE else []
    out = [_priced(wl, arch, m, target, target.gpus) for m in lighter]
    if target.gpu and target.gpus == 1:
        for n in SHARD_COUNTS:
            if fits(int(mem.sharded_total(n)), target.device_memory_bytes):
                out.append(_priced(wl, arch, mem, target, n))
                break
    return out


def _plan(
    wl: Workload,
    target: LlmDevice,
    breakdown: MemoryBreakdown,
    options: list[FinetuneOption],
    gpus: int | None,
    strategy: str,
    step: float | None,
    total: float | None,
) -> MultiGpuPlan | None:
    """The plan of several GPUs: those of the row where they hold the job (``gpus``), else
    the fewest a sharding option of the same method needs."""
    name = target.name or target.device
    batch = wl.batch_size
    if gpus is None or gpus == 1:
        method = wl.method.value if wl.method else "full"
        shard = next((o for o in options if o.gpus > 1 and o.fits and o.method == method), None)
        if shard is None or gpus == 1:
            return None
        gpus, strategy = shard.gpus, shard.strategy
        step, total = shard.step_time_s, shard.total_time_s
        breakdown = MemoryBreakdown(weights_bytes=0, total_bytes=shard.memory_bytes)
    return MultiGpuPlan(
        device=target.device, name=name, gpus=gpus, strategy=strategy, memory=breakdown,
        fits=True, plan=f"{gpus} × {name} with {strategy}", precision=wl.precision.value,
        batch_per_gpu=batch, step_time_s=step, total_time_s=total,
        throughput_samples_s=batch * gpus / step if step else None,
    )  # fmt: skip


def _fix_text(o: FinetuneOption, wl: Workload) -> str:
    if o.strategy.startswith("FSDP") and o.gpus > 1:
        return f"{_LABEL[o.method]} sharded over {o.gpus} GPUs with FSDP (ZeRO-3)"
    if o.method == "qlora":
        return f"QLoRA (NF4 base, rank {wl.lora_rank})"
    return f"LoRA (rank {wl.lora_rank}, 16-bit base)"


def finetune_estimate(wl: Workload, target: LlmDevice) -> DeviceEstimate:
    """Memory, time and lighter options of fine-tuning ``wl`` on ``target``."""
    assert wl.llm is not None
    arch = arch_of(wl.llm)
    req = request_for(wl)
    mem = finetune_memory(arch, req)
    gpus = target.gpus
    strategy, per_gpu = _placement(mem, gpus, target.device_memory_bytes)
    fit = fits(int(per_gpu), target.device_memory_bytes)
    step = step_seconds(arch, mem, req, target, gpus, strategy)
    flops, ratio = flops_per_token(arch, mem, req.seq_len)
    notes = [*wl.assumptions, *target.notes, *_notes(mem, req, ratio, strategy, gpus)]
    if step is None:
        notes.append(f"{target.device}: speed unknown: time unknown")
    if fit is not None:
        notes.append("fits with 10% headroom" if fit else "does not fit with 10% headroom")
    options = finetune_options(wl, arch, mem, target) if fit is False else []
    shard = gpus if strategy.startswith("FSDP") else 1
    breakdown = MemoryBreakdown(
        weights_bytes=int((mem.weights_bytes + mem.adapter_bytes) / shard),
        gradients_bytes=int(mem.gradient_bytes / shard),
        optimizer_bytes=int(mem.optimizer_bytes / shard),
        activations_bytes=int(mem.activation_bytes),
        runtime_bytes=int(mem.runtime_bytes),
        total_bytes=int(per_gpu),
    )
    tokens = req.batch_size * req.seq_len * gpus
    figures = FinetuneFigures(
        method=mem.method,
        lora_rank=None if mem.method == "full" else req.lora_rank,
        lora_targets=None if mem.method == "full" else wl.lora_targets.value,
        strategy=strategy,
        trainable_params=mem.trainable_params,
        adapter_bytes=int(mem.adapter_bytes),
        checkpointing=mem.checkpointing,
        flops_per_token=flops,
        flop_ratio=ratio,
        tokens_per_s=tokens / step if step else None,
        options=options,
    )
    total = total_time(wl, step, wl.batch_size * gpus)
    plan = _plan(wl, target, breakdown, options, gpus if fit else None, strategy, step, total)
    return DeviceEstimate(
        device=target.device,
        name=target.name,
        gpus=gpus,
        plan=plan,
        step_time_s=step,
        total_time_s=total,
        throughput_samples_s=req.batch_size * gpus / step if step else None,
        memory_bytes=int(per_gpu),
        device_memory_bytes=target.device_memory_bytes,
        fits=fit,
        memory=breakdown,
        fixes=[
            MemoryFix(fix=_fix_text(o, wl), memory_bytes=o.memory_bytes, fits=o.fits)
            for o in options
        ],
        basis=target.basis,
        assumptions=notes,
        finetune=figures,
    )


def _notes(
    mem: FinetuneMemory, req: FinetuneRequest, ratio: float, strategy: str, gpus: int
) -> list[str]:
    label = _LABEL[mem.method]
    notes = [
        f"{label}: {mem.trainable_params:,} trainable parameters"
        + (f" (rank {req.lora_rank} on {req.target_modules})" if mem.method != "full" else ""),
        f"{ratio:.2f} x the forward FLOPs per token ("
        + (
            "3: forward + backward"
            if mem.method == "full"
            else "2: the frozen base needs no weight gradients"
        )
        + (", +1 recomputed forward (gradient checkpointing)" if mem.checkpointing else "")
        + ")",
    ]
    if gpus > 1:
        notes.append(f"{gpus} GPUs with {strategy}")
    return notes
