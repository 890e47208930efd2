"""Does a served model fit: weights + KV cache at the context x concurrency + runtime.

Per GPU of a tensor-parallel group of ``tp``: the weight shards (weights / tp), the KV
cache of the KV heads it holds (kv_heads / tp of them; a head is replicated when tp
exceeds kv_heads), the activations of one forward pass, the engine's runtime (CUDA
context and workspaces) and, when tp > 1, the communication buffers of the all-reduces.
The budget is the device's usable memory x the engine's memory utilization (vLLM takes
90% of the GPU by default and no more); TensorRT-LLM takes its share of the memory left
after the weights instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.device import DeviceSpec, runtime_bytes
from hwadvisor.llm.engines import Engine
from hwadvisor.llm.formats import QuantFormat

#: NCCL and custom all-reduce buffers per GPU of a tensor-parallel group.
COMM_BUFFER_BYTES = 1 << 30
COMM_BUFFER_SOURCE = (
    "vllm-project/vllm PR #45517: NCCL's workspace is about 1-2 GiB on rank 0 of a "
    "tensor-parallel group, outside the weights; 1 GiB per GPU assumed (vllm PR #2031: "
    "not counting it ran out of memory)"
)
#: Tensor-parallel sizes tried, as engines require a power of two dividing the heads.
TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class MemoryFit:
    """Memory per GPU of a served model, and how many sequences of the context fit."""

    tp: int
    weights_bytes: float
    kv_bytes_per_sequence: float
    kv_bytes: float
    activation_bytes: float
    runtime_bytes: float
    comm_bytes: float
    budget_bytes: float
    max_concurrency: int

    @property
    def total_bytes(self) -> float:
        """What one GPU holds at the requested concurrency."""
        fixed = self.weights_bytes + self.activation_bytes + self.runtime_bytes
        return fixed + self.comm_bytes + self.kv_bytes

    @property
    def fits(self) -> bool:
        """True when the total is within the budget."""
        return self.total_bytes <= self.budget_bytes


def kv_share(arch: LlmArch, tp: int) -> float:
    """The share of the KV cache one GPU of ``tp`` holds (a KV head is never split)."""
    return max(1 / tp, 1 / arch.kv_heads)


def activation_bytes(arch: LlmArch, engine: Engine, tokens: int, sequences: int) -> float:
    """Buffers of one forward pass: 16-bit hidden, q/k/v/o and MLP intermediates of the
    tokens of one micro-batch, plus fp32 logits of each sequence's last token."""
    width = 4 * arch.hidden + 2 * (arch.expert_intermediate or arch.intermediate)
    return tokens * width * 2 + sequences * arch.vocab * 4


def memory_fit(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    *,
    context: int,
    concurrency: int = 1,
    prompt_tokens: int = 512,
    tp: int = 1,
    kv_bytes_per_element: float = 2,
) -> MemoryFit:
    """The memory of serving ``concurrency`` sequences of ``context`` tokens on ``tp`` GPUs."""
    if context <= 0 or concurrency <= 0 or tp <= 0:
        raise UsageError("context, concurrency and GPU count must be positive")
    kv_seq = arch.kv_cache_bytes(context, kv_bytes_per_element) * kv_share(arch, tp)
    tokens = engine.micro_batch or max(1, prompt_tokens) * concurrency
    tokens = min(tokens, context * concurrency)
    act = activation_bytes(arch, engine, tokens, concurrency) / tp
    weights = fmt.weight_bytes(arch) / tp
    comm = COMM_BUFFER_BYTES if tp > 1 else 0.0
    runtime = runtime_bytes(device.kind)
    if engine.kv_share_of_free:
        # The engine takes its share of what is left once weights and buffers are in.
        free = device.usable_memory - weights - act - runtime - comm
        room = free * engine.memory_utilization
        budget = weights + act + runtime + comm + room
    else:
        budget = device.usable_memory * engine.memory_utilization
        room = budget - weights - act - runtime - comm
    return MemoryFit(
        tp=tp,
        weights_bytes=weights,
        kv_bytes_per_sequence=kv_seq,
        kv_bytes=kv_seq * concurrency,
        activation_bytes=act,
        runtime_bytes=float(runtime),
        comm_bytes=float(comm),
        budget_bytes=budget,
        max_concurrency=max(0, math.floor(room / kv_seq)) if kv_seq > 0 else 0,
    )


def smallest_fit(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    *,
    context: int,
    concurrency: int = 1,
    prompt_tokens: int = 512,
    max_gpus: int = 8,
    kv_bytes_per_element: float = 2,
) -> MemoryFit | None:
    """The fewest GPUs (1, 2, 4, 8; dividing the heads) that hold it, or None."""
    for tp in TP_SIZES:
        if tp > max_gpus or arch.heads % tp:
            continue
        fit = memory_fit(
            arch,
            fmt,
            engine,
            device,
            context=context,
            concurrency=concurrency,
            prompt_tokens=prompt_tokens,
            tp=tp,
            kv_bytes_per_element=kv_bytes_per_element,
        )
        if fit.fits:
            return fit
    return None
