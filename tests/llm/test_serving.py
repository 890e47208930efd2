"""Serving: the known-answer memory cases of issue 12, and the physics' directions."""

from __future__ import annotations

import pytest

from hwadvisor.catalog import find_device
from hwadvisor.errors import UsageError
from hwadvisor.llm import (
    DeviceSpec,
    ServingRequest,
    default_engine,
    estimate_serving,
    find_engine,
    find_format,
    memory_fit,
    resolve_model,
    smallest_fit,
)
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.serving import decode_step_seconds, prefill_seconds

GPU24 = DeviceSpec.from_catalog(find_device("rtx-4090"))
GPU80 = DeviceSpec.from_catalog(find_device("a100-80gb"))
ENGINES = ["vllm", "llama.cpp", "transformers"]


def arch(ident: str) -> LlmArch:
    return resolve_model(ident).arch


@pytest.mark.parametrize("engine", ENGINES)
def test_llama3_8b_bf16_8192_context_2_sequences_fit_24gb_16_do_not(engine: str) -> None:
    llama, bf16, eng = arch("llama-3-8b"), find_format("bf16"), find_engine(engine)
    assert llama.kv_bytes_per_token(8192) == 128 * 1024
    two = memory_fit(llama, bf16, eng, GPU24, context=8192, concurrency=2)
    sixteen = memory_fit(llama, bf16, eng, GPU24, context=8192, concurrency=16)
    assert two.fits and not sixteen.fits
    assert 2 <= two.max_concurrency < 16
    assert sixteen.kv_bytes == 16 * 8192 * 128 * 1024


@pytest.mark.parametrize("engine", ENGINES)
def test_70b_fp16_needs_two_80gb_gpus_and_fits_one_in_4_bit(engine: str) -> None:
    llama, eng = arch("llama-2-70b"), find_engine(engine)
    fp16 = smallest_fit(llama, find_format("fp16"), eng, GPU80, context=4096)
    assert fp16 is not None and fp16.tp == 2 and fp16.comm_bytes > 0
    for quant in ("q4_k_m", "awq", "gptq", "nf4", "q4_0"):
        four = smallest_fit(llama, find_format(quant), eng, GPU80, context=4096)
        assert four is not None and four.tp == 1, quant


def test_mixtral_speed_on_active_memory_on_total() -> None:
    mixtral, q4, eng = arch("mixtral-8x7b"), find_format("q4_k_m"), find_engine("llama.cpp")
    dense_active = LlmArch("dense", 32, 4096, 32, 8, 128, 2 * 14336, 32000)  # 2 experts' MLP
    moe_step, _ = decode_step_seconds(mixtral, q4, eng, GPU80, context=512)
    dense_step, _ = decode_step_seconds(dense_active, q4, eng, GPU80, context=512)
    assert moe_step == pytest.approx(dense_step, rel=0.01)
    fit = memory_fit(mixtral, q4, eng, GPU80, context=4096)
    assert fit.weights_bytes == pytest.approx(q4.weight_bytes(mixtral))
    assert fit.weights_bytes > 46.7e9 * 4.8 / 8
    est = estimate_serving(mixtral, q4, eng, GPU80)
    assert any("12.9 B active" in a and "46.7 B" in a for a in est.assumptions)


def test_moe_batch_touches_more_experts_per_step() -> None:
    mixtral, bf16, eng = arch("mixtral-8x7b"), find_format("bf16"), find_engine("vllm")
    one, _ = decode_step_seconds(mixtral, bf16, eng, GPU80, context=512, batch=1)
    many, _ = decode_step_seconds(mixtral, bf16, eng, GPU80, context=512, batch=32)
    assert many > 2 * one  # 32 tokens reach nearly all 8 experts, not 2


def test_decode_is_memory_bound_and_batching_raises_aggregate() -> None:
    llama, bf16, eng = arch("llama-3-8b"), find_format("bf16"), find_engine("vllm")
    one = estimate_serving(llama, bf16, eng, GPU80, ServingRequest(concurrency=1))
    many = estimate_serving(llama, bf16, eng, GPU80, ServingRequest(concurrency=32))
    assert one.decode_bound == "memory"
    assert one.aggregate_tokens_per_s == pytest.approx(one.decode_tokens_per_s)
    assert many.aggregate_tokens_per_s > 10 * one.aggregate_tokens_per_s
    assert many.decode_tokens_per_s == pytest.approx(one.decode_tokens_per_s)
    assert many.requests_per_s > one.requests_per_s
    huge = estimate_serving(llama, bf16, eng, GPU80, ServingRequest(concurrency=4096, context=4096))
    assert huge.decode_bound == "compute"


def test_prefill_is_compute_bound_and_far_faster_than_decode() -> None:
    llama, bf16, eng = arch("llama-3-8b"), find_format("bf16"), find_engine("vllm")
    est = estimate_serving(llama, bf16, eng, GPU80)
    flops = llama.prefill_flops(512)
    peak = GPU80.peak_flops["bf16"] * GPU80.gemm_fraction
    assert prefill_seconds(llama, bf16, eng, GPU80, 512) >= flops / peak
    assert est.prefill_tokens_per_s > 20 * est.decode_tokens_per_s
    assert est.ttft_s == pytest.approx(512 / est.prefill_tokens_per_s)


def test_quantized_weights_decode_faster_than_fp16() -> None:
    llama, eng = arch("llama-2-7b"), find_engine("llama.cpp")
    speed = {
        q: estimate_serving(llama, find_format(q), eng, GPU24).decode_tokens_per_s
        for q in ("fp16", "q8_0", "q4_0")
    }
    assert speed["q4_0"] > speed["q8_0"] > speed["fp16"]


def test_vllm_takes_ninety_percent_and_no_more() -> None:
    eng = find_engine("vllm")
    assert eng.memory_utilization == 0.9
    fit = memory_fit(arch("qwen2.5-0.5b"), find_format("bf16"), eng, GPU24, context=4096)
    assert fit.budget_bytes == pytest.approx(0.9 * GPU24.memory_bytes)


def test_unified_memory_budget_is_the_gpu_share() -> None:
    mac = DeviceSpec.from_catalog(find_device("apple-m2-ultra"))
    assert mac.usable_memory == pytest.approx(0.75 * 192e9)
    eng = find_engine("llama.cpp")
    qwen = memory_fit(arch("qwen2.5-72b"), find_format("fp16"), eng, mac, context=4096)
    assert (
        qwen.weights_bytes < mac.memory_bytes and not qwen.fits
    )  # 145 GB: in RAM, not the GPU's share
    assert memory_fit(arch("llama-2-70b"), find_format("fp16"), eng, mac, context=4096).fits


def test_cpu_serving_follows_measured_bandwidth_and_threads() -> None:
    llama, q4, eng = arch("llama-2-7b"), find_format("q4_0"), find_engine("llama.cpp")

    def cpu(bw: float, threads: int) -> DeviceSpec:
        return DeviceSpec.measured_cpu(
            name="here",
            bandwidth_bytes_s=bw,
            threads=threads,
            flops_per_thread=150e9,
            memory_bytes=64e9,
        )

    slow = estimate_serving(llama, q4, eng, cpu(20e9, 4))
    fast = estimate_serving(llama, q4, eng, cpu(80e9, 4))
    assert fast.decode_tokens_per_s == pytest.approx(4 * slow.decode_tokens_per_s, rel=0.05)
    few = estimate_serving(llama, q4, eng, cpu(80e9, 1))
    assert few.prefill_tokens_per_s == pytest.approx(fast.prefill_tokens_per_s / 4, rel=0.05)
    assert few.decode_bound == "compute" and few.decode_tokens_per_s < fast.decode_tokens_per_s
    assert any("CPU" in a for a in slow.assumptions)


def test_tensor_parallel_speeds_decode_but_pays_all_reduces() -> None:
    llama, bf16, eng = arch("llama-3-70b"), find_format("bf16"), find_engine("vllm")
    two, _ = decode_step_seconds(llama, bf16, eng, GPU80, context=512, tp=2)
    four, _ = decode_step_seconds(llama, bf16, eng, GPU80, context=512, tp=4)
    assert four < two and two / four < 2


def test_defaults_and_bad_inputs() -> None:
    assert default_engine("gpu", "bf16").id == "vllm"
    assert default_engine("gpu", "q4_k_m").id == "llama.cpp"
    assert default_engine("cpu", "bf16").id == "llama.cpp"
    with pytest.raises(UsageError, match="unknown quant 'q3_k'"):
        find_format("q3_k")
    with pytest.raises(UsageError, match="unknown engine"):
        find_engine("tgi")
    with pytest.raises(UsageError, match="--context"):
        ServingRequest(context=0)
    with pytest.raises(UsageError, match="exceed"):
        ServingRequest(context=512, prompt_tokens=512, output_tokens=128)
    with pytest.raises(UsageError, match="--concurrency"):
        ServingRequest(concurrency=0)
