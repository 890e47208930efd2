"""Exact weight bytes from tiny safetensors and GGUF files the tests make."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.llm import resolve_model
from hwadvisor.llm.gguf_meta import arch_from_gguf
from hwadvisor.llm.weights import gguf_file, safetensors_file, safetensors_index, weight_files

from .conftest import write_config

np = pytest.importorskip("numpy")


def _save(path: Path, tensors: dict[str, object]) -> Path:
    st = pytest.importorskip("safetensors.numpy")
    st.save_file(tensors, str(path))
    return path


def test_safetensors_bytes_by_dtype_are_exact(tmp_path: Path) -> None:
    path = _save(
        tmp_path / "model.safetensors",
        {
            "a": np.zeros((4, 8), np.float16),
            "b": np.zeros((3,), np.float32),
            "q": np.zeros((2, 2), np.int32),
        },
    )
    info = safetensors_file(path)
    assert info.bytes_by_dtype == {"F16": 64, "F32": 12, "I32": 16}
    assert info.total_bytes == 92 and info.stored_elements == 32 + 3 + 4


def test_truncated_or_foreign_safetensors_is_one_line(tmp_path: Path) -> None:
    path = _save(tmp_path / "model.safetensors", {"a": np.ones((64, 64), np.float16)})
    data = path.read_bytes()
    cut = tmp_path / "cut.safetensors"
    cut.write_bytes(data[: len(data) - 100])
    with pytest.raises(UsageError, match="truncated"):
        safetensors_file(cut)
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x05\x00\x00\x00\x00\x00\x00\x00hello")
    with pytest.raises(UsageError, match="not JSON"):
        safetensors_file(junk)
    tiny = tmp_path / "tiny.safetensors"
    tiny.write_bytes(b"\x01")
    with pytest.raises(UsageError, match="8-byte"):
        safetensors_file(tiny)


def test_sharded_index_sums_shards_or_trusts_total_size(tmp_path: Path) -> None:
    _save(tmp_path / "s1.safetensors", {"a": np.zeros((10,), np.float16)})
    _save(tmp_path / "s2.safetensors", {"b": np.zeros((5,), np.float32)})
    index = tmp_path / "model.safetensors.index.json"
    index.write_text(
        json.dumps(
            {
                "metadata": {"total_size": 999},
                "weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"},
            }
        )
    )
    assert safetensors_index(index).total_bytes == 40 and safetensors_index(index).files == 2
    (tmp_path / "s2.safetensors").unlink()
    assert safetensors_index(index).total_bytes == 999  # shards not downloaded: the index's total
    index.write_text(json.dumps({"weight_map": {"a": "s1.safetensors", "b": "s2.safetensors"}}))
    with pytest.raises(UsageError, match="total_size"):
        safetensors_index(index)


def test_folder_weights_come_with_the_config(tmp_path: Path) -> None:
    cfg = {
        "model_type": "llama",
        "hidden_size": 8,
        "intermediate_size": 16,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "vocab_size": 10,
    }
    folder = write_config(tmp_path / "tiny", cfg)
    _save(folder / "model.safetensors", {"w": np.zeros((10, 8), np.float16)})
    resolved = resolve_model(str(folder))
    assert resolved.weights is not None and resolved.weights.total_bytes == 160
    assert weight_files(tmp_path) is None


def _gguf(path: Path, *, layers: int = 2, quantized: bool = True) -> Path:
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("tiny-llama")
    writer.add_block_count(layers)
    writer.add_embedding_length(64)
    writer.add_feed_forward_length(128)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_context_length(256)
    writer.add_file_type(7)  # MOSTLY_Q8_0
    writer.add_token_list([f"t{i}" for i in range(32)])
    data = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
    if quantized:
        q = gguf.quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
        writer.add_tensor(
            "blk.0.attn_q.weight", q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0
        )
    writer.add_tensor("token_embd.weight", np.zeros((32, 64), np.float16))
    writer.add_tensor("output_norm.weight", np.ones((64,), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_gguf_bytes_by_tensor_type(tmp_path: Path) -> None:
    info = gguf_file(_gguf(tmp_path / "tiny.gguf"))
    # Q8_0: 34 bytes per 32 weights -> 4096 weights = 4352 bytes; F16 32x64x2; F32 64x4.
    assert info.bytes_by_dtype == {"Q8_0": 4352, "F16": 4096, "F32": 256}
    assert info.total_bytes == 4352 + 4096 + 256


def test_gguf_metadata_gives_the_shape(tmp_path: Path) -> None:
    arch = arch_from_gguf(_gguf(tmp_path / "tiny.gguf"))
    assert (arch.layers, arch.hidden, arch.heads, arch.kv_heads, arch.vocab) == (2, 64, 4, 2, 32)
    assert arch.tied_embeddings and arch.max_context == 256
    assert arch.quantization is not None and arch.quantization.format_id == "q8_0"
    resolved = resolve_model(str(tmp_path / "tiny.gguf"))
    assert resolved.origin == "gguf" and resolved.weights is not None


def test_truncated_gguf_is_one_line(tmp_path: Path) -> None:
    full = _gguf(tmp_path / "tiny.gguf").read_bytes()
    for keep in (len(full) // 2, 40, 3):
        cut = tmp_path / f"cut{keep}.gguf"
        cut.write_bytes(full[:keep])
        with pytest.raises(UsageError, match="not a readable GGUF") as err:
            gguf_file(cut)
        assert "\n" not in err.value.line()
