"""Serving in NVFP4/MXFP4: the fp4 peak on Blackwell's FP4 tensor cores, 16-bit elsewhere."""

from __future__ import annotations

import pytest

from hwadvisor.catalog import find_device
from hwadvisor.llm import DeviceSpec, ServingRequest, find_engine, find_format, resolve_model
from hwadvisor.llm.serving import decode_step_seconds, estimate_serving, prefill_seconds

LONG_PROMPT = ServingRequest(prompt_tokens=8192, output_tokens=128, context=8448)


def spec(device: str) -> DeviceSpec:
    return DeviceSpec.from_catalog(find_device(device))


@pytest.mark.parametrize("quant", ["nvfp4", "mxfp4"])
@pytest.mark.parametrize("device", ["b200", "rtx-pro-6000", "gb10"])
def test_blackwell_prefills_fp4_at_its_fp4_peak(quant: str, device: str) -> None:
    arch = resolve_model("llama-3-70b").arch
    engine, dev = find_engine("tensorrt-llm"), spec(device)
    fp4 = estimate_serving(arch, find_format(quant), engine, dev, LONG_PROMPT)
    fp8 = estimate_serving(arch, find_format("fp8"), engine, dev, LONG_PROMPT)
    assert fp4.compute_type == "fp4"
    assert not any("has no fp4 peak" in a for a in fp4.assumptions)
    # An 8k prompt of a 70B model is compute-bound: the FP4 products' achieved rate over
    # FP8's (twice the peak, at FP4's own measured fraction where there is one) sets most
    # of the speed-up; the 16-bit attention and the weights' read do not shrink with it.
    rate = dev.flops("fp4")[0] * dev.product_fraction("fp4")
    r = rate / (dev.flops("fp8")[0] * dev.product_fraction("fp8"))
    assert r > 1.0
    assert 1 + 0.5 * (r - 1) < fp4.prefill_tokens_per_s / fp8.prefill_tokens_per_s < r


@pytest.mark.parametrize("quant", ["nvfp4", "mxfp4"])
@pytest.mark.parametrize("device", ["h100-sxm", "a100-80gb", "l40s"])
def test_without_fp4_tensor_cores_the_products_run_in_16_bits(quant: str, device: str) -> None:
    arch = resolve_model("llama-3-70b").arch
    engine, dev = find_engine("vllm"), spec(device)
    fp4 = estimate_serving(arch, find_format(quant), engine, dev, LONG_PROMPT)
    bf16 = estimate_serving(arch, find_format("bf16"), engine, dev, LONG_PROMPT)
    assert fp4.compute_type in ("bf16", "fp16")
    assert any(f"{dev.name} has no fp4 peak" in a for a in fp4.assumptions)
    # Same peak as bf16; only the weights' read is smaller.
    assert fp4.prefill_tokens_per_s == pytest.approx(bf16.prefill_tokens_per_s, rel=0.1)
    assert fp4.prefill_tokens_per_s >= bf16.prefill_tokens_per_s


def test_fp4_decode_reads_four_and_a_half_bit_weights() -> None:
    arch = resolve_model("llama-3-70b").arch
    engine, dev = find_engine("tensorrt-llm"), spec("b200")

    def step(quant: str) -> float:
        seconds, bound = decode_step_seconds(arch, find_format(quant), engine, dev, context=64)
        assert bound == "memory"
        return seconds

    # Batch 1 streams the weights: NVFP4's 4.5 bits (16 E2M1 values and an E4M3 scale)
    # against FP8's 8, with the same fixed costs (the lm_head within 2%).
    saved = (arch.body_matrix_params() * (8 - 4.5) / 8) / dev.effective_bandwidth
    assert step("fp8") - step("nvfp4") == pytest.approx(saved, rel=0.02)


def test_fp4_prefill_on_b200_is_faster_than_on_an_h200_in_fp8() -> None:
    arch = resolve_model("llama-3-70b").arch
    engine = find_engine("tensorrt-llm")
    b200 = prefill_seconds(arch, find_format("nvfp4"), engine, spec("b200"), 8192)
    h200 = prefill_seconds(arch, find_format("fp8"), engine, spec("h200"), 8192)
    # 9,000 dense FP4 TFLOP/s at their measured 43% against 1,979 FP8 at 77%: over twice
    # the prompt rate.
    assert h200 / b200 > 2.0
