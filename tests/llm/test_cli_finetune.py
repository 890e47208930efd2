"""Fine-tuning a language model through the CLI (`--task finetune`, `--method`): memory by
part, time as recipes run, the options recipes name, the answers (longest sequence,
largest micro-batch, hours) and the fixes in order when it does not fit."""

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


def test_lora_of_8b_on_24gb_is_advised_with_checkpointing_not_qlora(cli: Cli) -> None:
    lora = _on(cli, "lora")
    assert lora["fits"] is True and lora["finetune"]["checkpointing"] is True
    assert lora["finetune"]["method"] == "lora" and lora["fixes"] == []
    assert any("auto: on to fit" in a for a in lora["assumptions"])
    off = _on(cli, "lora", "--checkpointing", "off")
    assert off["fits"] is False and off["fixes"][0]["fix"] == "activation checkpointing"
    assert off["fixes"][0]["fits"] is True and len(off["fixes"]) == 1


def test_checkpointing_trades_memory_for_time(cli: Cli) -> None:
    on = _on(cli, "lora", "--checkpointing", "on", device="a100-80gb")
    off = _on(cli, "lora", "--checkpointing", "off", device="a100-80gb")
    assert on["memory_bytes"] < off["memory_bytes"] / 1.3
    assert on["step_time_s"] > off["step_time_s"] * 1.2
    assert on["finetune"]["flop_ratio"] > off["finetune"]["flop_ratio"] + 0.9


def test_the_flop_ratio_and_the_time_follow_the_method(cli: Cli) -> None:
    args = ("--dataset-size", "1000", "--checkpointing", "off")
    full, lora = (_on(cli, m, *args, device="a100-80gb") for m in ("full", "lora"))
    qlora = _on(cli, "qlora", "--dataset-size", "1000", device="a100-80gb")
    # 3 for the weights' products, 3.5 for attention (no weights, whole backward).
    assert 3.0 < full["finetune"]["flop_ratio"] < 3.1
    assert 2.0 < lora["finetune"]["flop_ratio"] < 2.2
    assert 3.0 < qlora["finetune"]["flop_ratio"] < 3.2  # + recomputation
    assert lora["step_time_s"] < full["step_time_s"]
    assert lora["step_time_s"] < qlora["step_time_s"]
    for est in (full, lora, qlora):
        assert est["total_time_s"] == pytest.approx(1000 * est["step_time_s"])
        assert est["finetune"]["hours"] == pytest.approx(est["total_time_s"] / 3600)
        assert est["finetune"]["dataset_tokens"] == 1000 * 2048
        tokens = est["finetune"]["tokens_per_s"] * est["step_time_s"]
        assert tokens == pytest.approx(2048)  # one 2048-token sequence per step


def test_a_full_fine_tune_that_does_not_fit_gets_the_fixes_in_order(cli: Cli) -> None:
    full = _on(cli, "full", "--dataset-size", "1000", "--batch-size", "4", "--checkpointing", "off")
    fixes = [f["fix"] for f in full["fixes"]]
    assert fixes[0] == "activation checkpointing"
    assert fixes[1].startswith("micro-batch ")
    assert fixes[2:4] == ["8-bit AdamW (bitsandbytes)", "paged 8-bit AdamW (state in host memory)"]
    assert fixes[4].startswith("LoRA")
    assert [f["fits"] for f in full["fixes"]] == [False] * (len(fixes) - 1) + [True]
    options = full["finetune"]["options"]
    assert all(o["memory_bytes"] > 0 and o["total_time_s"] > 0 for o in options)
    assert options[-1]["method"] == "lora" and options[-1]["optimizer"] == "paged_adamw8bit"
    assert full["plan"]["gpus"] == 1 and "activation checkpointing" in full["plan"]["plan"]


def test_training_a_model_too_big_for_one_gpu_is_sharded_then_offloaded(cli: Cli) -> None:
    doc = _estimate(cli, "--model", "llama-3-70b", "--task", "train", "--on", "a100-80gb")
    (est,) = doc["estimates"]
    fixes = [f["fix"] for f in est["fixes"]]
    assert not any("LoRA" in f for f in fixes)
    assert any("sharded over" in f for f in fixes)
    assert est["fixes"][-1]["fits"] is True and est["plan"]["gpus"] > 1


def test_several_gpus_shard_what_one_does_not_hold(cli: Cli) -> None:
    one = _on(cli, "full", device="h100-sxm")
    eight = _on(cli, "full", "--gpus", "8", device="h100-sxm")
    assert eight["finetune"]["strategy"] == "FSDP (ZeRO-3)" and eight["fits"] is True
    assert eight["memory_bytes"] < one["memory_bytes"] / 3
    qlora = _on(cli, "qlora", "--gpus", "8", device="h100-sxm")
    assert qlora["finetune"]["strategy"] == "DDP"
    z2 = _on(cli, "full", "--gpus", "8", "--strategy", "zero2", device="h100-sxm")
    off = _on(
        cli, "full", "--gpus", "8", "--strategy", "zero2", "--offload", "cpu", device="h100-sxm"
    )
    assert z2["finetune"]["strategy"] == "ZeRO-2"
    assert off["memory_bytes"] < z2["memory_bytes"] and off["finetune"]["host_bytes"] > 0
    assert off["step_time_s"] > z2["step_time_s"]


def test_a_consumer_card_without_nvlink_pays_more_for_the_same_traffic(cli: Cli) -> None:
    args = ("--gpus", "4", "--strategy", "fsdp", "--checkpointing", "on")
    pcie = _on(cli, "lora", *args, device="rtx-4090")
    one = _on(cli, "lora", "--checkpointing", "on", device="rtx-4090")
    # Four GeForce cards over PCIe without peer-to-peer scale poorly for FSDP.
    assert pcie["finetune"]["tokens_per_s"] < 4 * one["finetune"]["tokens_per_s"] * 0.8


def test_optimizer_and_framework_options_change_the_answer(cli: Cli) -> None:
    adamw = _on(cli, "full", device="a100-80gb")
    eight = _on(cli, "full", "--optimizer", "adamw8bit", device="a100-80gb")
    assert eight["memory"]["optimizer_bytes"] == pytest.approx(6 * 8_030_261_248, rel=0.001)
    assert eight["memory_bytes"] < adamw["memory_bytes"]
    hf = _on(cli, "lora", "--seq-len", "4096", device="a100-80gb")
    tt = _on(cli, "lora", "--seq-len", "4096", "--framework", "torchtune", device="a100-80gb")
    assert tt["finetune"]["framework"] == "torchtune" and hf["finetune"]["framework"] == "hf"
    assert tt["finetune"]["logits_bytes"] < hf["finetune"]["logits_bytes"] / 4


def test_the_answers_people_ask_for(cli: Cli) -> None:
    lora = _on(cli, "lora", "--checkpointing", "on", "--dataset-size", "10000", "--seq-len", "1024")
    ft = lora["finetune"]
    assert ft["longest_seq_batch1"] > 1024 and ft["largest_micro_batch"] >= 1
    longer = _on(cli, "lora", "--checkpointing", "on", device="a100-80gb")["finetune"]
    assert longer["longest_seq_batch1"] > 4 * ft["longest_seq_batch1"]
    assert ft["dataset_tokens"] == 10000 * 1024 and ft["hours"] > 0


@pytest.mark.parametrize(
    ("option", "value"),
    [("--checkpointing", "maybe"), ("--framework", "axolotl"), ("--strategy", "tp"),
     ("--offload", "nvme"), ("--optimizer", "lion")],
)  # fmt: skip
def test_bad_fine_tuning_options_are_one_line_and_exit_2(cli: Cli, option: str, value: str) -> None:
    code, _, err = cli("estimate", "--model", "llama-3-8b", "--method", "lora", option, value)
    assert code == 2 and "Traceback" not in err and option in err


def test_train_takes_the_fine_tuning_options_as_full_fine_tuning(cli: Cli) -> None:
    args = ("--model", "llama-3-8b", "--on", "a100-80gb", "--optimizer", "adamw8bit")
    (train,) = _estimate(cli, "--task", "train", *args)["estimates"]
    (full,) = _estimate(cli, "--method", "full", *args)["estimates"]
    assert train["memory_bytes"] == full["memory_bytes"]
    assert train["step_time_s"] == full["step_time_s"]


def test_lora_rank_and_targets_change_the_adapters(cli: Cli) -> None:
    r16 = _on(cli, "lora")["finetune"]["trainable_params"]
    r64 = _on(cli, "lora", "--lora-rank", "64")["finetune"]["trainable_params"]
    wide = _on(cli, "lora", "--lora-targets", "all-linear")["finetune"]["trainable_params"]
    assert r64 == 4 * r16 and wide > 3 * r16
    # Llama-3-8B, rank 16 on q, k, v, o: 32 x 16 x ((4096+4096) + 2 (4096+1024) + (4096+4096)).
    assert r16 == 32 * 16 * (8192 + 2 * 5120 + 8192)


def test_recommend_prices_the_fixes(cli: Cli, data_dir: Path) -> None:
    facts = data_dir / "facts" / "rtx4090-workstation.json"
    code, out, err = cli(
        "recommend", "--scenario", "training", "--model", "llama-3-8b", "--method", "full",
        "--facts", str(facts), "--no-bench", "--json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert doc["workload"]["task"] == "finetune" and doc["workload"]["method"] == "full"
    findings = {f["rule"]: f["message"] for f in doc["findings"]}
    # On the best GPU (an A100 80GB) full fine-tuning fits with checkpointing and the
    # paged 8-bit optimizer: the fixes stop there, before LoRA.
    assert "HW160" in findings and "(fits)" in findings["HW160"]
    assert "LoRA" not in findings["HW160"].split("Lighter, in order:")[1]
    assert "HW161" in findings and "RTX 4090" in findings["HW161"]


def test_the_terminal_names_the_method_and_the_fixes(cli: Cli) -> None:
    code, out, err = cli(
        "estimate", "--model", "llama-3-8b", "--method", "full", "--on", "rtx-4090",
        "--dataset-size", "1000", "--no-bench",
    )  # fmt: skip
    assert code == 0, err
    assert "finetune (full)" in out and "trainable parameters" in out
    assert "Lighter, in order:" in out and "LoRA" in out
