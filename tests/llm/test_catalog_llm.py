"""The LLM catalog entries: each from its config.json, counts matching their shape."""

from __future__ import annotations

import pytest

from hwadvisor.catalog import find_device, load_devices, load_models
from hwadvisor.llm import arch_from_catalog

LLM_IDS = [
    "llama-2-7b",
    "llama-2-13b",
    "llama-2-70b",
    "llama-3-8b",
    "llama-3-70b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-0.5b",
    "qwen2.5-7b",
    "qwen2.5-72b",
    "phi-3-mini",
    "gemma-2-9b",
]
#: Published parameter totals (model cards), in billions.
PUBLISHED_B = {
    "llama-2-7b": 6.74,
    "llama-3-8b": 8.03,
    "mixtral-8x7b": 46.7,
    "qwen2.5-0.5b": 0.49,
    "qwen2.5-7b": 7.61,
    "qwen2.5-72b": 72.7,
    "phi-3-mini": 3.82,
    "gemma-2-9b": 9.24,
}


@pytest.mark.parametrize("ident", LLM_IDS)
def test_each_llm_is_sourced_from_its_config_and_counts_match(ident: str) -> None:
    entry = load_models()[ident]
    assert entry.hf_repo and f"huggingface.co/{entry.hf_repo}/blob/main/config.json" in entry.source
    arch = arch_from_catalog(entry)
    assert arch.params_total == entry.params
    assert entry.active_params in (None, arch.params_active)
    if ident in PUBLISHED_B:
        # Model cards round or truncate: within one unit of their last digit.
        step = 0.01 if PUBLISHED_B[ident] < 10 else 0.1
        assert abs(arch.params_total / 1e9 - PUBLISHED_B[ident]) <= step


def test_llama_7b_is_the_first_llama_not_llama_2() -> None:
    first, second = load_models()["llama-7b"], load_models()["llama-2-7b"]
    assert "Llama 2" not in first.name and "first LLaMA" in first.name
    assert "2302.13971" in first.source
    assert first.max_context == 2048 and second.max_context == 4096


def test_apple_devices_carry_unified_memory_share() -> None:
    devices = load_devices()
    for ident in ("apple-m2-ultra", "apple-m3-max"):
        dev = devices[ident]
        assert dev.kind.value == "soc" and dev.gpu_memory_fraction == pytest.approx(0.75)
        assert dev.gpu_memory_source and "recommendedMaxWorkingSetSize" in dev.gpu_memory_source
        assert "Apple Newsroom" in dev.source
    assert find_device("apple-m2-ultra").bandwidth_gb_s == 800
    assert find_device("apple-m3-max").bandwidth_gb_s == 400
