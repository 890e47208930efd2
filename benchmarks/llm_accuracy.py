"""Accuracy of hwadvisor's LLM serving estimate against published llama.cpp figures.

Each row is a batch-1 llama.cpp measurement published for an RTX 4090 or 3090 (llama-bench
defaults: ``pp512`` = prompt processing of 512 tokens, ``tg128`` = generating 128 tokens
from an empty context, so a mean context of 64). The estimate prices the same model,
weight format and GPU from the catalog alone (datasheet peaks x the catalog's achieved
fractions, the llama.cpp engine class of ``engines.yaml``); nothing here is fitted to these
figures. Prints estimate vs published with the error, then the median and worst absolute
error. Goal: median <= 20%, worst <= 45%.

Sources of the published figures:

- XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README (llama.cpp, CUDA 12.1, Dec 2023):
  https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference
- ggml-org/llama.cpp pull request #4766 (Jan 2024), RTX 4090 llama-bench tables:
  https://github.com/ggml-org/llama.cpp/pull/4766

    python benchmarks/llm_accuracy.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from hwadvisor.catalog import find_device
from hwadvisor.llm import DeviceSpec, find_engine, find_format, resolve_model
from hwadvisor.llm.serving import decode_step_seconds, prefill_seconds

XIONGJIEDAI = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (Dec 2023)"
PR4766 = "ggml-org/llama.cpp PR #4766 (Jan 2024)"

# model, quant, device, test ("tg128" or "pp512"), published tokens/s, source
PUBLISHED: list[tuple[str, str, str, str, float, str]] = [
    ("llama-2-7b", "q4_0", "rtx-4090", "tg128", 149.4, XIONGJIEDAI),
    ("llama-2-7b", "q4_0", "rtx-4090", "pp512", 5531.0, XIONGJIEDAI),
    ("llama-2-7b", "q4_0", "rtx-3090", "tg128", 120.6, XIONGJIEDAI),
    ("llama-2-7b", "fp16", "rtx-4090", "tg128", 60.8, XIONGJIEDAI),
    ("llama-2-7b", "fp16", "rtx-4090", "pp512", 11048.0, PR4766),
    ("llama-7b", "q8_0", "rtx-4090", "tg128", 98.1, PR4766),
]


def estimate(model: str, quant: str, device: str, test: str) -> float:
    """hwadvisor's tokens/s for one llama-bench test, from catalog figures only."""
    arch = resolve_model(model).arch
    fmt, engine = find_format(quant), find_engine("llama.cpp")
    spec = DeviceSpec.from_catalog(find_device(device))
    if test == "pp512":
        return 512 / prefill_seconds(arch, fmt, engine, spec, 512)
    step, _ = decode_step_seconds(arch, fmt, engine, spec, context=64)
    return 1 / step


def rows() -> list[dict[str, Any]]:
    """One dict per published figure: the estimate beside it and the signed error."""
    out = []
    for model, quant, device, test, published, source in PUBLISHED:
        est = estimate(model, quant, device, test)
        out.append(
            {
                "model": model,
                "quant": quant,
                "device": device,
                "test": test,
                "published": published,
                "estimate": round(est, 1),
                "error_pct": round((est - published) / published * 100, 1),
                "source": source,
            }
        )
    return out


def main() -> int:
    """Print the table, median and worst error; exit 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    table = rows()
    print(
        f"{'model':<11} {'quant':<6} {'device':<9} {'test':<6} {'published':>10} {'estimate':>9} {'error':>7}"
    )
    for r in table:
        print(
            f"{r['model']:<11} {r['quant']:<6} {r['device']:<9} {r['test']:<6} "
            f"{r['published']:>10.1f} {r['estimate']:>9.1f} {r['error_pct']:>+6.1f}%"
        )
    errors = [abs(r["error_pct"]) for r in table]
    median, worst = statistics.median(errors), max(errors)
    print(f"median |error| {median:.1f}% (goal <= 20%), worst {worst:.1f}% (goal <= 45%)")
    for source in dict.fromkeys(r["source"] for r in table):
        print(f"source: {source}")
    if args.json:
        args.json.write_text(
            json.dumps({"rows": table, "median_pct": median, "worst_pct": worst}, indent=2)
        )
    return 0 if median <= 20 and worst <= 45 else 1


if __name__ == "__main__":
    sys.exit(main())
