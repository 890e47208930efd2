"""Serving sized by continuous batching (issue 40): the concurrency that fits memory and
the latency target per device, then replicas for the QPS."""

from __future__ import annotations

from typing import Any

from hwadvisor.estimate import build_workload
from hwadvisor.models.options import WorkloadOptions
from hwadvisor.pipeline.rows import Rows


def _rows(**options: Any) -> dict[str, Any]:
    wl = build_workload(WorkloadOptions(task="serve", **options))
    rows = Rows(wl, None, None).on(["a100-80gb", "h100-sxm", "t4"])
    return {r.device: r for r in rows}


def test_a_qps_target_batches_as_many_sequences_as_memory_holds() -> None:
    rows = _rows(model="llama-3-8b", qps=20)
    a100 = rows["a100-80gb"].serving
    assert a100 is not None and a100.concurrency is not None
    assert a100.concurrency > 8
    assert a100.concurrency_chosen and "memory" in a100.concurrency_chosen
    assert a100.curve and a100.curve[-1].concurrency >= a100.concurrency
    assert a100.requests_per_s_per_gpu is not None and a100.requests_per_s_per_gpu > 1.0
    # More sequences in flight serve more requests per second than one at a time.
    one = _rows(model="llama-3-8b", qps=20, concurrency=1)["a100-80gb"].serving
    assert one is not None and one.requests_per_s is not None and a100.requests_per_s
    assert a100.requests_per_s > 5 * one.requests_per_s


def test_given_concurrency_stays_an_override() -> None:
    sv = _rows(model="llama-3-8b", qps=20, concurrency=4)["a100-80gb"].serving
    assert sv is not None and sv.concurrency == 4 and sv.concurrency_chosen is None
    assert sv.curve == []


def test_a_latency_target_holds_the_batch_back() -> None:
    free = _rows(model="llama-3-8b", qps=20)["a100-80gb"].serving
    assert free is not None and len(free.curve) > 3
    # A first-token target between two points of the curve stops the batch at the lower.
    low, high = free.curve[-3], free.curve[-2]
    assert low.ttft_s < high.ttft_s
    target_ms = 1000 * (low.ttft_s + high.ttft_s) / 2
    tight = _rows(model="llama-3-8b", qps=20, latency_ms=target_ms)["a100-80gb"].serving
    assert tight is not None and tight.concurrency == low.concurrency
    assert tight.ttft_s is not None and tight.ttft_s * 1000 <= target_ms


def test_max_throughput_without_a_qps() -> None:
    sv = _rows(model="llama-3-8b", max_throughput=True)["h100-sxm"].serving
    assert sv is not None and sv.concurrency is not None and sv.concurrency > 8


def test_a_model_too_big_for_one_gpu_in_16_bits_is_sized_in_a_lighter_format() -> None:
    rows = _rows(model="mixtral-8x7b", qps=20)
    a100 = rows["a100-80gb"]
    assert a100.fits and a100.serving is not None and a100.serving.quant == "fp8"
    # Asked for 16 bits, it stays 16 bits and does not fit one GPU.
    asked = _rows(model="mixtral-8x7b", qps=20, quant="bf16")["a100-80gb"]
    assert asked.fits is False and asked.serving is not None and asked.serving.quant == "bf16"


def test_the_terminal_shows_each_rows_concurrency(cli: Any) -> None:
    res = cli(
        "recommend", "-s", "inference", "-m", "llama-3-8b", "--qps", "20", "--no-bench",
        "--facts", "tests/data/facts/laptop.json",
    )  # fmt: skip
    assert res.code in (0, 1), res.err
    assert "seqs chosen per device by continuous batching" in res.out
    serving = res.out[res.out.index("seqs chosen per device") :]
    a100 = next(line for line in serving.splitlines() if line.startswith("NVIDIA A100"))
    chosen = _rows(model="llama-3-8b", qps=20)["a100-80gb"].serving
    assert chosen is not None and f" {chosen.concurrency} " in a100
