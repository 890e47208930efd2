"""Fine-tuning memory by part: methods, optimizers at their width, checkpointing, logits
by framework, sharding and offload, and the longest sequence / largest micro-batch."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.catalog import find_device
from hwadvisor.errors import UsageError
from hwadvisor.llm import FinetuneRequest, finetune_memory, lora_params, resolve_model
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.finetune import largest_micro_batch, lighter_methods, longest_sequence
from hwadvisor.llm.frameworks import find_framework, load_frameworks

GPU24 = find_device("rtx-4090").memory_bytes
LLAMA3 = resolve_model("llama-3-8b").arch
N = LLAMA3.params_total


def test_qlora_of_8b_fits_24gb_full_does_not() -> None:
    qlora = finetune_memory(LLAMA3, FinetuneRequest(method="qlora"))
    full = finetune_memory(LLAMA3, FinetuneRequest(method="full"))
    assert qlora.total_bytes < GPU24 < full.total_bytes
    assert full.optimizer_bytes == 12 * N  # fp32 master + two fp32 moments
    assert full.weights_bytes + full.gradient_bytes == 4 * N
    assert qlora.checkpointing


def test_lora_prices_only_adapters_for_gradients_and_optimizer() -> None:
    lora = finetune_memory(LLAMA3, FinetuneRequest(method="lora", lora_rank=16))
    per_layer = 16 * ((4096 + 4096) + 2 * (4096 + 1024) + (4096 + 4096))
    assert lora.trainable_params == 32 * per_layer == lora_params(LLAMA3, 16)
    assert lora.adapter_bytes == 4 * lora.trainable_params  # fp32 adapters (PEFT)
    assert lora.optimizer_bytes == 8 * lora.trainable_params
    assert lora.weights_bytes == pytest.approx(2 * N, rel=1e-4)
    tt = finetune_memory(LLAMA3, FinetuneRequest(method="lora", framework="torchtune"))
    assert tt.adapter_bytes == 2 * tt.trainable_params  # bf16 recipes


def test_rank_and_targets_change_the_adapters() -> None:
    small = lora_params(LLAMA3, 8)
    assert lora_params(LLAMA3, 64) == 8 * small
    assert lora_params(LLAMA3, 8, "all-linear") > 3 * small


@pytest.mark.parametrize(
    ("optimizer", "gpu_bytes", "host_bytes"),
    [
        ("adamw", 12.0, 0.0),  # master 4 + two fp32 moments 8
        ("adamw8bit", 6.0, 0.0),  # master 4 + two 1-byte moments
        ("paged_adamw8bit", 4.0, 2.0),  # the moments page out to host memory
        ("sgd", 8.0, 0.0),  # master 4 + one fp32 moment
    ],
)
def test_optimizer_state_at_its_real_width(
    optimizer: str, gpu_bytes: float, host_bytes: float
) -> None:
    mem = finetune_memory(LLAMA3, FinetuneRequest(method="full", optimizer=optimizer))
    assert mem.optimizer_bytes == pytest.approx(gpu_bytes * N)
    assert mem.host_bytes == pytest.approx(host_bytes * N)


def test_adafactor_keeps_factored_state() -> None:
    ada = finetune_memory(LLAMA3, FinetuneRequest(method="full", optimizer="adafactor"))
    assert 4 * N < ada.optimizer_bytes < 4.01 * N


def test_checkpointing_keeps_each_layers_input_and_one_layer() -> None:
    base = {"method": "lora", "seq_len": 4096}
    off = finetune_memory(LLAMA3, FinetuneRequest(**base, gradient_checkpointing=False))
    on = finetune_memory(LLAMA3, FinetuneRequest(**base, gradient_checkpointing=True))
    assert on.activation_bytes < off.activation_bytes / 10
    inputs = LLAMA3.layers * 2 * LLAMA3.hidden * 4096
    assert on.activation_bytes == pytest.approx(inputs + off.activation_bytes / LLAMA3.layers)
    eager = finetune_memory(LLAMA3, FinetuneRequest(**base, fused_attention=False))
    assert eager.activation_bytes > off.activation_bytes  # s^2 attention scores stored


def test_the_loss_over_the_vocabulary_follows_the_framework() -> None:
    def logits(fw: str) -> float:
        return finetune_memory(LLAMA3, FinetuneRequest(framework=fw)).logits_bytes

    assert logits("hf") == 2048 * LLAMA3.vocab * 16  # fp32 logits, their gradient
    assert logits("hf") > logits("torchtune") > logits("unsloth") == 0


def test_unsloth_keeps_checkpointed_inputs_in_host_memory() -> None:
    req = FinetuneRequest(method="qlora", framework="unsloth", seq_len=8192)
    mem = finetune_memory(LLAMA3, req)
    assert mem.host_bytes == LLAMA3.layers * 2 * LLAMA3.hidden * 8192
    hf = finetune_memory(LLAMA3, req.but(framework="hf"))
    assert mem.total_bytes < hf.total_bytes


def test_sharding_divides_state_by_stage_and_offload_moves_it_to_the_host() -> None:
    full = FinetuneRequest(method="full", gradient_checkpointing=True)
    ddp = finetune_memory(LLAMA3, full.but(gpus=8, strategy="ddp"))
    z1 = finetune_memory(LLAMA3, full.but(gpus=8, strategy="zero1"))
    z2 = finetune_memory(LLAMA3, full.but(gpus=8, strategy="zero2"))
    z3 = finetune_memory(LLAMA3, full.but(gpus=8, strategy="fsdp"))
    assert z1.optimizer_bytes == pytest.approx(ddp.optimizer_bytes / 8)
    assert z2.gradient_bytes == pytest.approx(ddp.gradient_bytes / 8)
    assert z3.weights_bytes < ddp.weights_bytes / 4
    assert ddp.total_bytes > z1.total_bytes > z2.total_bytes > z3.live_bytes
    off = finetune_memory(LLAMA3, full.but(gpus=8, strategy="fsdp", offload=True))
    assert off.optimizer_bytes == 0 and off.gradient_bytes == 0
    assert off.host_bytes > 12 * N / 8 and off.live_bytes < z3.live_bytes


def test_lighter_methods_are_lora_then_qlora() -> None:
    steps = lighter_methods(LLAMA3, FinetuneRequest(method="full"))
    assert [m.method for m in steps] == ["lora", "qlora"]
    assert steps[0].total_bytes > steps[1].total_bytes


def test_longest_sequence_and_largest_micro_batch_fit_and_the_next_does_not() -> None:
    req = FinetuneRequest(method="lora", gradient_checkpointing=True)
    cap = float(GPU24)
    seq = longest_sequence(LLAMA3, req, cap)
    assert seq > 2048
    assert finetune_memory(LLAMA3, req.but(batch_size=1, seq_len=seq)).total_bytes <= cap
    assert finetune_memory(LLAMA3, req.but(batch_size=1, seq_len=seq + 1)).total_bytes > cap
    assert longest_sequence(LLAMA3, req, 2 * cap) > seq
    b = largest_micro_batch(LLAMA3, req, cap)
    assert b >= 1
    assert finetune_memory(LLAMA3, req.but(batch_size=b + 1)).total_bytes > cap
    assert largest_micro_batch(LLAMA3, req.but(method="full"), cap) == 0


@settings(max_examples=60, deadline=None)
@given(
    layers=st.integers(1, 96),
    hidden_heads=st.sampled_from([(512, 8), (2048, 16), (4096, 32), (8192, 64)]),
    kv_div=st.sampled_from([1, 2, 4, 8]),
    vocab=st.integers(1000, 260000),
    rank=st.integers(1, 256),
    targets=st.sampled_from(["attention", "all-linear"]),
    seq=st.integers(16, 16384),
    batch=st.integers(1, 16),
    ckpt=st.booleans(),
    framework=st.sampled_from(sorted(load_frameworks())),
)
def test_qlora_never_above_lora(
    layers: int,
    hidden_heads: tuple[int, int],
    kv_div: int,
    vocab: int,
    rank: int,
    targets: str,
    seq: int,
    batch: int,
    ckpt: bool,
    framework: str,
) -> None:
    hidden, heads = hidden_heads
    arch = LlmArch("m", layers, hidden, heads, heads // kv_div, hidden // heads, hidden * 3, vocab)
    req = FinetuneRequest(
        method="lora", lora_rank=rank, target_modules=targets, seq_len=seq, batch_size=batch,
        gradient_checkpointing=ckpt, framework=framework,
    )  # fmt: skip
    lora = finetune_memory(arch, req)
    qlora = finetune_memory(arch, req.but(method="qlora"))
    assert qlora.total_bytes <= lora.total_bytes
    assert qlora.weights_bytes <= lora.weights_bytes


def test_every_framework_constant_has_its_source() -> None:
    for prof in load_frameworks().values():
        sourced = {"efficiency", *type(prof).model_fields} - {"id", "name", "sources"}
        assert sourced <= set(prof.sources), prof.id
        assert all(0 < f <= 1 for f in prof.efficiency.values())
    assert find_framework(None).id == "hf"


@pytest.mark.parametrize(
    "kwargs",
    [
        {"method": "sft"},
        {"lora_rank": 0},
        {"target_modules": "mlp"},
        {"seq_len": 0},
        {"batch_size": -1},
        {"optimizer": "lion"},
        {"strategy": "tp"},
        {"framework": "axolotl"},
        {"gpus": 0},
    ],
)
def test_bad_requests_are_usage_errors(kwargs: dict[str, object]) -> None:
    with pytest.raises(UsageError):
        FinetuneRequest(**kwargs)  # type: ignore[arg-type]
