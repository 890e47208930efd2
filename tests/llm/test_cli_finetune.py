"""Fine-tuning a language model through the CLI (`--task finetune`, `--method`): memory by
part, time from the FLOP ratio, and LoRA, QLoRA and sharding priced when it does not fit."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

Cli = Callable[..., Any]


def _estimate(cli: Cli, *args: str) -> dict[str, Any]:
    code, out, err = cli("estimate", *args, "--no-bench", "--json")
    assert code == 0, err
    return json.loads(out)


def _on(cli: Cli, method: str, *args: str, device: str = "rtx-4090") -> dict[str, Any]:
    doc = _estimate(cli, "--model", "llama-3-8b", "--method", method, "--on", device, *args)
    (est,) = doc["estimates"]
    return est


def test_qlora_of_8b_fits_24gb_and_full_fine_tuning_does_not(cli: Cli) -> None:
    qlora, lora, full = (_on(cli, m) for m in ("qlora", "lora", "full"))
    assert qlora["fits"] is True and full["fits"] is False
    assert qlora["memory_bytes"] < lora["memory_bytes"] < full["memory_bytes"]
    # Full: 16 bytes per parameter of state (ZeRO section 3.1) before activations.
    states = full["memory"]["weights_bytes"] + full["memory"]["gradients_bytes"]
    states += full["memory"]["optimizer_bytes"]
    assert states == pytest.approx(16 * 8_030_261_248, rel=0.001)
    assert qlora["finetune"]["checkpointing"] is True and qlora["finetune"]["lora_rank"] == 16
    assert qlora["finetune"]["trainable_params"] == lora["finetune"]["trainable_params"]


def test_the_flop_ratio_and_the_time_follow_the_method(cli: Cli) -> None:
    full, lora, qlora = (_on(cli, m, "--dataset-size", "1000") for m in ("full", "lora", "qlora"))
    assert full["finetune"]["flop_ratio"] == pytest.approx(3.0)
    assert lora["finetune"]["flop_ratio"] == pytest.approx(2.0, abs=0.02)
    assert qlora["finetune"]["flop_ratio"] == pytest.approx(3.0, abs=0.02)  # + recomputation
    # The frozen base skips the weight gradients; QLoRA recomputes and dequantizes.
    assert lora["step_time_s"] < full["step_time_s"]
    assert lora["step_time_s"] < qlora["step_time_s"]
    for est in (full, lora, qlora):
        assert est["total_time_s"] == pytest.approx(1000 * est["step_time_s"])
        tokens = est["finetune"]["tokens_per_s"] * est["step_time_s"]
        assert tokens == pytest.approx(2048)  # one 2048-token sequence per step


def test_a_full_fine_tune_that_does_not_fit_is_priced_lora_then_qlora_then_sharded(
    cli: Cli,
) -> None:
    full = _on(cli, "full", "--dataset-size", "1000", device="h100-sxm")
    options = full["finetune"]["options"]
    assert [o["method"] for o in options[:2]] == ["lora", "qlora"]
    assert options[-1]["method"] == "full" and options[-1]["gpus"] > 1
    assert options[-1]["strategy"] == "FSDP (ZeRO-3)" and options[-1]["fits"] is True
    assert all(o["memory_bytes"] > 0 and o["total_time_s"] > 0 for o in options)
    assert "sharded over" in full["fixes"][-1]["fix"]


def test_several_gpus_shard_what_one_does_not_hold(cli: Cli) -> None:
    one = _on(cli, "full", device="h100-sxm")
    eight = _on(cli, "full", "--gpus", "8", device="h100-sxm")
    assert eight["finetune"]["strategy"] == "FSDP (ZeRO-3)" and eight["fits"] is True
    assert eight["memory_bytes"] < one["memory_bytes"] / 3
    qlora = _on(cli, "qlora", "--gpus", "8", device="h100-sxm")
    assert qlora["finetune"]["strategy"] == "DDP"


def test_lora_rank_and_targets_change_the_adapters(cli: Cli) -> None:
    r16 = _on(cli, "lora")["finetune"]["trainable_params"]
    r64 = _on(cli, "lora", "--lora-rank", "64")["finetune"]["trainable_params"]
    wide = _on(cli, "lora", "--lora-targets", "all-linear")["finetune"]["trainable_params"]
    assert r64 == 4 * r16 and wide > 3 * r16
    # Llama-3-8B, rank 16 on q, k, v, o: 32 x 16 x ((4096+4096) + 2 (4096+1024) + (4096+4096)).
    assert r16 == 32 * 16 * (8192 + 2 * 5120 + 8192)


def test_recommend_prices_the_lighter_methods(cli: Cli, data_dir: Path) -> None:
    facts = data_dir / "facts" / "rtx4090-workstation.json"
    code, out, err = cli(
        "recommend", "--scenario", "training", "--model", "llama-3-8b", "--method", "full",
        "--facts", str(facts), "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["workload"]["task"] == "finetune" and doc["workload"]["method"] == "full"
    findings = {f["rule"]: f["message"] for f in doc["findings"]}
    assert "HW160" in findings and "LoRA" in findings["HW160"] and "QLoRA" in findings["HW160"]
    assert "HW161" in findings and "RTX 4090" in findings["HW161"]


def test_the_terminal_names_the_method_and_the_lighter_options(cli: Cli) -> None:
    code, out, err = cli(
        "estimate", "--model", "llama-3-8b", "--method", "full", "--on", "rtx-4090",
        "--dataset-size", "1000", "--no-bench",
    )  # fmt: skip
    assert code == 0, err
    assert "finetune (full)" in out and "trainable parameters" in out
    assert "Lighter, in order: LoRA" in out and "QLoRA" in out
