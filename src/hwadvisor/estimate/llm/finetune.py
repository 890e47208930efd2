"""Fine-tuning a language model on one GPU or several: memory from
:mod:`hwadvisor.llm.finetune`, time from :mod:`.finetune_time`, and, when it does not
fit, the fixes in order (:mod:`.finetune_fixes`), each priced, the first that fits the plan.

The answers people ask for ride on the row: the longest sequence that fits one GPU at
micro-batch 1, the largest micro-batch at ``--seq-len``, and the hours of
``--dataset-size`` examples of ``--seq-len`` tokens (packed data: every example full).
"""

from __future__ import annotations

from hwadvisor.estimate.llm.finetune_fixes import (
    STRATEGY_LABEL,
    fits,
    fix_ladder,
    fix_text,
    priced,
)
from hwadvisor.estimate.llm.finetune_time import flops_per_token, step_time
from hwadvisor.estimate.llm.target import LlmDevice
from hwadvisor.estimate.timing.scaling import total_time
from hwadvisor.estimate.workload.llm_shape import arch_of
from hwadvisor.llm import FinetuneMemory, FinetuneRequest, LlmArch, finetune_memory
from hwadvisor.llm.finetune import largest_micro_batch, longest_sequence
from hwadvisor.models.estimate import DeviceEstimate, MemoryBreakdown, MemoryFix, MultiGpuPlan
from hwadvisor.models.llm import FinetuneFigures, FinetuneOption
from hwadvisor.models.workload import Checkpointing, LoraTargets, Offload, Workload

_LABEL = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def base_request(wl: Workload, gpus: int = 1, method: str | None = None) -> FinetuneRequest:
    """The llm package's request for ``wl`` as said (checkpointing as said or the
    method's default; the strategy as said, else single on one GPU and DDP on several)."""
    said = wl.checkpointing
    ckpt = None if said in (None, Checkpointing.AUTO) else said is Checkpointing.ON
    strategy = wl.strategy.value if wl.strategy is not None else ("ddp" if gpus > 1 else "single")
    return FinetuneRequest(
        method=method or (wl.method.value if wl.method else "lora"),
        lora_rank=wl.lora_rank,
        target_modules="all-linear" if wl.lora_targets is LoraTargets.ALL_LINEAR else "attention",
        batch_size=wl.batch_size,
        seq_len=wl.seq_len or 2048,
        gradient_checkpointing=ckpt,
        optimizer=wl.optimizer.value,
        framework=wl.framework.value if wl.framework else None,
        gpus=gpus,
        strategy=strategy if gpus > 1 else "single",
        offload=wl.offload is Offload.CPU,
    )


def request_for(
    wl: Workload, arch: LlmArch, capacity: float | None, gpus: int = 1
) -> FinetuneRequest:
    """The request as run: ``--checkpointing auto`` turns it on when that is what makes
    the job fit (``capacity``: the usable bytes of one GPU; when nothing fits it stays
    off and the fixes start with it); several GPUs without ``--strategy`` use DDP when one GPU holds the job,
    else FSDP."""
    req = base_request(wl, gpus)
    if capacity is None:
        return req
    if wl.strategy is None and gpus > 1 and finetune_memory(arch, req).total_bytes > capacity:
        req = req.but(strategy="fsdp")
    auto = wl.checkpointing in (None, Checkpointing.AUTO)
    if auto and not req.checkpointing and finetune_memory(arch, req).total_bytes > capacity:
        on = req.but(gradient_checkpointing=True)
        if finetune_memory(arch, on).total_bytes <= capacity:
            req = on
    return req


def finetune_estimate(wl: Workload, target: LlmDevice) -> DeviceEstimate:
    """Memory, time, answers and fixes of fine-tuning ``wl`` on ``target``."""
    assert wl.llm is not None
    arch = arch_of(wl.llm)
    cap = float(target.device_memory_bytes) if target.device_memory_bytes else None
    gpus = target.gpus
    req = request_for(wl, arch, cap, gpus)
    mem = finetune_memory(arch, req)
    fit = fits(int(mem.total_bytes), target.device_memory_bytes)
    timing = step_time(arch, mem, req, target.spec) if target.spec is not None else None
    step = timing.total_s if timing is not None else None
    notes = [*wl.assumptions, *target.notes, *_notes(wl, mem, req, timing)]
    if step is None:
        notes.append(f"{target.device}: speed unknown: time unknown")
    if fit is not None:
        notes.append(
            ("fits" if fit else "does not fit")
            + " (the CUDA context and the allocator's reserve counted)"
        )
    options = fix_ladder(wl, arch, req, target) if fit is False else []
    strategy = STRATEGY_LABEL[req.strategy]
    breakdown = MemoryBreakdown(
        weights_bytes=int(mem.weights_bytes + mem.adapter_bytes),
        gradients_bytes=int(mem.gradient_bytes),
        optimizer_bytes=int(mem.optimizer_bytes),
        activations_bytes=int(mem.activation_bytes + mem.logits_bytes),
        runtime_bytes=int(mem.runtime_bytes + mem.reserve_bytes),
        total_bytes=int(mem.total_bytes),
    )
    tokens_step = req.batch_size * req.seq_len * gpus
    total = total_time(wl, step, req.batch_size * gpus)
    usable = cap
    figures = FinetuneFigures(
        method=mem.method,
        lora_rank=None if mem.method == "full" else req.lora_rank,
        lora_targets=None if mem.method == "full" else wl.lora_targets.value,
        strategy=strategy,
        trainable_params=mem.trainable_params,
        adapter_bytes=int(mem.adapter_bytes),
        checkpointing=mem.checkpointing,
        flops_per_token=timing.flops_per_token if timing else _flops(arch, mem, req),
        flop_ratio=timing.flop_ratio if timing else 0.0,
        tokens_per_s=tokens_step / step if step else None,
        options=options,
        framework=req.profile.id,
        optimizer=req.optimizer,
        offload=req.offload,
        live_bytes=int(mem.live_bytes),
        logits_bytes=int(mem.logits_bytes),
        host_bytes=int(mem.host_bytes),
        longest_seq_batch1=longest_sequence(arch, req, usable) if usable else None,
        largest_micro_batch=largest_micro_batch(arch, req, usable) if usable else None,
        dataset_tokens=_dataset_tokens(wl, req),
        hours=total / 3600 if total is not None else None,
    )
    notes.extend(_answers(figures, req))
    plan = _plan(wl, target, breakdown, options, gpus if fit else None, strategy, step, total)
    fits_planned, planned_reason = _planned(fit, options, gpus)
    return DeviceEstimate(
        fits_planned=fits_planned,
        planned_reason=planned_reason,
        device=target.device,
        name=target.name,
        gpus=gpus,
        plan=plan,
        step_time_s=step,
        total_time_s=total,
        throughput_samples_s=req.batch_size * gpus / step if step else None,
        memory_bytes=int(mem.total_bytes),
        device_memory_bytes=target.device_memory_bytes,
        fits=fit,
        memory=breakdown,
        fixes=[
            MemoryFix(fix=o.fix or fix_text(o, wl), memory_bytes=o.memory_bytes, fits=o.fits)
            for o in options
        ],
        basis=target.basis,
        assumptions=notes,
        finetune=figures,
    )


def _flops(arch: LlmArch, mem: FinetuneMemory, req: FinetuneRequest) -> float:
    return flops_per_token(arch, mem, req.seq_len)[0]


def _planned(
    fit: bool | None, options: list[FinetuneOption], gpus: int
) -> tuple[bool | None, str | None]:
    """The job as recommended on this row's GPUs: as written, or with the fixes up to the
    first that fits there (a sharding over more GPUs than the row has does not count)."""
    if fit is None:
        return None, None
    if fit:
        return True, "fits as written"
    done: list[str] = []
    for o in options:
        if o.gpus > gpus:
            break
        done.append(o.fix or "")
        if o.fits:
            return True, "fits with " + ", ".join(done)
    where = "" if gpus == 1 else f" {gpus} GPUs"
    return False, f"does not fit{where}" + (", even with " + ", ".join(done) if done else "")


def _answers(ft: FinetuneFigures, req: FinetuneRequest) -> list[str]:
    """The answers of the row in words (the terminal lists the assumptions)."""
    out = []
    if ft.longest_seq_batch1 is not None:
        out.append(
            f"longest sequence that fits one GPU at micro-batch 1: {ft.longest_seq_batch1:,} tokens; "
            f"largest micro-batch at {req.seq_len} tokens: {ft.largest_micro_batch}"
        )
    if ft.dataset_tokens is not None and ft.hours is not None:
        out.append(f"{ft.dataset_tokens:,} tokens of data: {ft.hours:.3g} h on these GPUs")
    return out


def _dataset_tokens(wl: Workload, req: FinetuneRequest) -> int | None:
    if wl.dataset_size is None:
        return None
    return int(wl.dataset_size * req.seq_len * wl.epochs)


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
    """The plan: the row's GPUs where they hold the job as written (``gpus`` > 1), else
    the first fix of the ladder that fits, with the fixes up to it."""
    name = target.name or target.device
    batch = wl.batch_size
    text = f"{gpus} × {name} with {strategy}"
    if gpus is None or gpus == 1:
        index = next((i for i, o in enumerate(options) if o.fits), None)
        if index is None or gpus == 1:
            return None
        first = options[index]
        gpus, strategy = first.gpus, first.strategy
        step, total = first.step_time_s, first.total_time_s
        batch = first.batch_size or batch
        breakdown = MemoryBreakdown(weights_bytes=0, total_bytes=first.memory_bytes)
        fixes = ", ".join(o.fix or fix_text(o, wl) for o in options[: index + 1])
        text = f"{gpus} × {name} with {fixes}"
    return MultiGpuPlan(
        device=target.device, name=name, gpus=gpus, strategy=strategy, memory=breakdown,
        fits=True, plan=text, precision=wl.precision.value,
        batch_per_gpu=batch, step_time_s=step, total_time_s=total,
        throughput_samples_s=batch * gpus / step if step else None,
    )  # fmt: skip


def _notes(wl: Workload, mem: FinetuneMemory, req: FinetuneRequest, timing: object) -> list[str]:
    label = _LABEL[mem.method]
    prof = req.profile
    ratio = getattr(timing, "flop_ratio", None)
    notes = [
        f"{label}: {mem.trainable_params:,} trainable parameters"
        + (f" (rank {req.lora_rank} on {req.target_modules})" if mem.method != "full" else ""),
        f"framework {prof.id} ({prof.name}): "
        + ("fused attention" if req.fused else "eager attention (s² scores stored)")
        + f", {prof.logits_bytes:g} bytes per token and vocabulary entry for the logits and loss"
        + (", packed sequences" if prof.packing else "")
        + (", torch.compile" if prof.compile else ""),
        f"optimizer {req.optimizer}; activation checkpointing "
        + ("on" if mem.checkpointing else "off")
        + (
            " (auto: on to fit)"
            if mem.checkpointing
            and wl.checkpointing in (None, Checkpointing.AUTO)
            and req.method != "qlora"
            else ""
        ),
    ]
    if ratio is not None:
        notes.append(
            f"{ratio:.2f} x the forward FLOPs per token ("
            + ("3: forward + backward" if mem.method == "full" else "2: the frozen base needs no weight gradients")
            + (", +1 recomputed forward (activation checkpointing)" if mem.checkpointing else "")
            + ")"
        )  # fmt: skip
    notes.extend(mem.notes)
    if req.gpus > 1:
        notes.append(f"{req.gpus} GPUs with {STRATEGY_LABEL[req.strategy]}")
    return notes


__all__ = ["FinetuneOption", "base_request", "finetune_estimate", "priced", "request_for"]
