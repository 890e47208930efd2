"""Memory of fine-tuning an LLM: full, LoRA or QLoRA, summed part by part.

- **full**: mixed-precision AdamW, 16 bytes per parameter: 16-bit weights (2) and
  gradients (2), an fp32 master copy (4) and two fp32 moments (8) (ZeRO, arXiv:1910.02054,
  section 3.1).
- **lora**: the frozen base in 16 bits (2 bytes per parameter); adapters of rank r on the
  target projections, A (r x in) and B (out x r), kept in fp32 by PEFT
  (``autocast_adapter_dtype``), with fp32 gradients and AdamW moments: 16 bytes each.
- **qlora**: the base in NF4 with double quantization (4.127 bits per weight, embedding
  and lm_head in 16 bits), bf16 adapters and gradients (2 + 2) and the paged 8-bit AdamW
  (two 1-byte moments): 6 bytes per adapter parameter; gradient checkpointing always
  (QLoRA, arXiv:2305.14314, sections 3-4).
- **activations** (16-bit), per layer s·b·h·(15 + 19·k + 5·a·s/h) bytes without
  recomputation (arXiv:2205.05198, section 4: 34 = 15 attention and norms + 19 MLP; k
  experts per token for an MoE); fused attention (SDPA/flash) stores no s² scores, so the
  5·a·s/h term goes. Gradient checkpointing keeps each layer's input (2·s·b·h) and
  recomputes one layer at a time (its input is the one already kept). The fp32 logits and their gradient add 2·s·b·vocab·4.

QLoRA never prices above LoRA: each of its parts is at most LoRA's, and its checkpointing
is always on.
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.formats import find_format

METHODS = ("full", "lora", "qlora")
TARGETS = ("attention", "all-linear")
#: CUDA context and library workspaces of the training process (assumed, 512 MiB).
RUNTIME_BYTES = 512 * 1024 * 1024


@dataclass(frozen=True)
class FinetuneRequest:
    """How the model is tuned: method, LoRA rank and targets, batch, sequence length."""

    method: str = "lora"
    lora_rank: int = 16
    target_modules: str = "attention"
    batch_size: int = 1
    seq_len: int = 2048
    gradient_checkpointing: bool | None = None  # None: on for qlora, off otherwise
    fused_attention: bool = True

    def __post_init__(self) -> None:
        """Refuse unknown methods/targets and non-positive sizes (one UsageError line)."""
        if self.method not in METHODS:
            raise UsageError(
                f"unknown --method '{self.method}'; choose one of {', '.join(METHODS)}"
            )
        if self.target_modules not in TARGETS:
            raise UsageError(
                f"unknown LoRA targets '{self.target_modules}'; choose one of {', '.join(TARGETS)}"
            )
        if self.lora_rank <= 0:
            raise UsageError(f"--lora-rank must be a positive integer, got {self.lora_rank}")
        if self.batch_size <= 0 or self.seq_len <= 0:
            raise UsageError("batch size and sequence length must be positive")

    @property
    def checkpointing(self) -> bool:
        """Whether activations are recomputed (QLoRA always)."""
        if self.method == "qlora":
            return True
        return bool(self.gradient_checkpointing)


@dataclass(frozen=True)
class FinetuneMemory:
    """Bytes per part of one fine-tuning process (one GPU, no sharding)."""

    method: str
    trainable_params: int
    weights_bytes: float
    adapter_bytes: float
    gradient_bytes: float
    optimizer_bytes: float
    activation_bytes: float
    runtime_bytes: float
    checkpointing: bool

    @property
    def total_bytes(self) -> float:
        """The sum of the parts (never the largest of them)."""
        return (
            self.weights_bytes
            + self.adapter_bytes
            + self.gradient_bytes
            + self.optimizer_bytes
            + self.activation_bytes
            + self.runtime_bytes
        )

    def sharded_total(self, gpus: int) -> float:
        """Per GPU under ZeRO-3/FSDP full sharding: states / gpus, activations whole."""
        if gpus <= 0:
            raise UsageError("GPU count must be positive")
        states = (
            self.weights_bytes + self.adapter_bytes + self.gradient_bytes + self.optimizer_bytes
        )
        return states / gpus + self.activation_bytes + self.runtime_bytes


def lora_params(arch: LlmArch, rank: int, target_modules: str = "attention") -> int:
    """Adapter parameters: r x (in + out) per targeted projection, every layer (and expert)."""
    q_out, kv_out = arch.heads * arch.head_dim, arch.kv_heads * arch.head_dim
    h = arch.hidden
    per_layer = rank * ((h + q_out) + 2 * (h + kv_out) + (q_out + h))
    if target_modules == "all-linear":
        inner = arch.expert_intermediate or arch.intermediate
        matrices = 3 if arch.gated_mlp else 2
        per_layer += arch.experts * matrices * rank * (h + inner)
    return arch.layers * per_layer


def activation_bytes(arch: LlmArch, req: FinetuneRequest) -> float:
    """16-bit activations kept for the backward pass, plus fp32 logits and their gradient."""
    s, b, h = req.seq_len, req.batch_size, arch.hidden
    scores = 0.0 if req.fused_attention else 5 * arch.heads * s / h
    per_layer = s * b * h * (15 + 19 * arch.experts_per_token + scores)
    logits = 2 * s * b * arch.vocab * 4
    if req.checkpointing:
        # Each layer's input is kept; the layer being recomputed adds its other activations.
        inputs = 2 * s * b * h
        return arch.layers * inputs + (per_layer - inputs) + logits
    return arch.layers * per_layer + logits


def finetune_memory(arch: LlmArch, req: FinetuneRequest | None = None) -> FinetuneMemory:
    """Memory of fine-tuning ``arch`` as ``req`` says (default: LoRA rank 16 on attention)."""
    req = req or FinetuneRequest()
    acts = activation_bytes(arch, req)
    if req.method == "full":
        n = arch.params_total
        return FinetuneMemory(
            "full", n, 2.0 * n, 0.0, 2.0 * n, 12.0 * n, acts, RUNTIME_BYTES, req.checkpointing
        )
    adapters = lora_params(arch, req.lora_rank, req.target_modules)
    if req.method == "lora":
        base = find_format("bf16").weight_bytes(arch)
        return FinetuneMemory(
            "lora",
            adapters,
            base,
            4.0 * adapters,
            4.0 * adapters,
            8.0 * adapters,
            acts,
            RUNTIME_BYTES,
            req.checkpointing,
        )
    base = find_format("nf4").weight_bytes(arch)
    return FinetuneMemory(
        "qlora",
        adapters,
        base,
        2.0 * adapters,
        2.0 * adapters,
        2.0 * adapters,
        acts,
        RUNTIME_BYTES,
        True,
    )


def lighter_methods(arch: LlmArch, req: FinetuneRequest) -> list[FinetuneMemory]:
    """The request priced as LoRA, then QLoRA (what to suggest when it does not fit)."""
    order = METHODS[METHODS.index(req.method) + 1 :]
    return [
        finetune_memory(
            arch,
            FinetuneRequest(
                method=m,
                lora_rank=req.lora_rank,
                target_modules=req.target_modules,
                batch_size=req.batch_size,
                seq_len=req.seq_len,
                gradient_checkpointing=req.gradient_checkpointing,
                fused_attention=req.fused_attention,
            ),
        )
        for m in order
    ]
