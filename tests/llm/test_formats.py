"""Quant formats: bits per weight from each definition, weight bytes vs llama.cpp's sizes."""

from __future__ import annotations

import pytest

from hwadvisor.llm import default_format, find_format, load_engines, load_formats, resolve_model

GIB = 1024**3
REQUIRED = {"fp32", "fp16", "bf16", "fp8", "int8", "q8_0", "q4_0", "q4_k_m", "awq", "gptq", "nf4"}
REQUIRED |= {"q3_k_m", "iq4_xs", "q5_k_m", "q6_k", "mxfp4", "nvfp4"}


def test_every_format_is_defined_and_sourced() -> None:
    formats = load_formats()
    assert set(formats) == REQUIRED
    for fmt in formats.values():
        assert len(fmt.source) > 20 and fmt.date
    for eng in load_engines().values():
        assert {"kernel_us", "small_kernels_per_layer"} <= set(eng.sources) or eng.id


@pytest.mark.parametrize(
    ("ident", "bpw"),
    [
        ("q8_0", 34 * 8 / 32),
        ("q4_0", 18 * 8 / 32),
        ("nf4", 4 + 8 / 64 + 32 / (64 * 256)),
        ("awq", 4 + 20 / 128),
        ("q6_k", 210 * 8 / 256),
        ("iq4_xs", 136 * 8 / 256),
        ("mxfp4", 4 + 8 / 32),
        ("nvfp4", 4 + 8 / 16),
    ],
)
def test_block_formats_follow_their_layout(ident: str, bpw: float) -> None:
    assert find_format(ident).bits_per_weight == pytest.approx(bpw, abs=0.001)


@pytest.mark.parametrize(
    ("ident", "gib"),
    [
        ("q8_0", 7.96),
        ("q4_0", 4.34),
        ("q4_k_m", 4.58),
        ("fp16", 14.96),
        ("q3_k_m", 3.74),
        ("q5_k_m", 5.33),
        ("q6_k", 6.14),
    ],
)
def test_llama3_8b_file_sizes_match_llama_cpp_quantize_table(ident: str, gib: float) -> None:
    arch = resolve_model("llama-3-8b").arch
    assert find_format(ident).weight_bytes(arch) / GIB == pytest.approx(gib, rel=0.01)


def test_4_bit_hf_formats_keep_embedding_and_head_16_bit() -> None:
    arch = resolve_model("llama-3-8b").arch
    awq = find_format("awq")
    body = arch.body_matrix_params(arch.experts) * awq.bits_per_weight / 8
    assert awq.weight_bytes(arch) - body == pytest.approx(2 * 2 * arch.embedding_params, rel=0.01)
    # Packed int4 read as elements would be 8x under; read as torch_dtype 4x over: neither.
    assert 4.5e9 < awq.weight_bytes(arch) < 6.5e9


def test_default_format_follows_quantization_config_then_dtype() -> None:
    arch = resolve_model("llama-2-7b").arch
    assert default_format(arch).id == "fp16"
    from hwadvisor.llm.arch import QuantConfig

    assert (
        default_format(arch.with_changes(quantization=QuantConfig("gptq", 4, 128, "gptq"))).id
        == "gptq"
    )


def test_fp4_formats_compute_in_fp4_and_the_quant_choices_list_them() -> None:
    from hwadvisor.models.workload import Quant

    assert find_format("mxfp4").compute == find_format("nvfp4").compute == "fp4"
    assert set(load_formats()) == {q.value for q in Quant}
