"""Bad input to the language-model options: one line on stderr, exit 2, nothing else lost.

Each case runs through the CLI's one entry point; under --json the error document is on
stdout as well.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from .conftest import LLAMA3_8B, write_config

Cli = Callable[..., Any]


def _refused(cli: Cli, *args: str) -> str:
    code, out, err = cli("estimate", *args, "--no-bench")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("hwadvisor: error: "), err
    assert "Traceback" not in err and out == ""
    return lines[0]


def _gguf(path: Path) -> Path:
    """A tiny valid GGUF file (2 layers, 64 wide) made here."""
    np = pytest.importorskip("numpy")
    gguf = pytest.importorskip("gguf")
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_block_count(2)
    writer.add_embedding_length(64)
    writer.add_feed_forward_length(128)
    writer.add_head_count(4)
    writer.add_head_count_kv(2)
    writer.add_context_length(256)
    writer.add_token_list([f"t{i}" for i in range(32)])
    writer.add_tensor("token_embd.weight", np.zeros((32, 64), np.float16))
    writer.add_tensor("output_norm.weight", np.ones((64,), np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--quant", "q5_k"], "'--quant'"),
        (["--engine", "tgi"], "'--engine'"),
        (["--method", "dora"], "'--method'"),
        (["--lora-targets", "mlp"], "'--lora-targets'"),
        (["--context", "0"], "--context must be > 0, got 0"),
        (["--concurrency", "0"], "--concurrency must be > 0, got 0"),
        (["--lora-rank", "0", "--method", "lora"], "--lora-rank must be > 0, got 0"),
        (["--prompt-tokens", "-1"], "--prompt-tokens must be >= 0, got -1"),
        (["--context", "many"], "'--context'"),
        (["--context", "1024", "--prompt-tokens", "1000", "--output-tokens", "100"], "exceed"),
    ],
)
def test_bad_llm_options(cli: Cli, args: list[str], said: str) -> None:
    line = _refused(cli, "--model", "llama-3-8b", "--task", "serve", *args)
    assert said in line


def test_qlora_on_a_cnn(cli: Cli) -> None:
    line = _refused(cli, "--model", "resnet50", "--method", "qlora")
    assert "--method qlora needs a decoder language model" in line and "resnet50" in line


def test_serving_needs_a_language_model(cli: Cli) -> None:
    line = _refused(cli, "--params", "7B", "--seq-len", "128", "--task", "serve")
    assert "--task serve needs a decoder language model" in line and "no --model" in line


def test_a_method_is_for_fine_tuning(cli: Cli) -> None:
    line = _refused(cli, "--model", "llama-3-8b", "--method", "lora", "--task", "serve")
    assert "--method lora applies to --task finetune" in line


def test_a_config_that_is_not_json(cli: Cli, tmp_path: Path) -> None:
    folder = write_config(tmp_path / "broken", '{"hidden_size": 4096,')
    line = _refused(cli, "--model", str(folder), "--task", "serve")
    assert "JSON" in line or "json" in line


def test_a_config_without_hidden_size(cli: Cli, tmp_path: Path) -> None:
    cfg = {k: v for k, v in LLAMA3_8B.items() if k != "hidden_size"}
    folder = write_config(tmp_path / "nohidden", cfg)
    line = _refused(cli, "--model", str(folder / "config.json"), "--task", "serve")
    assert "hidden_size" in line


def test_a_truncated_gguf(cli: Cli, tmp_path: Path) -> None:
    full = _gguf(tmp_path / "tiny.gguf").read_bytes()
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(full[: len(full) // 2])
    line = _refused(cli, "--model", str(cut), "--task", "serve")
    assert "GGUF" in line


def test_a_whole_gguf_is_served(cli: Cli, tmp_path: Path) -> None:
    path = _gguf(tmp_path / "tiny.gguf")
    code, out, err = cli(
        "estimate", "--model", str(path), "--task", "serve", "--on", "rtx-4090",
        "--context", "256", "--prompt-tokens", "64", "--output-tokens", "64",
        "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["workload"]["llm"]["origin"] == "gguf"
    assert doc["estimates"][0]["serving"]["decode_tokens_per_s"] > 0


def test_the_json_error_document_comes_too(cli: Cli) -> None:
    code, out, _ = cli(
        "estimate", "--model", "llama-3-8b", "--task", "serve", "--context", "0", "--json"
    )
    assert code == 2
    doc = json.loads(out)
    assert doc["error"]["exit_code"] == 2 and "--context" in doc["error"]["message"]


@pytest.mark.parametrize("command", [["recommend", "--scenario", "inference"], ["fleet"]])
def test_every_command_with_the_options_refuses_alike(cli: Cli, command: list[str]) -> None:
    code, _, err = cli(*command, "--model", "llama-3-8b", "--context", "0", "--no-bench")
    if command == ["fleet"]:
        code, _, err = cli("fleet", "--model", "llama-3-8b", "--context", "0", "-")
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert code == 2 and len(lines) == 1 and "--context must be > 0" in lines[0], err


def test_a_catalog_decoder_without_a_full_shape(cli: Cli) -> None:
    line = _refused(cli, "--model", "gpt2", "--task", "serve")
    assert "no full shape of 'gpt2'" in line and "folder or Hugging Face id" in line
