"""Held-out 2025-26 language models read from their published config.json files.

For each: total and active parameters, KV cache bytes per token (MLA included), the weight
bytes in the checkpoint's own format (its quantization_config), and whether it fits the
GPUs its makers name (weights + KV cache of one 4096-token sequence + runtime under the
engine's memory utilization, vLLM's 90% unless the makers name llama.cpp;
``hwadvisor.llm.fit.memory_fit``), beside the published figures.

Run: ``python benchmarks/llm_configs_2026.py`` (no network: the configs are the copies in
``src/hwadvisor/catalog/data/llm_configs``). Exit 1 when a figure is off by more than its
tolerance or a model does not fit where its makers say it does.

Published figures (sources):

- DeepSeek-V3 Technical Report (arXiv:2412.19437): 671 B total, 37 B activated; MLA
  caches kv_lora_rank 512 + rope 64 per token and layer (61 layers): 70,272 B = 68.6 KiB in
  bf16 (issue 43: "about 69 KiB"); DeepSeek recommends serving the FP8 checkpoint on 8 x H200.
- Kimi K2 model card (Moonshot AI, 2025-07): 1 T total (1.04 T), 32 B activated;
  its deployment guide (MoonshotAI/Kimi-K2 docs/deploy_guidance.md): the smallest unit for
  the FP8 weights on H200 or H20 is 16 GPUs.
- gpt-oss model card (OpenAI, arXiv:2508.10925): gpt-oss-120b 116.83 B total, 5.13 B
  active, checkpoint 60.8 GiB, "runs on a single 80 GB GPU"; gpt-oss-20b 20.91 B, 3.61 B
  active, 12.8 GiB, "runs within 16 GB of memory" (on consumer hardware through llama.cpp
  and Ollama, priced here with llama.cpp; a 16 GB T4 stands for the card). Active counts
  leave out the embedding.
- Llama 4 model cards (Meta, 2025-04): Scout 17 B active, 109 B total with the vision
  encoder, "fits on a single H100 GPU" with int4 weights; Maverick 17 B active, 400 B,
  "a single H100 host" (8 GPUs).
- Qwen3 model cards (2025-04): 30B-A3B 30.5 B / 3.3 B activated; 235B-A22B 235 B / 22 B.
- Gemma 3 Technical Report (arXiv:2503.19786): 27 B, one accelerator (H100 80 GB) in bf16.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

from hwadvisor.catalog import find_device
from hwadvisor.llm import (
    DeviceSpec,
    arch_from_dict,
    default_format,
    find_engine,
    find_format,
    memory_fit,
)

CONFIGS = (
    Path(__file__).resolve().parents[1] / "src" / "hwadvisor" / "catalog" / "data" / "llm_configs"
)
GIB = 1024**3


@dataclass(frozen=True)
class Case:
    repo: str
    total_b: float
    active_b: float
    active_without_embedding: bool
    gpus: tuple[str, int]  # catalog device id, how many
    quant: str | None = None  # the format the makers run it in, when not the checkpoint's
    kv_bytes: float | None = None  # published KV bytes per token (bf16)
    weights_gib: float | None = None  # published checkpoint size
    engine: str = "vllm"


CASES = [
    Case("deepseek-ai/DeepSeek-V3", 671, 37, False, ("h200", 8), kv_bytes=70_272),
    Case("deepseek-ai/DeepSeek-R1", 671, 37, False, ("h200", 8), kv_bytes=70_272),
    Case("moonshotai/Kimi-K2-Instruct", 1040, 32, False, ("h200", 16)),
    Case("openai/gpt-oss-20b", 20.91, 3.61, True, ("t4", 1), weights_gib=12.8, engine="llama.cpp"),
    Case("openai/gpt-oss-120b", 116.83, 5.13, True, ("h100-sxm", 1), weights_gib=60.8),
    Case("meta-llama/Llama-4-Scout-17B-16E-Instruct", 108, 17, False, ("h100-sxm", 1), quant="awq"),
    Case(
        "meta-llama/Llama-4-Maverick-17B-128E-Instruct",
        400,
        17,
        False,
        ("h100-sxm", 8),
        quant="fp8",
    ),
    Case("Qwen/Qwen3-30B-A3B", 30.5, 3.3, False, ("h100-sxm", 1)),
    Case("Qwen/Qwen3-235B-A22B", 235, 22, False, ("h100-sxm", 8)),
    Case("google/gemma-3-27b-it", 27, 27, False, ("h100-sxm", 1)),
]


def _off(ours: float, published: float) -> float:
    return abs(ours - published) / published


def main() -> int:
    bad = 0
    head = f"{'model':44} {'total B':>15} {'active B':>13} {'KV B/tok':>16} {'weights':>18} {'GPUs':>10}  fits"
    print(head)
    print("-" * len(head))
    for case in CASES:
        cfg = json.loads((CONFIGS / f"{case.repo.replace('/', '--')}.json").read_text())
        arch = arch_from_dict(cfg, name=case.repo)
        fmt = find_format(case.quant) if case.quant else default_format(arch)
        active = arch.params_active - (
            arch.embedding_params if case.active_without_embedding else 0
        )
        kv = arch.kv_bytes_per_token()
        weights = fmt.weight_bytes(arch)
        device_id, n = case.gpus
        device = DeviceSpec.from_catalog(find_device(device_id))
        fit = memory_fit(arch, fmt, find_engine(case.engine), device, context=4096, tp=n)
        errors = [_off(arch.params_total / 1e9, case.total_b), _off(active / 1e9, case.active_b)]
        if case.kv_bytes:
            errors.append(_off(kv, case.kv_bytes))
        if case.weights_gib:
            errors.append(_off(weights / GIB, case.weights_gib))
        ok = max(errors) <= 0.05 and fit.fits
        bad += not ok
        print(
            f"{case.repo:44} {arch.params_total / 1e9:7.1f} ({case.total_b:5.0f}) "
            f"{active / 1e9:5.1f} ({case.active_b:4.1f}) "
            f"{kv:8,.0f}{f' ({case.kv_bytes:,.0f})' if case.kv_bytes else '':>8} "
            f"{weights / GIB:6.1f} GiB {fmt.id:5}{f' ({case.weights_gib})' if case.weights_gib else '':>7}"
            f" {n}x{device_id:>7}  {'yes' if fit.fits else 'NO '} "
            f"{fit.total_bytes / 1e9:6.1f}/{fit.budget_bytes / 1e9:.0f} GB/GPU"
            f"{'' if ok else '  <-- off'}"
        )
    ds = arch_from_dict(json.loads((CONFIGS / "deepseek-ai--DeepSeek-V3.json").read_text()))
    per_head = ds.heads * (ds.head_dim + (ds.v_head_dim or ds.head_dim)) * ds.layers * 2
    print(
        f"\nDeepSeek-V3 KV: {ds.kv_bytes_per_token() / 1024:.1f} KiB/token with MLA; "
        f"{per_head / 1e6:.2f} MB priced as per-head K and V ({per_head / ds.kv_bytes_per_token():.0f}x)"
    )
    print(f"MTP module (counted apart): {ds.params_mtp / 1e9:.1f} B")
    print(f"\n{len(CASES) - bad} of {len(CASES)} within 5% of every published figure and fitting")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
