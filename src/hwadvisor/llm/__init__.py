"""LLM knowledge and physics: shapes, configs, weight files, formats, serving, fine-tuning.

Pure functions over plain numbers and frozen objects; the CLI and the estimator wire them
in. Optional packages (``transformers``, ``safetensors``, ``gguf``, ``huggingface_hub``;
the ``hf`` extra) are imported only when a function needs them.
"""

from __future__ import annotations

from hwadvisor.llm.arch import LlmArch, QuantConfig
from hwadvisor.llm.config import arch_from_dict, arch_from_folder
from hwadvisor.llm.device import DeviceSpec
from hwadvisor.llm.engines import Engine, default_engine, find_engine, load_engines
from hwadvisor.llm.finetune import FinetuneMemory, FinetuneRequest, finetune_memory, lora_params
from hwadvisor.llm.fit import MemoryFit, memory_fit, smallest_fit
from hwadvisor.llm.formats import QuantFormat, default_format, find_format, load_formats
from hwadvisor.llm.resolve import ResolvedModel, arch_from_catalog, resolve_model
from hwadvisor.llm.serving import ServingEstimate, ServingRequest, estimate_serving

__all__ = [
    "DeviceSpec",
    "Engine",
    "FinetuneMemory",
    "FinetuneRequest",
    "LlmArch",
    "MemoryFit",
    "QuantConfig",
    "QuantFormat",
    "ResolvedModel",
    "ServingEstimate",
    "ServingRequest",
    "arch_from_catalog",
    "arch_from_dict",
    "arch_from_folder",
    "default_engine",
    "default_format",
    "estimate_serving",
    "find_engine",
    "find_format",
    "finetune_memory",
    "load_engines",
    "load_formats",
    "lora_params",
    "memory_fit",
    "resolve_model",
    "smallest_fit",
]
