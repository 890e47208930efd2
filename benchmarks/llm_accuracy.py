"""Accuracy of hwadvisor's LLM serving estimate against published engine figures.

Each row is a published measurement beside hwadvisor's estimate for the same model,
weight format, engine, GPU and tensor-parallel size, from the catalogs alone (datasheet
peaks x achieved fractions, ``catalog/data/engines.yaml``). Rows marked ``used`` set a
constant of ``engines.yaml`` (each says which); the goals are scored on the held-out rows
only, and the used rows are printed apart so the fit is visible.

Sections:

- **llama.cpp, batch 1**: ``tg`` = generating tokens from a short context (llama-bench
  ``tg128``/``tg512``, or ``main``'s eval speed), ``pp`` = prompt processing of 512 tokens.
  Goal on held-out rows: median <= 20%, worst <= 45%.
- **engines**: batch-1 generation of vLLM and transformers (2,048 tokens over the whole
  ``generate()`` call the Qwen scripts time, the prompt's prefill included), time to first token of
  TensorRT-LLM at batch 1 (tensor parallel over NVLink where the row says), and the
  maximum throughput of TensorRT-LLM with as many requests in flight as memory holds
  (:func:`hwadvisor.llm.serving.batching_curve` at its largest fitting concurrency).
  Goal on held-out rows: median <= 20%, worst <= 50%.

Sources of the published figures:

- XiongjieDai/GPU-Benchmarks-on-LLM-Inference, README (llama.cpp, CUDA 12.1; Llama 2
  snapshots Dec 2023, Llama 3 snapshots May 2024): https://github.com/XiongjieDai/GPU-Benchmarks-on-LLM-Inference
- ggml-org/llama.cpp pull request #4766 (Jan 2024), RTX 4090 llama-bench tables.
  The Dec 2023 prompt rows are ``main``'s prompt eval of a 494-token prompt (build 1691,
  the notebooks under ``LLaMA 2/``), priced here as 512.
- QwenLM/Qwen2.5 ``docs/source/benchmark/speed_benchmark.rst`` (2024-11; vLLM 0.6.3,
  transformers 4.46 with FlashAttention 2, one or two A100 80GB, batch 1).
- NVIDIA/TensorRT-LLM ``docs/source/performance.md`` (v0.5/v0.6.1, 2023): batch-1 first
  token latency; ``docs/source/performance/perf-overview.md`` (v1.0, PyTorch backend):
  total output tokens/s under maximum load, ModelOpt FP8 and NVFP4 checkpoints (FP8 KV
  cache assumed, as those checkpoints quantize it); the NVFP4 rows (B200, RTX PRO 6000
  Blackwell) price the products at the device's fp4 peak. Read at commit 00f37686.

    python benchmarks/llm_accuracy.py [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hwadvisor.catalog import find_device
from hwadvisor.llm import DeviceSpec, ServingRequest, find_engine, find_format, resolve_model
from hwadvisor.llm.serving import (
    batching_curve,
    decode_step_seconds,
    max_fitting_concurrency,
    prefill_seconds,
)

XJD = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (llama.cpp, Dec 2023)"
XJD3 = "XiongjieDai/GPU-Benchmarks-on-LLM-Inference README (llama.cpp, May 2024, llama-bench)"
PR4766 = "ggml-org/llama.cpp PR #4766 (Jan 2024, llama-bench)"
QWEN = "QwenLM/Qwen2.5 speed_benchmark.rst (2024-11, A100 80GB, batch 1)"
TRT05 = "NVIDIA/TensorRT-LLM docs/source/performance.md (v0.5, batch-1 first-token latency)"
TRT10 = "NVIDIA/TensorRT-LLM perf-overview.md (v1.0, PyTorch backend, max throughput; 00f37686)"


@dataclass(frozen=True)
class Row:
    """One published figure and what is needed to estimate it."""

    section: str  # "llama.cpp" or "engines"
    test: str  # tg, pp, decode, ttft_ms, max_tok_s
    model: str
    quant: str
    device: str
    engine: str
    published: float
    source: str
    used: str = ""  # the engines.yaml constant this row set, or "" when held out
    context: int = 64
    tokens: int = 512
    output: int = 0
    tp: int = 1
    kv_bytes: float = 2


def _lcpp(test: str, model: str, quant: str, device: str, pub: float, **kw: Any) -> Row:
    return Row("llama.cpp", test, model, quant, device, "llama.cpp", pub, **kw)


ROWS: list[Row] = [
    # llama.cpp batch-1 decode (Dec 2023 eval speed; Llama-3 rows: tg512).
    _lcpp("tg", "llama-2-7b", "q4_0", "a100-80gb", 136.24, source=XJD, used="ceiling, hbm kernel_us"),
    _lcpp("tg", "llama-2-70b", "q4_0", "a100-80gb", 25.68, source=XJD, used="ceiling, hbm kernel_us"),
    _lcpp("tg", "llama-2-7b", "fp16", "a100-80gb", 73.83, source=XJD, used="ceiling"),
    _lcpp("tg", "llama-2-7b", "q4_0", "rtx-4090", 149.37, source=XJD, used="gddr kernel_us"),
    _lcpp("tg", "llama-2-7b", "q4_0", "h100-pcie", 133.77, source=XJD),
    _lcpp("tg", "llama-2-7b", "fp16", "h100-pcie", 83.32, source=XJD),
    _lcpp("tg", "llama-2-70b", "q4_0", "h100-pcie", 25.88, source=XJD),
    _lcpp("tg", "llama-2-7b", "q4_0", "rtx-3090", 120.6, source=XJD),
    _lcpp("tg", "llama-2-7b", "fp16", "rtx-3090", 51.85, source=XJD),
    _lcpp("tg", "llama-2-7b", "fp16", "rtx-4090", 60.78, source=XJD),
    _lcpp("tg", "llama-2-7b", "q4_0", "rtx-a6000", 111.57, source=XJD),
    _lcpp("tg", "llama-2-7b", "fp16", "rtx-a6000", 44.01, source=XJD),
    _lcpp("tg", "llama-2-70b", "q4_0", "rtx-a6000", 15.18, source=XJD),
    _lcpp("tg", "llama-7b", "q8_0", "rtx-4090", 98.1, source=PR4766),
    _lcpp("tg", "llama-3-8b", "q4_k_m", "rtx-4090", 130.58, source=XJD3, context=256),
    _lcpp("tg", "llama-3-8b", "fp16", "rtx-4090", 54.84, source=XJD3, context=256),
    _lcpp("tg", "llama-3-8b", "q4_k_m", "rtx-3090", 115.42, source=XJD3, context=256),
    _lcpp("tg", "llama-3-8b", "fp16", "rtx-3090", 47.40, source=XJD3, context=256),
    # llama.cpp prompt processing, 512 tokens.
    _lcpp("pp", "llama-2-7b", "fp16", "a100-80gb", 5105.77, source=XJD, used="hbm prefill ceiling"),
    _lcpp("pp", "llama-2-70b", "q4_0", "a100-80gb", 612.41, source=XJD, used="hbm prefill ceiling"),
    _lcpp("pp", "llama-2-7b", "q4_0", "a100-80gb", 3443.98, source=XJD),
    _lcpp("pp", "llama-2-7b", "q4_0", "h100-pcie", 4868.59, source=XJD),
    _lcpp("pp", "llama-2-7b", "fp16", "h100-pcie", 7367.0, source=XJD),
    _lcpp("pp", "llama-2-70b", "q4_0", "h100-pcie", 855.73, source=XJD),
    _lcpp("pp", "llama-2-7b", "q4_0", "rtx-4090", 5531.19, source=XJD, used="prefill fraction"),
    _lcpp("pp", "llama-2-7b", "fp16", "rtx-4090", 7331.23, source=XJD, used="prefill fraction"),
    _lcpp("pp", "llama-2-7b", "fp16", "rtx-4090", 11048.0, source=PR4766),
    _lcpp("pp", "llama-2-7b", "q4_0", "rtx-3090", 2601.81, source=XJD),
    _lcpp("pp", "llama-2-7b", "fp16", "rtx-3090", 3075.37, source=XJD),
    _lcpp("pp", "llama-2-7b", "q4_0", "rtx-a6000", 2979.12, source=XJD),
    _lcpp("pp", "llama-2-7b", "fp16", "rtx-a6000", 3729.26, source=XJD),
    _lcpp("pp", "llama-3-8b", "q4_k_m", "rtx-4090", 7138.99, source=XJD3),
    _lcpp("pp", "llama-3-8b", "fp16", "rtx-4090", 9382.0, source=XJD3),
    _lcpp("pp", "llama-3-8b", "q4_k_m", "rtx-3090", 4030.40, source=XJD3),
    # Engines at batch 1: 2,048 generated tokens over the whole generate() call, the prompt's
    # prefill included (both Qwen scripts time the call); decode priced at the mean context.
    Row("engines", "decode", "qwen2.5-7b", "bf16", "a100-80gb", "vllm", 84.28, QWEN,
        used="vllm step_overhead_us", context=1 + 1024, tokens=1, output=2048),
    Row("engines", "decode", "qwen2.5-7b", "awq", "a100-80gb", "vllm", 148.1, QWEN,
        used="vllm step_overhead_us", context=1 + 1024, tokens=1, output=2048),
    Row("engines", "decode", "qwen2.5-7b", "bf16", "a100-80gb", "vllm", 70.33, QWEN,
        context=30720 + 1024, tokens=30720, output=2048),
    Row("engines", "decode", "qwen2.5-72b", "bf16", "a100-80gb", "vllm", 18.19, QWEN,
        context=1 + 1024, tp=2, tokens=1, output=2048),
    Row("engines", "decode", "qwen2.5-7b", "bf16", "a100-80gb", "transformers", 40.38, QWEN,
        context=1 + 1024, tokens=1, output=2048),
    Row("engines", "decode", "qwen2.5-7b", "bf16", "a100-80gb", "transformers", 29.78, QWEN,
        context=14336 + 1024, tokens=14336, output=2048),
    Row("engines", "decode", "qwen2.5-7b", "bf16", "a100-80gb", "transformers", 18.83, QWEN,
        context=30720 + 1024, tokens=30720, output=2048),
    # TensorRT-LLM first-token latency at batch 1 (ms). How they were timed (performance.md
    # at v0.6.1, "Reproducing First Token Latency", and gptSessionBenchmark.cpp): one
    # GptSession::generate call with one output token (--input_output_len "128,1"; with
    # maxNewTokens 1 generateSingleBatch runs the context step, sampling and output
    # gathering, no generation step), host clock around it, mean of 5 runs after 1 warm-up.
    # The engines were built once for throughput (max_batch_size 64, max_input_len 2048,
    # --strongly_typed --enable_fp8 --fp8_kv_cache on H100/L40S, no --use_fused_mlp). The
    # H100 FP8 rows come out 21-50% fast while, at 128 tokens, L40S FP8 (-1%) and A100 FP16
    # (-8%, -13%) do not: a per-request cost of the runtime, alike on every GPU, cannot
    # explain the H100 gap, so none is added.
    Row("engines", "ttft_ms", "llama-2-7b", "fp8", "h100-sxm", "tensorrt-llm", 7, TRT05, tokens=128),
    Row("engines", "ttft_ms", "llama-2-7b", "fp8", "h100-sxm", "tensorrt-llm", 36, TRT05, tokens=2048),
    Row("engines", "ttft_ms", "llama-2-70b", "fp8", "h100-sxm", "tensorrt-llm", 26, TRT05, tokens=128, tp=4),
    Row("engines", "ttft_ms", "llama-2-70b", "fp8", "h100-sxm", "tensorrt-llm", 109, TRT05, tokens=2048, tp=4),
    Row("engines", "ttft_ms", "llama-2-7b", "fp16", "a100-80gb", "tensorrt-llm", 16, TRT05, tokens=128),
    Row("engines", "ttft_ms", "llama-2-7b", "fp16", "a100-80gb", "tensorrt-llm", 133, TRT05, tokens=2048),
    Row("engines", "ttft_ms", "llama-2-70b", "fp16", "a100-80gb", "tensorrt-llm", 47, TRT05, tokens=128, tp=4),
    Row("engines", "ttft_ms", "llama-2-70b", "fp16", "a100-80gb", "tensorrt-llm", 377, TRT05, tokens=2048, tp=4),
    Row("engines", "ttft_ms", "llama-2-7b", "fp8", "l40s", "tensorrt-llm", 14, TRT05, tokens=128),
    Row("engines", "ttft_ms", "llama-2-7b", "fp8", "l40s", "tensorrt-llm", 73, TRT05, tokens=2048),
    # TensorRT-LLM maximum throughput (output tokens/s), Llama-3.1-8B FP8 (Llama-3-8B shape).
    *(
        Row("engines", "max_tok_s", "llama-3-8b", "fp8", dev, "tensorrt-llm", pub, TRT10,
            tokens=isl, output=osl, kv_bytes=1)
        for dev, isl, osl, pub in [
            ("h100-sxm", 128, 128, 28312), ("h100-sxm", 128, 2048, 22714),
            ("h100-sxm", 1000, 1000, 15220), ("h100-sxm", 2048, 128, 3450),
            ("h100-sxm", 2048, 2048, 9305), ("h100-sxm", 5000, 500, 3459),
            ("h100-sxm", 20000, 2000, 1351),
            ("h200", 128, 128, 27911), ("h200", 128, 2048, 26221),
            ("h200", 1000, 1000, 17744), ("h200", 2048, 128, 3538),
            ("h200", 2048, 2048, 12194), ("h200", 5000, 500, 3902),
            ("h200", 20000, 2000, 1804),
        ]
    ),
    # Llama-3.3-70B FP8 (Llama-3-70B shape): H200 on one GPU, H100 over NVLink TP2.
    *(
        Row("engines", "max_tok_s", "llama-3-70b", "fp8", dev, "tensorrt-llm", pub, TRT10,
            tokens=isl, output=osl, tp=tp, kv_bytes=1)
        for dev, tp, isl, osl, pub in [
            ("h200", 1, 128, 2048, 4336), ("h200", 1, 1000, 1000, 2909),
            ("h200", 1, 2048, 128, 442), ("h200", 1, 5000, 500, 566),
            ("h100-sxm", 2, 128, 2048, 6651), ("h100-sxm", 2, 1000, 1000, 4205),
            ("h100-sxm", 2, 2048, 128, 762), ("h100-sxm", 2, 5000, 500, 898),
        ]
    ),
    # Llama-3.3-70B NVFP4 (nvidia/Llama-3.3-70B-Instruct-FP4; FP8 KV cache assumed, as for
    # the FP8 rows) on one GPU with FP4 tensor cores: B200 (DGX B200) and the RTX PRO 6000
    # Blackwell Server Edition (the catalog's entry is the Workstation Edition: the same
    # GB202, 96 GB and 1,792 GB/s). The weights' products at the fp4 peak.
    *(
        Row("engines", "max_tok_s", "llama-3-70b", "nvfp4", dev, "tensorrt-llm", pub, TRT10,
            tokens=isl, output=osl, kv_bytes=1)
        for dev, isl, osl, pub in [
            ("b200", 128, 128, 11147), ("b200", 128, 2048, 9922), ("b200", 1000, 1000, 7007),
            ("b200", 2048, 128, 1339), ("b200", 5000, 500, 1459), ("b200", 20000, 2000, 665),
            ("rtx-pro-6000", 128, 128, 3264), ("rtx-pro-6000", 128, 2048, 2422),
            ("rtx-pro-6000", 1000, 1000, 1787), ("rtx-pro-6000", 2048, 128, 393),
            ("rtx-pro-6000", 5000, 500, 401), ("rtx-pro-6000", 20000, 2000, 142),
        ]
    ),
]  # fmt: skip


def estimate(row: Row) -> float:
    """hwadvisor's figure for one row, in the row's unit."""
    arch = resolve_model(row.model).arch
    fmt, engine = find_format(row.quant), find_engine(row.engine)
    spec = DeviceSpec.from_catalog(find_device(row.device))
    if row.test in ("pp", "ttft_ms"):
        seconds = prefill_seconds(arch, fmt, engine, spec, row.tokens, row.tp)
        return row.tokens / seconds if row.test == "pp" else seconds * 1e3
    if row.test == "max_tok_s":
        req = ServingRequest(
            prompt_tokens=row.tokens,
            output_tokens=row.output,
            context=row.tokens + row.output,
            kv_bytes_per_element=row.kv_bytes,
        )
        top = max_fitting_concurrency(batching_curve(arch, fmt, engine, spec, req, tp=row.tp))
        return top.aggregate_tokens_s if top else 0.0
    step, _ = decode_step_seconds(arch, fmt, engine, spec, context=row.context, tp=row.tp)
    if not row.output:
        return 1 / step
    prefill = prefill_seconds(arch, fmt, engine, spec, row.tokens, row.tp)
    return row.output / (prefill + row.output * step)


def rows() -> list[dict[str, Any]]:
    """One dict per published figure: the estimate beside it and the signed error."""
    out = []
    for row in ROWS:
        est = estimate(row)
        out.append(
            {
                "section": row.section,
                "test": row.test,
                "model": row.model,
                "quant": row.quant,
                "device": row.device,
                "engine": row.engine,
                "tp": row.tp,
                "tokens": f"{row.tokens}/{row.output}" if row.output else "",
                "published": row.published,
                "estimate": round(est, 1),
                "error_pct": round((est - row.published) / row.published * 100, 1),
                "used": row.used,
                "source": row.source,
            }
        )
    return out


def summary(table: list[dict[str, Any]], section: str, used: bool) -> tuple[float, float, int]:
    """Median and worst |error| of a section's held-out (or used) rows, and their count."""
    errors = [
        abs(r["error_pct"]) for r in table if r["section"] == section and bool(r["used"]) == used
    ]
    if not errors:
        return 0.0, 0.0, 0
    return statistics.median(errors), max(errors), len(errors)


GOALS = {"llama.cpp": (20.0, 45.0), "engines": (20.0, 50.0)}


def main() -> int:
    """Print the tables and the held-out medians; exit 1 when a goal is missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args()
    table = rows()
    ok = True
    for section, (goal_median, goal_worst) in GOALS.items():
        print(f"\n{section}")
        print(
            f"{'test':<9} {'model':<12} {'quant':<6} {'device':<9} {'engine':<12} {'tp':>2} "
            f"{'in/out':<10} {'published':>10} {'estimate':>9} {'error':>7}  used for"
        )
        for r in (r for r in table if r["section"] == section):
            print(
                f"{r['test']:<9} {r['model']:<12} {r['quant']:<6} {r['device']:<9} "
                f"{r['engine']:<12} {r['tp']:>2} {r['tokens']:<10} {r['published']:>10.1f} "
                f"{r['estimate']:>9.1f} {r['error_pct']:>+6.1f}%  {r['used']}"
            )
        median, worst, n = summary(table, section, used=False)
        print(
            f"held out ({n} rows): median |error| {median:.1f}% (goal <= {goal_median:g}%), "
            f"worst {worst:.1f}% (goal <= {goal_worst:g}%)"
        )
        u_median, u_worst, u_n = summary(table, section, used=True)
        if u_n:
            print(
                f"used to set constants ({u_n} rows): median {u_median:.1f}%, worst {u_worst:.1f}%"
            )
        ok = ok and median <= goal_median and worst <= goal_worst
    print()
    for source in dict.fromkeys(r["source"] for r in table):
        print(f"source: {source}")
    if args.json:
        args.json.write_text(json.dumps({"rows": table}, indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
