"""One forward step: engine ceilings, GPU classes, and tensor parallelism on its link."""

from __future__ import annotations

import dataclasses

import pytest

from hwadvisor.catalog import find_device
from hwadvisor.llm import (
    DeviceSpec,
    Engine,
    QuantFormat,
    find_engine,
    find_format,
    resolve_model,
)
from hwadvisor.llm.serving import decode_step_seconds, prefill_seconds
from hwadvisor.llm.step import (
    forward_seconds,
    gpu_class,
    kernel_family,
    kv_passes,
    product_rate,
)


def spec(device: str) -> DeviceSpec:
    return DeviceSpec.from_catalog(find_device(device))


@pytest.mark.parametrize(
    ("device", "cls"),
    [("h100-sxm", "hbm"), ("a100-80gb", "hbm"), ("mi300x", "hbm"), ("rtx-4090", "gddr"),
     ("l40s", "gddr"), ("v100-16gb", "gddr"), ("apple-m2-max", "soc"), ("xeon-8480", "cpu")],
)  # fmt: skip
def test_gpu_class(device: str, cls: str) -> None:
    assert gpu_class(spec(device)) == cls


def test_kernel_families() -> None:
    assert [kernel_family(find_format(f)) for f in ("bf16", "fp8", "q8_0", "q4_0", "awq")] == [
        "16bit",
        "fp8",
        "8bit",
        "4bit",
        "4bit",
    ]


def test_llama_cpp_batch_1_does_not_follow_hbm_bandwidth_but_vllm_does() -> None:
    llama = resolve_model("llama-2-7b").arch
    q4, bf16 = find_format("q4_0"), find_format("bf16")
    lcpp, vllm = find_engine("llama.cpp"), find_engine("vllm")

    def tok_s(engine: Engine, fmt: QuantFormat, device: str) -> float:
        step, _ = decode_step_seconds(llama, fmt, engine, spec(device), context=64)
        return 1 / step

    # 2.0 vs 3.35 TB/s: llama.cpp's mat-vec kernels cap both alike ...
    assert tok_s(lcpp, q4, "h100-sxm") == pytest.approx(tok_s(lcpp, q4, "a100-80gb"), rel=0.02)
    # ... and no data-centre part beats a 4090 by much at batch 1.
    assert tok_s(lcpp, q4, "h100-sxm") < 1.1 * tok_s(lcpp, q4, "rtx-4090")
    # vLLM streams at the bandwidth: the H100 SXM is clearly faster than an A100.
    assert tok_s(vllm, bf16, "h100-sxm") > 1.2 * tok_s(vllm, bf16, "a100-80gb")


def test_tensor_parallel_over_pcie_costs_more_than_over_nvlink() -> None:
    arch70 = resolve_model("llama-2-70b").arch
    bf16, eng = find_format("bf16"), find_engine("vllm")
    nvlink = spec("h100-sxm")
    pcie = dataclasses.replace(nvlink, link_kind="pcie5", link_bytes_s=64e9)
    step_nv, _ = decode_step_seconds(arch70, bf16, eng, nvlink, context=512, batch=32, tp=4)
    step_pcie, _ = decode_step_seconds(arch70, bf16, eng, pcie, context=512, batch=32, tp=4)
    assert step_pcie > step_nv * 1.05
    ttft_nv = prefill_seconds(arch70, bf16, eng, nvlink, 4096, tp=4)
    ttft_pcie = prefill_seconds(arch70, bf16, eng, pcie, 4096, tp=4)
    assert ttft_pcie > ttft_nv * 1.1
    # More GPUs still shorten a step over NVLink.
    step_two, _ = decode_step_seconds(arch70, bf16, eng, nvlink, context=512, batch=32, tp=2)
    assert step_nv < step_two


def test_a_long_kv_cache_slows_decode_by_its_bytes() -> None:
    qwen = resolve_model("qwen2.5-7b").arch
    bf16, eng, a100 = find_format("bf16"), find_engine("vllm"), spec("a100-80gb")
    short, _ = decode_step_seconds(qwen, bf16, eng, a100, context=1024)
    long, _ = decode_step_seconds(qwen, bf16, eng, a100, context=31744)
    extra = qwen.kv_cache_bytes(31744) - qwen.kv_cache_bytes(1024)
    assert long - short == pytest.approx(extra / a100.effective_bandwidth, rel=0.1)


def test_a_chunk_beside_decodes_costs_less_than_running_it_alone() -> None:
    llama = resolve_model("llama-3-8b").arch
    args = (llama, find_format("bf16"), find_engine("vllm"), spec("h100-sxm"))
    mixed, _ = forward_seconds(*args, decode_seqs=32, context=1024, prefill_tokens=512)
    decode, _ = forward_seconds(*args, decode_seqs=32, context=1024)
    alone, _ = forward_seconds(*args, prefill_tokens=512)
    assert decode < mixed < decode + alone


def test_llama_cpp_prompt_products_run_at_the_fp16_accumulate_rate() -> None:
    """GeForce doubles its FP32-accumulate figure for llama.cpp's cuBLAS 16F products; a
    professional part of the same die (RTX A6000) does not, and the HBM parts stay capped."""
    lcpp, vllm, fp16 = find_engine("llama.cpp"), find_engine("vllm"), find_format("fp16")
    fraction = lcpp.prefill_tensor_fraction or 0.0
    rate = {d: product_rate(lcpp, spec(d), fp16, 512) for d in ("rtx-3090", "rtx-a6000")}
    assert rate["rtx-3090"] == pytest.approx(142e12 * fraction)
    assert rate["rtx-a6000"] == pytest.approx(154.8e12 * fraction)
    # The two GA102 cards run llama.cpp prompts at about the same rate, though the
    # catalog's fp16 figures (71 and 154.8) differ by 2.2x.
    assert rate["rtx-a6000"] / rate["rtx-3090"] < 1.15
    assert product_rate(lcpp, spec("a100-80gb"), fp16, 512) == pytest.approx(77e12)
    # Mat-vec steps and engines that accumulate in FP32 keep the fp16 peak x GEMM fraction.
    g = spec("rtx-3090")
    assert product_rate(lcpp, g, fp16, 1) == pytest.approx(71e12 * g.gemm_fraction)
    assert product_rate(vllm, g, fp16, 512) == pytest.approx(71e12 * g.gemm_fraction)


def test_fp16_accumulate_is_stated_only_where_it_exceeds_fp16() -> None:
    from hwadvisor.catalog import load_devices

    stated = {
        d.id: (d.peaks_tflops.fp16_accumulate, d.peaks_tflops.fp16)
        for d in load_devices().values()
        if d.peaks_tflops.fp16_accumulate is not None
    }
    assert {"rtx-3090", "rtx-4090"} <= set(stated)
    for acc, fp16 in stated.values():
        assert fp16 and fp16 < acc <= 2 * fp16 + 1
    # Where none is stated, the rate is the fp16 peak.
    a6000 = spec("rtx-a6000")
    assert a6000.fp16_accumulate_rate() == pytest.approx(a6000.flops("fp16")[0])


def test_transformers_copies_the_grouped_cache_to_every_query_head() -> None:
    qwen, llama = resolve_model("qwen2.5-7b").arch, resolve_model("llama-2-7b").arch
    hf, vllm = find_engine("transformers"), find_engine("vllm")
    # Qwen2.5-7B: 28 query heads over 4 KV heads, 7 copies written and read.
    assert kv_passes(hf, qwen) == hf.kv_passes + 2 * 7
    assert kv_passes(hf, llama) == hf.kv_passes  # multi-head: repeat_kv returns the cache
    assert kv_passes(vllm, qwen) == vllm.kv_passes
    bf16, a100 = find_format("bf16"), spec("a100-80gb")
    short, _ = decode_step_seconds(qwen, bf16, hf, a100, context=1024)
    long, _ = decode_step_seconds(qwen, bf16, hf, a100, context=31744)
    extra = qwen.kv_cache_bytes(31744) - qwen.kv_cache_bytes(1024)
    assert long - short == pytest.approx(17 * extra / a100.effective_bandwidth, rel=0.1)


def test_fp4_products_run_at_their_own_measured_fraction_where_there_is_one() -> None:
    """A B200's NVFP4 products reach a smaller share of the FP4 peak than its 16-bit ones
    of theirs (measured), and a part without a measured FP4 figure keeps its GEMM one."""
    b200 = spec("b200")
    nvfp4, fp8 = find_format("nvfp4"), find_format("fp8")
    assert b200.fp4_gemm_fraction is not None and b200.fp4_gemm_fraction < b200.gemm_fraction
    engine = find_engine("tensorrt-llm")
    assert product_rate(engine, b200, nvfp4, 4096) == pytest.approx(
        9000e12 * b200.fp4_gemm_fraction
    )
    assert product_rate(engine, b200, fp8, 4096) == pytest.approx(4500e12 * b200.gemm_fraction)
    pro = spec("rtx-pro-6000")
    assert pro.fp4_gemm_fraction is None
    assert pro.product_fraction("fp4") == pro.gemm_fraction
    h100 = spec("h100-sxm")  # no fp4 peak: bf16 products at the GEMM fraction
    assert h100.product_fraction("fp4") == h100.gemm_fraction
