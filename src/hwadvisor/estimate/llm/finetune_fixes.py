"""When fine-tuning does not fit: the fixes in order, cumulative, each priced.

The order trades the least for the most memory first (what a practitioner tries):

1. activation checkpointing (about a third more compute: one more forward);
2. a smaller micro-batch with gradient accumulation (same optimizer step, less overlap);
3. an 8-bit optimizer, then the paged 8-bit one (its state in host memory);
4. LoRA, then QLoRA (fine-tuning only: training a language model stays full);
5. sharding over 2, 4 or 8 GPUs with FSDP (the fewest that hold it);
6. CPU offload of the optimizer (and with FSDP the parameters).

Each step keeps the ones before; the list stops at the first that fits, the plan. On a
device without CUDA there is no 8-bit optimizer, no sharding and no offload.
"""

from __future__ import annotations

import math

from hwadvisor.estimate.llm.finetune_time import step_time
from hwadvisor.estimate.llm.target import LlmDevice
from hwadvisor.estimate.timing.scaling import total_time
from hwadvisor.llm import FinetuneRequest, LlmArch, finetune_memory
from hwadvisor.llm.finetune import largest_micro_batch
from hwadvisor.models.llm import FinetuneOption
from hwadvisor.models.workload import Task, Workload

#: GPU counts sharding is tried over when the job does not fit one GPU.
SHARD_COUNTS = (2, 4, 8)
#: Strategy names as the row states them.
STRATEGY_LABEL = {
    "single": "single",
    "ddp": "DDP",
    "zero1": "ZeRO-1",
    "zero2": "ZeRO-2",
    "zero3": "FSDP (ZeRO-3)",
    "fsdp": "FSDP (ZeRO-3)",
}


def fits(total: int | None, device_bytes: int | None) -> bool | None:
    """Whether ``total`` fits ``device_bytes``: the CUDA context and the allocator's
    reserve are parts of the total, so no headroom is added on top; None when unknown."""
    if total is None or device_bytes is None:
        return None
    return total <= device_bytes


_LABEL = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def priced(
    wl: Workload, arch: LlmArch, req: FinetuneRequest, target: LlmDevice, fix: str
) -> FinetuneOption:
    """``req`` on ``target``: memory per GPU, fit, step and total time, as one option."""
    mem = finetune_memory(arch, req)
    step = step_time(arch, mem, req, target.spec).total_s if target.spec is not None else None
    accumulation = max(1, math.ceil(wl.batch_size / req.batch_size))
    return FinetuneOption(
        method=req.method,
        gpus=req.gpus,
        strategy=STRATEGY_LABEL[req.strategy],
        memory_bytes=int(mem.total_bytes),
        fits=bool(fits(int(mem.total_bytes), target.device_memory_bytes)),
        step_time_s=step,
        total_time_s=total_time(wl, step, req.batch_size * req.gpus),
        fix=fix,
        checkpointing=req.checkpointing,
        batch_size=req.batch_size,
        grad_accumulation=accumulation,
        optimizer=req.optimizer,
        offload=req.offload,
    )


def fix_ladder(
    wl: Workload, arch: LlmArch, req: FinetuneRequest, target: LlmDevice
) -> list[FinetuneOption]:
    """The fixes that apply, cumulative, priced, up to the first that fits."""
    out: list[FinetuneOption] = []
    for text, nxt in _steps(wl, arch, req, target):
        req = nxt
        option = priced(wl, arch, req, target, text)
        out.append(option)
        if option.fits:
            break
    return out


def _steps(
    wl: Workload, arch: LlmArch, req: FinetuneRequest, target: LlmDevice
) -> list[tuple[str, FinetuneRequest]]:
    """Each fix with the request it leads to (built lazily in order, cumulative)."""
    steps: list[tuple[str, FinetuneRequest]] = []
    cur = req
    usable = target.device_memory_bytes
    if not cur.checkpointing:
        cur = cur.but(gradient_checkpointing=True)
        steps.append(("activation checkpointing", cur))
    if cur.batch_size > 1:
        fitting = largest_micro_batch(arch, cur, usable) if usable else 0
        micro = max(1, min(cur.batch_size - 1, fitting))
        cur = cur.but(batch_size=micro)
        accumulation = math.ceil(wl.batch_size / micro)
        steps.append(
            (f"micro-batch {micro} with {accumulation} steps of gradient accumulation", cur)
        )
    if target.gpu and cur.optimizer == "adamw":
        cur = cur.but(optimizer="adamw8bit")
        steps.append(("8-bit AdamW (bitsandbytes)", cur))
    if target.gpu and cur.optimizer == "adamw8bit":
        cur = cur.but(optimizer="paged_adamw8bit")
        steps.append(("paged 8-bit AdamW (state in host memory)", cur))
    if wl.task is Task.FINETUNE:
        if cur.method == "full":
            cur = cur.but(method="lora")
            steps.append((f"LoRA (rank {cur.lora_rank}, 16-bit base)", cur))
        if cur.method == "lora":
            cur = cur.but(method="qlora")
            steps.append((f"QLoRA (NF4 base, rank {cur.lora_rank})", cur))
    if target.gpu and target.gpus == 1:
        for n in SHARD_COUNTS:
            shard = cur.but(gpus=n, strategy="fsdp")
            total = finetune_memory(arch, shard).total_bytes
            if fits(int(total), target.device_memory_bytes) or n == SHARD_COUNTS[-1]:
                cur = shard
                steps.append(
                    (f"{_LABEL[cur.method]} sharded over {n} GPUs with FSDP (ZeRO-3)", cur)
                )
                break
    if target.gpu and not cur.offload:
        cur = cur.but(offload=True)
        steps.append(
            ("CPU offload of the optimizer" + (" and parameters" if cur.stage >= 3 else ""), cur)
        )
    return steps


def fix_text(o: FinetuneOption, wl: Workload) -> str:
    """Words for an option that carries none."""
    if o.gpus > 1:
        return f"{_LABEL[o.method]} sharded over {o.gpus} GPUs with {o.strategy}"
    if o.method == "qlora":
        return f"QLoRA (NF4 base, rank {wl.lora_rank})"
    return f"LoRA (rank {wl.lora_rank}, 16-bit base)"
