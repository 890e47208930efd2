"""Serving sized by continuous batching, beside published engine throughput under load.

Two sections, each printed as estimate beside published value with its source:

1. **Maximum throughput** (held out: no constant was set from these rows): requests/s
   of a vLLM deployment with as many requests in flight as its memory holds, against
   hwadvisor's ``--max-throughput`` row (:func:`hwadvisor.llm.serving.batching_curve`
   at the largest concurrency that fits) for the same model, GPU and tensor-parallel
   size, in the model's 16-bit checkpoint format. Source: vLLM's nightly performance
   benchmark, "Throughput tests" table (buildkite.com/vllm/performance-benchmark, build
   9515): 200 ShareGPT prompts, batch size set by vLLM for maximum throughput, on one
   H200 per tensor-parallel rank. The page does not state the prompt and output lengths;
   the ShareGPT means are taken from vLLM pull request #18566's benchmark output (1,000
   ShareGPT requests: 229,711 input and 203,068 generated tokens, so 230 and 203 a
   request). The engine version is not on the page either. These rows are a different
   regime from a steady load: all 200 prompts arrive at once and the run ends when the
   longest ShareGPT outputs finish, decoded by a batch that has drained to a few
   sequences, so the rate is under what a steady stream of requests sustains. The
   estimate (a steady closed loop at the concurrency memory allows) is printed beside
   them as a bound, not scored against a goal.
2. **A QPS target**: Mixtral-8x7B at 20 requests/s (512 prompt and 128 output tokens,
   ``recommend --qps 20``): GPUs each catalog row needs at the concurrency chosen
   for it, beside the GPUs the published H200 rate implies for the same load (20 /
   8.06 requests/s per 2-GPU replica; the published rate is at ShareGPT lengths, so
   this is an order-of-magnitude check: the goal is within 2x).

    python benchmarks/serving_sizing.py
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from hwadvisor.estimate import build_workload
from hwadvisor.models.options import WorkloadOptions
from hwadvisor.pipeline.rows import Rows

NIGHTLY = "vLLM nightly performance benchmark, throughput tests (buildkite build 9515), H200"
SHAREGPT_PROMPT, SHAREGPT_OUTPUT = 230, 203


@dataclass(frozen=True)
class Published:
    model: str
    gpu: str
    tp: int
    requests_s: float
    source: str


MAX_THROUGHPUT = (
    Published("llama-3-8b", "h200", 1, 22.5674, NIGHTLY),
    Published("llama-3-70b", "h200", 4, 9.83905, NIGHTLY),
    Published("mixtral-8x7b", "h200", 2, 8.06251, NIGHTLY),
)


def max_throughput_rows() -> list[float]:
    """Print each published row beside the estimate; return the relative errors."""
    print("Maximum throughput (held out; a drained batch, not a steady load: see above)")
    print(f"{'model':14} {'GPUs':>9} {'estimate':>9} {'published':>9} {'error':>7}  conc.")
    errors = []
    for row in MAX_THROUGHPUT:
        wl = build_workload(
            WorkloadOptions(
                task="serve",
                model=row.model,
                prompt_tokens=SHAREGPT_PROMPT,
                output_tokens=SHAREGPT_OUTPUT,
                max_throughput=True,
            )
        )
        est = Rows(wl, None, None).on([row.gpu], row.tp)[0]
        sv = est.serving
        rps = sv.requests_per_s if sv is not None else None
        if rps is None:
            print(f"{row.model:14} no estimate")
            continue
        err = rps / row.requests_s - 1
        errors.append(err)
        gpus = f"{row.tp} x {row.gpu}"
        conc = sv.concurrency if sv is not None else None
        print(f"{row.model:14} {gpus:>9} {rps:9.2f} {row.requests_s:9.2f} {err:+7.0%}  {conc}")
    print(f"  source: {NIGHTLY}")
    absolute = [abs(e) for e in errors]
    print(f"  median {statistics.median(absolute):.0%}, worst {max(absolute):.0%}")
    return errors


def mixtral_at_20() -> None:
    """GPUs per catalog row for Mixtral-8x7B at 20 requests/s."""
    qps = 20.0
    print()
    print("Mixtral-8x7B at 20 requests/s (512 prompt, 128 output tokens)")
    wl = build_workload(WorkloadOptions(task="serve", model="mixtral-8x7b", qps=qps))
    rows = Rows(wl, None, None)
    found = [*rows.on(["a100-80gb", "h100-sxm", "h200"]), *rows.on(["h100-sxm"], 2)]
    for est in found:
        sv = est.serving
        if sv is None or not est.fits or not sv.requests_per_s:
            print(f"  {est.gpus} x {est.device}: does not hold it")
            continue
        replicas = math.ceil(qps / sv.requests_per_s)
        gpus = replicas * est.gpus
        print(
            f"  {est.gpus} x {est.device} ({sv.quant}, {sv.concurrency} sequences): "
            f"{sv.requests_per_s:.1f} requests/s a replica -> {replicas} replica(s), {gpus} GPUs"
        )
    implied = math.ceil(qps / 8.06251) * 2
    print(f"  published H200 rate (ShareGPT lengths, 2-GPU replicas) implies {implied} GPUs")


def main() -> None:
    max_throughput_rows()
    mixtral_at_20()


if __name__ == "__main__":
    main()
