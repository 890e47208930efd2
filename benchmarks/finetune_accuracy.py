"""Accuracy of the fine-tuning estimate against published recipe measurements.

Each row is a published fine-tuning run with its recipe (framework, method, rank and
targets, batch, sequence length, optimizer, checkpointing, GPUs), priced with the public
functions the estimator uses (:func:`hwadvisor.llm.finetune_memory` and
:func:`hwadvisor.estimate.llm.finetune_time.step_time`), printed beside the published
peak memory and tokens/s with its source. Rows marked ``sets`` gave a constant of
``frameworks.yaml`` (the achieved fraction of peak of that framework and GPU class) and
are left out of the summary; the median and worst error are over the other rows.

Memory is compared as the source measured it: ``live`` (torch's peak allocated, which
torchtune logs) or ``total`` (with the CUDA context and the allocator's reserve: what a
card must hold, as a maximum context that still fits says).

    python benchmarks/finetune_accuracy.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import dataclass
from typing import Any

from hwadvisor.catalog import find_device
from hwadvisor.estimate.llm.finetune_time import step_time
from hwadvisor.llm import DeviceSpec, FinetuneRequest, LlmArch, finetune_memory, resolve_model

GIB = 2**30
TORCHTUNE = (
    "pytorch/torchtune README 'Memory and training speed' (PR #1664, 2024-09): Llama-3.1, "
    "batch 2, packed 2048, compile and activation checkpointing on"
)
QWEN = (
    "QwenLM/Qwen README 'Profiling of Memory and Speed': 1x A100-SXM4-80G, PyTorch 2.0, "
    "FlashAttention 2, batch 1 x gradient accumulation 8, LoRA r64 on every linear, "
    "gradient checkpointing (finetune_lora_single_gpu.sh); memory read as GiB, whole process"
)
UNSLOTH = (
    "unslothai/unsloth README 'Llama 3.1 (8B) max. context length': QLoRA r32 on every "
    "linear, batch 1, padded to the length; the longest that fits the card"
)

LLAMA31_70B = LlmArch("llama-3.1-70b", 80, 8192, 64, 8, 128, 28672, 128256)
LLAMA31_405B = LlmArch("llama-3.1-405b", 126, 16384, 128, 8, 128, 53248, 128256)
QWEN_1_8B = LlmArch("qwen-1.8b", 24, 2048, 16, 16, 128, 5504, 151936, attention_bias=True)
QWEN_7B = LlmArch("qwen-7b", 32, 4096, 32, 32, 128, 11008, 151936, attention_bias=True)
QWEN_14B = LlmArch("qwen-14b", 40, 5120, 40, 40, 128, 13696, 152064, attention_bias=True)


@dataclass(frozen=True)
class Row:
    """One published run: the recipe, the published figures and where they come from."""

    name: str
    arch: LlmArch
    device: str
    req: FinetuneRequest
    memory_gib: float | None
    tokens_s: float | None
    source: str
    memory_basis: str = "live"  # live (torch allocated) or total (the card's need)
    tokens_per_iter: int | None = None  # tokens one published "iteration" covers
    sets: bool = False  # gave a constant of frameworks.yaml: left out of the summary


def _llama8b() -> LlmArch:
    return resolve_model("llama-3-8b").arch


def rows() -> list[Row]:
    """Every published row used (see the module docstring)."""
    tt = {
        "framework": "torchtune",
        "batch_size": 2,
        "seq_len": 2048,
        "gradient_checkpointing": True,
    }
    out = [
        Row("8B full, paged 8-bit AdamW, optimizer in backward", _llama8b(), "rtx-4090",
            FinetuneRequest(method="full", optimizer="paged_adamw8bit", **tt), 18.9, 1650, TORCHTUNE,
            sets=True),
        Row("8B LoRA r8 (q, v; priced on q, k, v, o)", _llama8b(), "rtx-4090",
            FinetuneRequest(method="lora", lora_rank=8, **tt), 16.2, 3083, TORCHTUNE, sets=True),
        Row("8B QLoRA r8 all-linear", _llama8b(), "rtx-4090",
            FinetuneRequest(method="qlora", lora_rank=8, target_modules="all-linear", **tt),
            7.4, 2413, TORCHTUNE),
        Row("70B full, FSDP, CPU offload", LLAMA31_70B, "a100-80gb",
            FinetuneRequest(method="full", gpus=8, strategy="fsdp", offload=True, **tt),
            13.9, 1568, TORCHTUNE),
        Row("70B LoRA r16 (q, k, v), FSDP", LLAMA31_70B, "a100-80gb",
            FinetuneRequest(method="lora", lora_rank=16, gpus=8, strategy="fsdp", **tt),
            27.6, 3497, TORCHTUNE, sets=True),
        Row("405B QLoRA r16 all-linear, FSDP", LLAMA31_405B, "a100-80gb",
            FinetuneRequest(method="qlora", lora_rank=16, target_modules="all-linear", gpus=8,
                            strategy="fsdp", **tt), 44.8e9 / GIB, 653, TORCHTUNE),
    ]  # fmt: skip
    qwen = {
        QWEN_1_8B: [(6.7, 1.0), (7.4, 1.0), (8.4, 1.1), (11.0, 1.7), (16.2, 3.3), (21.8, 6.8)],
        QWEN_7B: [(20.1, 1.2), (20.4, 1.5), (21.5, 2.8), (23.8, 5.2), (29.7, 10.1), (36.6, 21.3)],
        QWEN_14B: [(34.6, 1.6), (35.1, 2.4), (35.3, 4.4), (37.4, 8.4), (42.5, 17.0), (55.2, 36.0)],
    }
    for arch, figures in qwen.items():
        for seq, (gib, s_it) in zip((256, 512, 1024, 2048, 4096, 8192), figures, strict=True):
            req = FinetuneRequest(
                method="lora", lora_rank=64, target_modules="all-linear", batch_size=1,
                seq_len=seq, gradient_checkpointing=True, framework="hf",
            )  # fmt: skip
            out.append(
                Row(f"{arch.name} LoRA r64 all-linear, {seq} tokens", arch, "a100-80gb", req,
                    gib, 8 * seq / s_it, QWEN, memory_basis="total",
                    sets=arch is QWEN_7B and seq in (2048, 4096))
            )  # fmt: skip
    for fw, table in (
        ("hf", [(12, 932), (16, 2551), (24, 5789), (40, 12264), (48, 15502), (80, 28454)]),
        ("unsloth", [(8, 2972), (12, 21848), (16, 40724), (24, 78475), (40, 153977), (80, 342733)]),
    ):
        for vram, seq in table:
            req = FinetuneRequest(
                method="qlora", lora_rank=32, target_modules="all-linear", batch_size=1,
                seq_len=seq, gradient_checkpointing=True, framework=fw,
            )  # fmt: skip
            out.append(
                Row(f"8B QLoRA r32, {fw}, longest on {vram} GB: {seq} tokens", _llama8b(),
                    "a100-80gb", req, float(vram), None, UNSLOTH, memory_basis="total", sets=True)
            )  # fmt: skip
    return out


def estimate(row: Row) -> tuple[float, float]:
    """(peak memory GiB on the row's basis, tokens/s over all GPUs) of ``row``."""
    mem = finetune_memory(row.arch, row.req)
    spec = DeviceSpec.from_catalog(find_device(row.device))
    step = step_time(row.arch, mem, row.req, spec).total_s
    tokens = row.req.batch_size * row.req.seq_len * row.req.gpus
    peak = mem.live_bytes if row.memory_basis == "live" else mem.total_bytes
    return peak / GIB, tokens / step


def _err(est: float, pub: float) -> float:
    return (est - pub) / pub


def report() -> dict[str, Any]:
    """Every row with its errors, and the held-out summary."""
    out: list[dict[str, Any]] = []
    for row in rows():
        mem, tps = estimate(row)
        out.append(
            {
                "row": row.name,
                "device": f"{row.req.gpus}x {row.device}",
                "framework": row.req.profile.id,
                "memory_gib": round(mem, 2),
                "published_memory_gib": row.memory_gib,
                "memory_error": _err(mem, row.memory_gib) if row.memory_gib else None,
                "tokens_s": round(tps),
                "published_tokens_s": round(row.tokens_s) if row.tokens_s else None,
                "tokens_error": _err(tps, row.tokens_s) if row.tokens_s else None,
                "sets": row.sets,
                "source": row.source,
            }
        )
    summary = {}
    for key in ("memory_error", "tokens_error"):
        errs = [abs(r[key]) for r in out if r[key] is not None and not r["sets"]]
        summary[key] = {
            "n": len(errs),
            "median": statistics.median(errs) if errs else None,
            "worst": max(errs) if errs else None,
        }
    return {"rows": out, "held_out": summary}


def main() -> None:
    """Print the table and the held-out summary."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the rows and summary to this file")
    args = parser.parse_args()
    doc = report()
    sources: dict[str, int] = {}
    print(
        f"{'row':58} {'device':14} {'mem est':>8} {'pub':>6} {'err':>6} {'tok/s est':>9} {'pub':>6} {'err':>6} src"
    )
    for r in doc["rows"]:
        n = sources.setdefault(r["source"], len(sources) + 1)
        me = f"{r['memory_error']:+.0%}" if r["memory_error"] is not None else "-"
        te = f"{r['tokens_error']:+.0%}" if r["tokens_error"] is not None else "-"
        pm = f"{r['published_memory_gib']:.1f}" if r["published_memory_gib"] else "-"
        pt = str(r["published_tokens_s"] or "-")
        flag = " (sets)" if r["sets"] else ""
        print(
            f"{r['row'][:58]:58} {r['device']:14} {r['memory_gib']:8.1f} {pm:>6} {me:>6} {r['tokens_s']:9d} {pt:>6} {te:>6} [{n}]{flag}"
        )
    print()
    for text, n in sources.items():
        print(f"[{n}] {text}")
    print()
    for key, s in doc["held_out"].items():
        if s["median"] is not None:
            print(f"held out {key}: n={s['n']} median {s['median']:.0%} worst {s['worst']:.0%}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(doc, fh, indent=2)


if __name__ == "__main__":
    main()
