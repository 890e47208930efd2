"""The analytic transformer profile lists every call an eager BERT layer makes."""

from __future__ import annotations

import pytest

from hwadvisor.estimate import build_workload
from hwadvisor.estimate.timing.gpu import (
    NO_LAUNCH,
    gpu_constants,
    host_seconds,
    op_host_s,
)
from hwadvisor.estimate.workload.profile import transformer_groups


def _per_layer(groups: list, backward: bool = False) -> dict[str, int]:
    out: dict[str, int] = {}
    for g in groups:
        if g.backward == backward:
            out[g.family] = out.get(g.family, 0) + g.count
    return out


def test_an_eval_layer_has_its_modules_products_views_and_kernels() -> None:
    fwd = _per_layer(transformer_groups(128, 1024, 16, 1))
    # 6 containers + 3 dropout modules (eval: no kernel), 6 nn.Linear, 2 torch.matmul
    assert fwd["module"] == 9 and fwd["gemm"] == 6 and fwd["bmm"] == 2
    # reshape + permute of q, k, v; permute + reshape of the context; 3 eval dropouts
    assert fwd["view"] == 11
    # scale, mask, context copy, bias add, 2 residual adds; softmax, GELU, 2 layer norms
    assert fwd["eltwise"] == 6 and fwd["softmax"] == 1 and fwd["gelu"] == 1
    assert fwd["layer_norm"] == 2


def test_counts_scale_with_layers_and_batch_adds_the_operand_copies() -> None:
    one = _per_layer(transformer_groups(128, 1024, 16, 1))
    many = _per_layer(transformer_groups(128, 1024, 16, 24))
    assert all(many[f] == 24 * n for f, n in one.items())
    batched = _per_layer(transformer_groups(128, 1024, 16, 1, batch=8))
    assert batched["eltwise"] == one["eltwise"] + 3  # q, k, v copied for the products
    back = _per_layer(transformer_groups(128, 1024, 16, 1, batch=8), backward=True)
    assert back["gemm"] == 12 and back["bmm"] == 4 and back["view"] == 8


def test_views_modules_and_products_move_no_bytes() -> None:
    for g in transformer_groups(384, 1024, 16, 24, dropout=0.1, batch=4):
        if g.family in NO_LAUNCH or g.family in ("gemm", "bmm"):
            assert g.bytes == 0.0
        else:
            assert g.bytes > 0.0


def test_training_dropout_replaces_the_eval_calls() -> None:
    fwd = _per_layer(transformer_groups(128, 1024, 16, 1, dropout=0.1))
    assert fwd["dropout"] == 3 and fwd["module"] == 6 and fwd["view"] == 8


def test_kernel_less_calls_cost_host_time_but_launch_nothing() -> None:
    h = gpu_constants()["host"]
    # in the forward, views and module calls are inside the per-launch figure
    assert op_host_s("view", backward=False, train=False) == 0.0
    assert op_host_s("view", backward=False, train=True) == 0.0
    assert op_host_s("module", backward=False, train=False) == 0.0
    # autograd's backward node of a view is a C++ call with no launch
    assert op_host_s("view", backward=True, train=True) == pytest.approx(h["cpp_s"])
    assert op_host_s("module", backward=True, train=True) == 0.0
    assert op_host_s("bmm", backward=False, train=False) == pytest.approx(h["model_launch_s"])
    wl = build_workload(model="bert-large", task="infer", batch_size=1, seq_len=128)
    assert wl.profile is not None
    host, launches = host_seconds(wl, wl.profile)
    fwd = [g for g in wl.profile.op_groups if not g.backward]
    kernels = sum(g.count for g in fwd if g.family not in NO_LAUNCH)
    assert launches == kernels == 24 * 18  # 18 kernels a layer at batch 1
    calls = sum(g.count * op_host_s(g.family, backward=False, train=False) for g in fwd)
    assert host == pytest.approx(calls)


def test_attention_products_cast_no_weight_under_autocast() -> None:
    amp = build_workload(model="bert-base", task="infer", batch_size=1, precision="amp")
    fp32 = build_workload(model="bert-base", task="infer", batch_size=1, precision="fp32")
    assert amp.profile is not None and fp32.profile is not None
    linears = sum(g.count for g in amp.profile.op_groups if g.family == "gemm" and not g.backward)
    (a, a_launches), (f, f_launches) = (
        host_seconds(amp, amp.profile),
        host_seconds(fp32, fp32.profile),
    )
    h = gpu_constants()["host"]
    # one cast per nn.Linear's weight and one for the input; none for q·kᵀ or probs·v
    assert a_launches - f_launches == linears + 1
    assert a - f == pytest.approx((linears + 1) * h["model_launch_s"])


def test_the_products_flops_and_the_cpu_bytes_follow_the_same_operators() -> None:
    one = build_workload(model="bert-base", task="infer", batch_size=1)
    eight = build_workload(model="bert-base", task="infer", batch_size=8)
    assert one.profile is not None and eight.profile is not None
    for wl in (one, eight):
        assert wl.profile is not None
        assert sum(b.flops for b in wl.profile.gemm) == pytest.approx(wl.flops_per_sample)
    # at batch > 1 the products' operand copies move bytes (3 x s x h, read and written)
    extra = eight.profile.memory_bytes - one.profile.memory_bytes
    assert extra == pytest.approx(4.0 * 6 * 768 * 128 * 12)


def test_fused_attention_stores_no_scores_and_launches_one_kernel() -> None:
    """A layer whose attention is F.scaled_dot_product_attention has no softmax, no score
    passes and one attention kernel each way, and its memory traffic falls with the
    sequence's square no longer in it."""
    eager = _per_layer(transformer_groups(197, 768, 12, 1))
    fused = _per_layer(transformer_groups(197, 768, 12, 1, fused=True))
    assert "softmax" not in fused and fused["bmm"] == 1 and eager["bmm"] == 2
    assert _per_layer(transformer_groups(197, 768, 12, 1, fused=True), backward=True)["bmm"] == 1
    vit = build_workload(model="vit-b16", task="infer", batch_size=8)
    assert vit.profile is not None
    assert not any(g.family == "softmax" for g in vit.profile.op_groups)
    bert = build_workload(model="bert-base", task="infer", batch_size=8)
    assert bert.profile is not None
    assert any(g.family == "softmax" for g in bert.profile.op_groups)  # eager BERT layer
