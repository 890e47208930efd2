"""Serving engine classes (llama.cpp, vLLM, SGLang, TensorRT-LLM, transformers): overheads and memory reserve.

The data is ``hwadvisor/catalog/data/engines.yaml``, every figure with its source.
"""

from __future__ import annotations

from functools import lru_cache

from pydantic import BaseModel, ConfigDict, Field

from hwadvisor.errors import UsageError
from hwadvisor.llm._data import shipped_models


class Engine(BaseModel):
    """One engine class: per-step kernel overhead, micro-batch, memory it takes or leaves."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    name: str
    memory_utilization: float = Field(gt=0, le=1)
    small_kernels_per_layer: int = Field(ge=0)
    kernel_us: float = Field(ge=0)
    micro_batch: int = Field(ge=0, description="prompt tokens per forward pass; 0 = all")
    dequantize_for_prefill: bool
    chunked_prefill: bool = Field(
        False, description="prompt chunks ride in decode steps (continuous batching)"
    )
    kernel_us_by_class: dict[str, float] = Field(
        default_factory=dict, description="kernel_us on a GPU class (hbm, gddr) where it differs"
    )
    decode_ceiling_gb_s: dict[str, float] = Field(
        default_factory=dict,
        description="GB/s the mat-vec kernels of a family (16bit, 8bit, 4bit, fp8) sustain",
    )
    prefill_ceiling_tflops: dict[str, float] = Field(
        default_factory=dict, description="TFLOP/s the engine's products reach on a GPU class"
    )
    prefill_fp16_accumulate: bool = Field(
        False,
        description="prompt products run in FP16 with FP16 accumulate (cuBLAS compute type 16F)",
    )
    prefill_tensor_fraction: float | None = Field(
        None,
        gt=0,
        le=1,
        description="share of the FP16-accumulate tensor peak the prompt products reach on a "
        "GPU; None = the device's achieved GEMM fraction",
    )
    matvec_max_batch: int = Field(8, ge=1, description="tokens up to which mat-vec kernels run")
    step_overhead_us: float = Field(0.0, ge=0, description="host work per step not overlapped")
    kv_passes: float = Field(1.0, ge=1, description="times a decode step reads the KV cache")
    repeat_kv: bool = Field(
        False,
        description="the cache is copied out to every query head before attention each step "
        "(grouped-query attention expanded, as transformers' repeat_kv does)",
    )
    max_sequences: int = Field(0, ge=0, description="sequences batched at most; 0 = memory")
    kv_share_of_free: bool = Field(
        False, description="memory_utilization is a share of the memory left after weights"
    )
    sources: dict[str, str]

    def step_overhead_s(self, layers: int) -> float:
        """Fixed cost of one forward step: small kernels of every layer at kernel_us each."""
        return layers * self.small_kernels_per_layer * self.kernel_us * 1e-6

    def passes(self, prompt_tokens: int) -> int:
        """Forward passes a prompt of ``prompt_tokens`` takes (micro-batches)."""
        if self.micro_batch <= 0 or prompt_tokens <= 0:
            return 1
        return -(-prompt_tokens // self.micro_batch)


@lru_cache(maxsize=1)
def load_engines() -> dict[str, Engine]:
    """Every shipped engine class by id."""
    return {eng.id: eng for eng in shipped_models("engines.yaml", "engines", Engine, "engine")}


def find_engine(ident: str) -> Engine:
    """The engine ``ident`` (llama.cpp, vllm, transformers); unknown -> UsageError."""
    engines = load_engines()
    key = ident.strip().lower()
    key = {
        "llamacpp": "llama.cpp",
        "llama-cpp": "llama.cpp",
        "hf": "transformers",
        "trtllm": "tensorrt-llm",
        "trt-llm": "tensorrt-llm",
        "tensorrt_llm": "tensorrt-llm",
    }.get(key, key)
    if key not in engines:
        raise UsageError(f"unknown engine '{ident}'; choose one of {', '.join(engines)}")
    return engines[key]


def default_engine(device_kind: str, format_id: str) -> Engine:
    """llama.cpp for GGUF formats and for CPUs/Apple chips; vLLM for other GPU serving."""
    ggml = format_id in {"q8_0", "q4_0", "q4_k_m", "q3_k_m", "iq4_xs", "q5_k_m", "q6_k"}
    return find_engine("llama.cpp" if ggml or device_kind != "gpu" else "vllm")
