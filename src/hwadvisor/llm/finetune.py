"""Memory of fine-tuning an LLM (full, LoRA or QLoRA), summed part by part, per GPU.

- **weights** in their format: bf16 (2 bytes), NF4 with double quantization for QLoRA
  (4.127 bits, embedding and lm_head in 16 bits, or fp32 where the framework upcasts
  them: peft's ``prepare_model_for_kbit_training``).
- **adapters** of rank r on the target projections, A (r x in) and B (out x r), at the
  framework's width (fp32 in PEFT, bf16 in torchtune), with gradients at that width.
- **gradients** of full fine-tuning in bf16 (2 bytes); with the optimizer in the backward
  (torchtune, one GPU) only the largest tensor's gradient lives at once.
- **optimizer** at its real width: AdamW two moments (fp32, or bf16 in pure-bf16
  recipes), plus the fp32 master copy under mixed precision (ZeRO, arXiv:1910.02054,
  section 3.1: 16 bytes per parameter in all); 8-bit AdamW two 1-byte moments
  (bitsandbytes, arXiv:2110.02861); the paged variant lives in host memory once the GPU
  runs short (bitsandbytes paged optimizers: NVIDIA unified memory); SGD one moment;
  Adafactor factored rows and columns (arXiv:1804.04235: about 2/h of the parameters).
- **activations** of one micro-batch (16-bit), per layer and token, counted from the
  tensors a decoder layer saves for its backward (after arXiv:2205.05198, section 4,
  for a gated MLP and grouped-query attention); fused attention stores no s^2 scores, or
  5·heads·s bytes more per token. Checkpointing keeps each layer's input (2·h bytes a
  token) and recomputes one layer at a time; Unsloth keeps those inputs in host memory.
- **logits and loss**: tokens x vocab x the framework's bytes (16 for fp32 logits and
  their gradient, 3 chunked, 0 fused).
- **runtime**: the CUDA context, and the caching allocator's reserve over the live peak.
- **sharding** over N GPUs: ZeRO-1 divides the optimizer, ZeRO-2 the gradients too,
  ZeRO-3/FSDP the weights as well (plus two layers gathered whole); CPU offload moves
  the optimizer (and with ZeRO-3/FSDP the parameters and gradients) to host memory.

QLoRA never prices above LoRA: each of its parts is at most LoRA's.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.device import runtime_bytes
from hwadvisor.llm.formats import find_format
from hwadvisor.llm.frameworks import FrameworkProfile, find_framework

METHODS = ("full", "lora", "qlora")
TARGETS = ("attention", "all-linear")
OPTIMIZERS = ("adamw", "adamw8bit", "paged_adamw8bit", "sgd", "adafactor")
STRATEGIES = ("single", "ddp", "zero1", "zero2", "zero3", "fsdp")
#: The CUDA context and library workspaces of one training process.
RUNTIME_BYTES = runtime_bytes("gpu")
#: The caching allocator's reserve over the live peak, one GPU: torch's reserved over
#: allocated peaks of 1.5% (torchtune issue #1398, Llama-3.1-8B QLoRA init: 14.62 vs
#: 14.41 GiB), 3.0-4.6% (peft issue #1469, full/LoRA runs: 12.94 vs 12.56, 8.61 vs
#: 8.23, 10.44 vs 10.01 GB): 4% taken.
RESERVE_SINGLE = 0.04
#: ...and sharded: FSDP's all-gather buffers fragment the cache: reserved 27-36% over
#: active on 4 A100s (meta-llama/llama-cookbook PR #41: 19.36 vs 15.22, 27.36 vs 20.20,
#: 32.67 vs 25.86 GB): 25% taken.
RESERVE_SHARDED = 0.25


@dataclass(frozen=True)
class FinetuneRequest:
    """How the model is tuned: method, LoRA rank and targets, batch, sequence, optimizer,
    framework, GPUs and their strategy, offload."""

    method: str = "lora"
    lora_rank: int = 16
    target_modules: str = "attention"
    batch_size: int = 1
    seq_len: int = 2048
    gradient_checkpointing: bool | None = None  # None: on for qlora, off otherwise
    fused_attention: bool | None = None  # None: the framework's
    optimizer: str = "adamw"
    framework: str | None = None
    gpus: int = 1
    strategy: str = "single"
    offload: bool = False

    def __post_init__(self) -> None:
        """Refuse unknown choices and non-positive sizes (one UsageError line)."""
        for name, value, allowed in (
            ("--method", self.method, METHODS),
            ("LoRA targets", self.target_modules, TARGETS),
            ("--optimizer", self.optimizer, OPTIMIZERS),
            ("--strategy", self.strategy, STRATEGIES),
        ):
            if value not in allowed:
                raise UsageError(f"unknown {name} '{value}'; choose one of {', '.join(allowed)}")
        if self.lora_rank <= 0:
            raise UsageError(f"--lora-rank must be a positive integer, got {self.lora_rank}")
        if self.batch_size <= 0 or self.seq_len <= 0:
            raise UsageError("batch size and sequence length must be positive")
        if self.gpus <= 0:
            raise UsageError(f"--gpus must be at least 1, got {self.gpus}")
        find_framework(self.framework)

    @property
    def profile(self) -> FrameworkProfile:
        """The framework profile (hf when none is named)."""
        return find_framework(self.framework)

    @property
    def checkpointing(self) -> bool:
        """Whether activations are recomputed (QLoRA unless said otherwise)."""
        if self.gradient_checkpointing is None:
            return self.method == "qlora"
        return self.gradient_checkpointing

    @property
    def fused(self) -> bool:
        """Attention without stored s^2 scores (the framework's kernel unless said)."""
        return (
            self.profile.fused_attention if self.fused_attention is None else self.fused_attention
        )

    @property
    def shards(self) -> int:
        """GPUs the states are divided over (1 without sharding)."""
        return self.gpus if self.strategy in ("zero1", "zero2", "zero3", "fsdp") else 1

    @property
    def stage(self) -> int:
        """ZeRO stage: 0 (single, DDP), 1, 2, or 3 (FSDP)."""
        return {"zero1": 1, "zero2": 2, "zero3": 3, "fsdp": 3}.get(self.strategy, 0)

    def but(self, **changes: object) -> FinetuneRequest:
        """A copy with some fields changed (checked again)."""
        return replace(self, **changes)  # type: ignore[arg-type]


@dataclass(frozen=True)
class FinetuneMemory:
    """Bytes per part of one fine-tuning process on one GPU (after sharding and offload)."""

    method: str
    trainable_params: int
    weights_bytes: float
    adapter_bytes: float
    gradient_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    logits_bytes: float
    runtime_bytes: float
    reserve_bytes: float
    checkpointing: bool
    host_bytes: float = 0.0
    notes: tuple[str, ...] = field(default=())

    @property
    def live_bytes(self) -> float:
        """The tensors alive at the peak: what torch.cuda.max_memory_allocated reports."""
        return (
            self.weights_bytes
            + self.adapter_bytes
            + self.gradient_bytes
            + self.optimizer_bytes
            + self.activation_bytes
            + self.logits_bytes
        )

    @property
    def total_bytes(self) -> float:
        """The sum of the parts (never the largest of them), context and reserve included."""
        return self.live_bytes + self.runtime_bytes + self.reserve_bytes


def lora_params(arch: LlmArch, rank: int, target_modules: str = "attention") -> int:
    """Adapter parameters: r x (in + out) per targeted projection, every layer (and expert)."""
    return arch.layers * sum(rank * (i + o) for i, o in _projections(arch, target_modules))


def _attention_projections(arch: LlmArch) -> list[tuple[int, int]]:
    """(in, out) of the attention projections of one layer.

    Per-head attention: q, k, v and o. Multi-head latent attention has no k or v
    projection (DeepSeek-V3 ``modeling_deepseek.py``, ``DeepseekV3Attention``): q_a_proj
    (hidden -> q_lora_rank) and q_b_proj (q_lora_rank -> heads x head_dim), or one q_proj
    without a query latent; kv_a_proj_with_mqa (hidden -> kv_lora_rank + rope);
    kv_b_proj (kv_lora_rank -> heads x (nope + v_head_dim)); o_proj (heads x v_head_dim
    -> hidden).
    """
    h = arch.hidden
    if not arch.is_mla:
        q_out, kv_out = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
        return [(h, q_out), (h, kv_out), (h, kv_out), (q_out, h)]
    latent, rope = arch.kv_lora_rank or 0, arch.qk_rope_head_dim or 0
    v = arch.v_head_dim or arch.head_dim
    q_out = arch.heads * arch.head_dim
    q = [(h, arch.q_lora_rank), (arch.q_lora_rank, q_out)] if arch.q_lora_rank else [(h, q_out)]
    kv = [(h, latent + rope), (latent, arch.heads * (arch.head_dim - rope + v))]
    return [*q, *kv, (arch.heads * v, h)]


def _projections(arch: LlmArch, target_modules: str) -> list[tuple[int, int]]:
    """(in, out) of each adapted projection of one layer (every expert's for an MoE)."""
    h = arch.hidden
    out = _attention_projections(arch)
    if target_modules == "all-linear":
        inner = arch.expert_intermediate or arch.intermediate
        mlp = [(h, inner), (h, inner), (inner, h)] if arch.gated_mlp else [(h, inner), (inner, h)]
        out += mlp * arch.experts
    return out


def layer_bytes_per_token(arch: LlmArch, req: FinetuneRequest) -> float:
    """16-bit bytes one layer saves for its backward per token (no recomputation).

    Attention: the norm's input and output, q, k, v and their rotated copies, the
    attention output (2 bytes each), the norm's fp32 input (4·h); MLP: its norm's input,
    output and fp32 copy, gate, up, the activation and the product (4 x intermediate),
    per routed expert. Unfused LoRA keeps dropout(x) and x·A of each adapted projection.
    """
    h, q, kv = arch.hidden, arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    inner = arch.expert_intermediate or arch.intermediate
    attn = 2 * (2 * h + 2 * q + 2 * kv + q + kv) + 4 * h
    mlp = 2 * 2 * h + 4 * h + 2 * inner * (4 if arch.gated_mlp else 2) * arch.experts_per_token
    scores = 0.0 if req.fused else 5.0 * arch.heads * req.seq_len
    lora = 0.0
    if req.method != "full" and not req.profile.fused_lora:
        lora = sum(3 * i + 2 * req.lora_rank for i, _ in _projections(arch, req.target_modules))
    return attn + mlp + scores + lora


def activation_bytes(arch: LlmArch, req: FinetuneRequest) -> tuple[float, float]:
    """(activations on the GPU, activations held in host memory) of one micro-batch."""
    tokens = req.seq_len * req.batch_size
    layer = layer_bytes_per_token(arch, req) * tokens
    if not req.checkpointing:
        return arch.layers * layer, 0.0
    inputs = arch.layers * 2 * arch.hidden * tokens
    if req.profile.offload_checkpoints:
        return layer, inputs
    return inputs + layer, 0.0


def logits_bytes(arch: LlmArch, req: FinetuneRequest) -> float:
    """The logits and the loss's buffers at their peak (the framework's bytes per entry)."""
    return req.seq_len * req.batch_size * arch.vocab * req.profile.logits_bytes


def _optimizer_state_bytes(req: FinetuneRequest, width: float, master: bool, h: int) -> float:
    """Optimizer bytes per trainable parameter: moments at ``width`` (AdamW) or their
    8-bit or factored form, plus a 4-byte master copy under mixed precision."""
    states = {
        "adamw": 2 * width,
        "adamw8bit": 2.0,
        "paged_adamw8bit": 2.0,
        "sgd": width,
        "adafactor": 2 * 4.0 / h,
    }[req.optimizer]
    return states + (4.0 if master else 0.0)


def finetune_memory(arch: LlmArch, req: FinetuneRequest | None = None) -> FinetuneMemory:
    """Memory per GPU of fine-tuning ``arch`` as ``req`` says (default: LoRA r16 on attention)."""
    req = req or FinetuneRequest()
    prof = req.profile
    notes: list[str] = []
    acts, acts_host = activation_bytes(arch, req)
    logits = logits_bytes(arch, req)
    n = arch.params_total
    if req.method == "full":
        trainable, weights, adapters = n, 2.0 * n, 0.0
        width = 4.0 if prof.master_weights else 2.0
        grads = 2.0 * n
        if prof.optimizer_in_backward and req.gpus == 1:
            biggest = max(arch.embedding_params, arch.head_params, arch.expert_params)
            grads = 2.0 * biggest
            notes.append("optimizer in the backward: one parameter's gradient at a time")
        opt = n * _optimizer_state_bytes(req, width, prof.master_weights, arch.hidden)
    else:
        trainable = lora_params(arch, req.lora_rank, req.target_modules)
        fmt = "bf16" if req.method == "lora" else "nf4"
        weights = find_format(fmt).weight_bytes(arch)
        if req.method == "qlora" and prof.kbit_upcast:
            # Embedding and lm_head 16 -> 32 bits; never past the 16-bit base LoRA keeps
            # (a tiny body under a huge vocabulary), so QLoRA never prices above LoRA.
            upcast = 2.0 * (arch.embedding_params + arch.head_params)
            weights += min(upcast, find_format("bf16").weight_bytes(arch) - weights)
        width = prof.adapter_bytes
        adapters = width * trainable
        grads = width * trainable
        opt = trainable * _optimizer_state_bytes(req, width, False, arch.hidden)
    host = acts_host
    master = 4.0 * trainable if req.method == "full" and prof.master_weights else 0.0
    if req.optimizer == "paged_adamw8bit":
        # The moments page out; the fp32 master copy is the parameters' own, and stays.
        host += opt - master
        opt = master
        notes.append("paged 8-bit optimizer: its state pages out to host memory")
    # Sharding: ZeRO-1 the optimizer, ZeRO-2 the gradients too, ZeRO-3/FSDP the weights.
    s, stage = req.shards, req.stage
    if stage >= 1:
        opt /= s
    if stage >= 2:
        grads /= s
    gathered = 0.0
    if stage >= 3:
        weights /= s
        adapters /= s
        # Two layers gathered whole at a time (the current and the prefetched one), in
        # the base's format (QLoRA gathers NF4 shards and expands them per product).
        width = find_format("nf4").bits_per_weight / 8 if req.method == "qlora" else 2.0
        gathered = 2 * width * arch.body_matrix_params(arch.experts) / arch.layers
    if req.offload:
        host += opt
        opt = 0.0
        if stage >= 3:
            host += weights + grads
            weights, grads = 0.0, 0.0
        notes.append(
            "CPU offload: optimizer state"
            + (", weights and gradients" if stage >= 3 else "")
            + " in host memory"
        )
    live = weights + gathered + adapters + grads + opt + acts + logits
    reserve = (RESERVE_SHARDED if stage >= 3 else RESERVE_SINGLE) * live
    return FinetuneMemory(
        method=req.method,
        trainable_params=trainable,
        weights_bytes=weights + gathered,
        adapter_bytes=adapters,
        gradient_bytes=grads,
        optimizer_bytes=opt,
        activation_bytes=acts,
        logits_bytes=logits,
        runtime_bytes=float(RUNTIME_BYTES),
        reserve_bytes=reserve,
        checkpointing=req.checkpointing,
        host_bytes=host,
        notes=tuple(notes),
    )


def lighter_methods(arch: LlmArch, req: FinetuneRequest) -> list[FinetuneMemory]:
    """The request priced as LoRA, then QLoRA (what to suggest when it does not fit)."""
    order = METHODS[METHODS.index(req.method) + 1 :]
    return [finetune_memory(arch, req.but(method=m)) for m in order]


def longest_sequence(arch: LlmArch, req: FinetuneRequest, capacity: float) -> int:
    """The longest sequence at batch 1 whose total fits ``capacity`` bytes (0: none).

    Memory grows with the sequence (linearly with fused attention), so a bisection finds it.
    """
    one = req.but(batch_size=1)

    def ok(seq: int) -> bool:
        return finetune_memory(arch, one.but(seq_len=seq)).total_bytes <= capacity

    if not ok(1):
        return 0
    lo, hi = 1, 2
    while ok(hi) and hi < 1 << 24:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def largest_micro_batch(arch: LlmArch, req: FinetuneRequest, capacity: float) -> int:
    """The largest micro-batch at ``req.seq_len`` whose total fits ``capacity`` (0: none)."""

    def ok(b: int) -> bool:
        return finetune_memory(arch, req.but(batch_size=b)).total_bytes <= capacity

    if not ok(1):
        return 0
    lo, hi = 1, 2
    while ok(hi) and hi < 1 << 20:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo
