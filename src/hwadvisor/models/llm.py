"""What an estimate says about serving or fine-tuning a language model on one device.

``DeviceEstimate.serving`` (``--task serve``) and ``DeviceEstimate.finetune``
(``--task finetune``) hold these; the physics is :mod:`hwadvisor.llm` (docs/llm.md).
"""

from __future__ import annotations

from pydantic import Field

from hwadvisor.models.common import Document


class ServingOption(Document):
    """A lighter weight format, or more GPUs, for a served model that does not fit; priced."""

    quant: str
    engine: str
    tp: int = Field(1, ge=1, description="GPUs the model is split over (tensor parallel)")
    weights_bytes: int = Field(ge=0, description="weights per GPU")
    memory_bytes: int = Field(ge=0, description="weights + KV cache + runtime per GPU")
    fits: bool
    decode_tokens_per_s: float | None = Field(None, description="one sequence")
    aggregate_tokens_per_s: float | None = Field(None, description="at the concurrency")
    max_concurrency: int = Field(ge=0)


class BatchingPoint(Document):
    """One concurrency of a continuous-batching curve, per replica (tp GPUs)."""

    concurrency: int = Field(ge=1)
    aggregate_tokens_per_s: float = Field(ge=0)
    ttft_s: float = Field(ge=0)
    itl_s: float = Field(ge=0)
    requests_per_s: float = Field(ge=0)
    fits: bool


class ServingFigures(Document):
    """Tokens/s, time to first token and memory of serving one model on one device."""

    engine: str
    quant: str
    tp: int = Field(1, ge=1, description="tensor-parallel GPUs per replica")
    replicas: int = Field(1, ge=1, description="copies of the model over --gpus (data parallel)")
    prefill_tokens_per_s: float | None = Field(
        None, description="prompt tokens per second (compute-bound)"
    )
    decode_tokens_per_s: float | None = Field(
        None, description="generated tokens per second of one sequence alone"
    )
    aggregate_tokens_per_s: float | None = Field(
        None,
        description="generated tokens per second of all sequences at --concurrency, all replicas",
    )
    ttft_s: float | None = Field(None, description="time to first token: prefill of the prompt")
    requests_per_s: float | None = Field(
        None, description="requests completed per second at --concurrency, all replicas"
    )
    kv_cache_bytes_per_token: float = Field(
        ge=0,
        description="KV cache per token at --context (sliding-window layers hold their window)",
    )
    kv_cache_bytes: int = Field(
        0, ge=0, description="KV cache per GPU at --context x --concurrency"
    )
    max_concurrency: int = Field(
        ge=0, description="sequences of --context that fit beside the weights and runtime"
    )
    memory_budget_bytes: int = Field(
        ge=0, description="what a GPU may hold: usable memory x the engine's memory utilization"
    )
    decode_bound: str | None = Field(None, description="memory or compute")
    concurrency: int | None = Field(
        None,
        description="the sequences decoded together these figures are at: --concurrency, or the one continuous batching chose (concurrency_chosen)",
    )
    concurrency_chosen: str | None = Field(
        None,
        description="why that concurrency, when chosen here: the most that fit memory, or the most that also meet --latency-ms",
    )
    itl_s: float | None = Field(
        None,
        description="inter-token latency: the time between a sequence's tokens at that concurrency",
    )
    requests_per_s_per_gpu: float | None = Field(
        None, description="requests completed per second per GPU at that concurrency"
    )
    curve: list[BatchingPoint] = Field(
        default_factory=list,
        description="continuous batching over concurrency 1 ... the memory's limit, per replica (when the concurrency was chosen here)",
    )
    compute_type: str | None = None
    options: list[ServingOption] = Field(
        default_factory=list,
        description="when it does not fit: lighter weight formats in order, then more GPUs, each priced",
    )


class FinetuneOption(Document):
    """One fix of fine-tuning that does not fit, cumulative with those before it; priced."""

    method: str
    gpus: int = Field(1, ge=1)
    strategy: str = Field(description="single, DDP, ZeRO-1/2 or FSDP (ZeRO-3)")
    memory_bytes: int = Field(ge=0, description="per GPU")
    fits: bool
    step_time_s: float | None = None
    total_time_s: float | None = None
    fix: str | None = Field(None, description="what this fix changes, in words")
    checkpointing: bool | None = None
    batch_size: int | None = Field(None, ge=1, description="micro-batch per GPU")
    grad_accumulation: int | None = Field(None, ge=1, description="micro-batches per step")
    optimizer: str | None = None
    offload: bool | None = None


class FinetuneFigures(Document):
    """Fine-tuning one language model on one device (or a group of GPUs)."""

    method: str
    lora_rank: int | None = None
    lora_targets: str | None = None
    strategy: str = Field(description="single, DDP or FSDP (ZeRO-3)")
    trainable_params: int = Field(ge=0)
    adapter_bytes: int = Field(0, ge=0, description="adapter weights (LoRA/QLoRA), inside weights")
    checkpointing: bool
    flops_per_token: float = Field(
        description="training FLOPs per token (forward, backward, recomputation)"
    )
    flop_ratio: float = Field(description="training FLOPs per token / forward FLOPs per token")
    tokens_per_s: float | None = Field(None, description="training tokens per second, all GPUs")
    options: list[FinetuneOption] = Field(
        default_factory=list,
        description="when it does not fit, cumulative fixes in order (checkpointing, smaller micro-batch with gradient accumulation, 8-bit then paged optimizer, LoRA, QLoRA, sharding, CPU offload), each priced, up to the first that fits",
    )
    framework: str | None = Field(None, description="framework profile (hf, torchtune, unsloth)")
    optimizer: str | None = None
    offload: bool = False
    live_bytes: int | None = Field(
        None, ge=0, description="tensors alive at the peak (torch's max allocated), per GPU"
    )
    logits_bytes: int | None = Field(None, ge=0, description="logits and loss buffers, per GPU")
    host_bytes: int | None = Field(
        None,
        ge=0,
        description="held in host memory: paged or offloaded state, offloaded checkpoints",
    )
    longest_seq_batch1: int | None = Field(
        None, ge=0, description="longest sequence that fits one GPU at micro-batch 1 (0: none)"
    )
    largest_micro_batch: int | None = Field(
        None, ge=0, description="largest micro-batch that fits one GPU at --seq-len (0: none)"
    )
    dataset_tokens: int | None = Field(
        None, ge=0, description="tokens of the run: --dataset-size x --seq-len x --epochs"
    )
    hours: float | None = Field(None, ge=0, description="hours of the run on these GPUs")
