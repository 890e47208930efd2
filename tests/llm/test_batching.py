"""The continuous-batching curve: shape, memory limit, targets, and bad input."""

from __future__ import annotations

import itertools

import pytest

from hwadvisor.catalog import find_device
from hwadvisor.errors import UsageError
from hwadvisor.llm import DeviceSpec, ServingRequest, find_engine, find_format, resolve_model
from hwadvisor.llm.serving import (
    CurvePoint,
    batching_curve,
    largest_meeting,
    max_fitting_concurrency,
)

H100 = DeviceSpec.from_catalog(find_device("h100-sxm"))
REQ = ServingRequest(prompt_tokens=1000, output_tokens=1000, context=2048)
LLAMA = resolve_model("llama-3-8b").arch
BF16 = find_format("bf16")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "tensorrt-llm", "llama.cpp"])
def test_throughput_grows_and_latency_worsens_with_concurrency(engine: str) -> None:
    curve = batching_curve(LLAMA, BF16, find_engine(engine), H100, REQ)
    assert curve[0].concurrency == 1
    conc = [p.concurrency for p in curve]
    assert conc == sorted(conc) and len(set(conc)) == len(conc)
    for a, b in itertools.pairwise(curve):
        assert b.aggregate_tokens_s > a.aggregate_tokens_s
        assert b.requests_s > a.requests_s
    # Engines switch kernels with the batch (llama.cpp's mat-vec path ends at 8 tokens),
    # so a step may shorten between two points; the full batch is still slower than one.
    assert curve[-1].itl_s > curve[0].itl_s
    # Batching amortises the weight reads: far more than 10x the batch-1 throughput.
    assert curve[-1].aggregate_tokens_s > 10 * curve[0].aggregate_tokens_s


def test_engine_batch_limits_cap_the_curve() -> None:
    # generate() serves one static batch: priced one request at a time.
    assert [
        p.concurrency for p in batching_curve(LLAMA, BF16, find_engine("transformers"), H100, REQ)
    ] == [1]
    small = ServingRequest(prompt_tokens=64, output_tokens=64, context=128)
    vllm = batching_curve(LLAMA, BF16, find_engine("vllm"), H100, small)
    assert vllm[-1].concurrency == find_engine("vllm").max_sequences


def test_last_default_point_is_the_memory_limit() -> None:
    eng = find_engine("vllm")
    curve = batching_curve(LLAMA, BF16, eng, H100, REQ)
    top = max_fitting_concurrency(curve)
    assert top is not None and top is curve[-1]
    beyond = batching_curve(
        LLAMA, BF16, eng, H100, REQ, concurrencies=(top.concurrency, top.concurrency + 1)
    )
    assert [p.fits for p in beyond] == [True, False]
    # A 24 GB card holds far fewer 2k-token sequences beside 16 GB of weights.
    small = DeviceSpec.from_catalog(find_device("rtx-4090"))
    small_top = max_fitting_concurrency(batching_curve(LLAMA, BF16, eng, small, REQ))
    assert small_top is not None and small_top.concurrency < top.concurrency // 4


def test_requests_s_is_concurrency_over_request_latency() -> None:
    for p in batching_curve(LLAMA, BF16, find_engine("sglang"), H100, REQ):
        latency = p.concurrency / p.requests_s
        # A request's life: its prefill, then output_tokens inter-token gaps (about).
        assert latency == pytest.approx(p.ttft_s + REQ.output_tokens * p.itl_s, rel=0.05)
        assert p.aggregate_tokens_s == pytest.approx(p.requests_s * REQ.output_tokens)


def test_chunked_prefill_keeps_itl_below_a_stalling_engine_at_long_prompts() -> None:
    req = ServingRequest(prompt_tokens=7900, output_tokens=200, context=8192)
    points = (32,)
    chunked = batching_curve(LLAMA, BF16, find_engine("vllm"), H100, req, concurrencies=points)
    stalling = batching_curve(
        LLAMA, BF16, find_engine("llama.cpp"), H100, req, concurrencies=points
    )
    assert chunked[0].itl_s < stalling[0].itl_s


def test_largest_meeting_picks_the_highest_point_within_both_targets() -> None:
    curve = batching_curve(LLAMA, BF16, find_engine("vllm"), H100, REQ)
    itl_target = (curve[0].itl_s + curve[-1].itl_s) / 2
    best = largest_meeting(curve, itl_s=itl_target)
    assert best is not None and best.itl_s <= itl_target
    assert all(p.itl_s > itl_target for p in curve if p.concurrency > best.concurrency)
    assert largest_meeting(curve, ttft_s=curve[0].ttft_s / 10) is None
    assert largest_meeting(curve) == max_fitting_concurrency(curve)


def test_tensor_parallel_points_are_per_group_and_faster() -> None:
    arch70 = resolve_model("llama-2-70b").arch
    eng = find_engine("vllm")
    two = batching_curve(arch70, BF16, eng, H100, REQ, tp=2, concurrencies=(1, 8))
    four = batching_curve(arch70, BF16, eng, H100, REQ, tp=4, concurrencies=(1, 8))
    assert four[0].itl_s < two[0].itl_s
    assert isinstance(two[0], CurvePoint)


def test_model_that_does_not_fit_has_no_fitting_point() -> None:
    arch70 = resolve_model("llama-2-70b").arch
    curve = batching_curve(arch70, BF16, find_engine("vllm"), H100, REQ)
    assert [p.concurrency for p in curve] == [1] and not curve[0].fits
    assert max_fitting_concurrency(curve) is None


def test_bad_concurrency_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="concurrency"):
        batching_curve(LLAMA, BF16, find_engine("vllm"), H100, REQ, concurrencies=(0, 4))


def test_pipeline_parallel_holds_a_model_larger_than_a_node() -> None:
    arch405 = LLAMA.with_changes(name="405b-like", layers=126, hidden=16384, heads=128,
                                 intermediate=53248)  # fmt: skip
    eng, fp8 = find_engine("vllm"), find_format("fp8")
    one_node = batching_curve(arch405, BF16, eng, H100, REQ, tp=8, concurrencies=(1,))
    assert not one_node[0].fits
    two_nodes = batching_curve(arch405, BF16, eng, H100, REQ, tp=8, pp=2)
    assert two_nodes[0].fits and max_fitting_concurrency(two_nodes) is not None
    # A token crosses both stages: slower per token than one node would be, had it fit.
    fp8_node = batching_curve(arch405, fp8, eng, H100, REQ, tp=8, concurrencies=(1,))
    fp8_two = batching_curve(arch405, fp8, eng, H100, REQ, tp=8, pp=2, concurrencies=(1,))
    assert fp8_node[0].fits
    assert fp8_two[0].itl_s > fp8_node[0].itl_s
    with pytest.raises(UsageError, match="pipeline"):
        batching_curve(arch405, fp8, eng, H100, REQ, tp=8, pp=0)
