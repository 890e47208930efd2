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
    compute_type: str | None = None
    options: list[ServingOption] = Field(
        default_factory=list,
        description="when it does not fit: lighter weight formats in order, then more GPUs, each priced",
    )


class FinetuneOption(Document):
    """A lighter method, or sharding over more GPUs, for fine-tuning that does not fit; priced."""

    method: str
    gpus: int = Field(1, ge=1)
    strategy: str = Field(description="single, DDP or FSDP (ZeRO-3)")
    memory_bytes: int = Field(ge=0, description="per GPU")
    fits: bool
    step_time_s: float | None = None
    total_time_s: float | None = None


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
        description="when it does not fit: LoRA, then QLoRA, then sharding, each priced",
    )
