"""Fine-tuning framework profiles (Hugging Face Trainer + PEFT, torchtune, Unsloth).

What each framework does by default that changes a fine-tuning job's memory and time:
its attention kernel, how it computes the logits and the loss, the width of LoRA
adapters, whether it keeps an fp32 master copy, whether it offloads checkpointed
activations, how many small operators each layer launches and at what host cost, and the
fraction of the 16-bit tensor peak its recipes reach on the matrix products. The data is
``hwadvisor/catalog/data/frameworks.yaml``, every figure with its source.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from hwadvisor.errors import UsageError
from hwadvisor.llm._data import shipped_models

#: The profile taken when --framework is not given.
DEFAULT_FRAMEWORK = "hf"


class FrameworkProfile(BaseModel):
    """One framework's defaults, as the memory and time of fine-tuning read them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    fused_attention: bool = Field(description="SDPA/FlashAttention: no s^2 scores stored")
    logits_bytes: float = Field(
        ge=0, description="bytes per token per vocabulary entry live at the loss's peak"
    )
    logits_traffic_bytes: float = Field(
        ge=0, description="bytes per token per vocabulary entry the loss reads and writes"
    )
    adapter_bytes: float = Field(gt=0, description="bytes of one LoRA adapter parameter")
    master_weights: bool = Field(description="full fine-tuning keeps an fp32 master copy")
    kbit_upcast: bool = Field(description="QLoRA: embedding and lm_head upcast to fp32")
    offload_checkpoints: bool = Field(description="checkpointed layer inputs held in host memory")
    optimizer_in_backward: bool = Field(
        description="full fine-tuning on one GPU steps each parameter as its gradient is made"
    )
    fused_lora: bool = Field(description="LoRA's x.A.B, dropout and add fused in the projection")
    packing: bool = Field(description="sequences packed to the full length (no padding)")
    compile: bool = Field(description="torch.compile on in the recipes")
    kernels_per_layer: int = Field(ge=0, description="small operators per layer per forward")
    kernel_us: float = Field(ge=0, description="host cost of launching one of them")
    efficiency: dict[str, float] = Field(
        description="achieved fraction of the 16-bit tensor peak on the matrix products, by GPU class"
    )
    sources: dict[str, str]

    def fraction(self, gpu_class: str) -> float:
        """The achieved fraction of peak for ``gpu_class`` (datacenter or consumer)."""
        return self.efficiency.get(gpu_class) or self.efficiency["datacenter"]


@lru_cache(maxsize=1)
def load_frameworks() -> dict[str, FrameworkProfile]:
    """Every shipped framework profile by id."""
    items = shipped_models("frameworks.yaml", "frameworks", FrameworkProfile, "framework")
    return {f.id: f for f in items}


def find_framework(ident: str | None) -> FrameworkProfile:
    """The profile ``ident`` (hf, torchtune, unsloth; None: hf); unknown -> UsageError."""
    profiles = load_frameworks()
    key = (ident or DEFAULT_FRAMEWORK).strip().lower()
    if key not in profiles:
        raise UsageError(f"unknown --framework '{ident}'; choose one of {', '.join(profiles)}")
    return profiles[key]
