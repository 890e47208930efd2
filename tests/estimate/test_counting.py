"""User models counted on the meta device: exact FLOPs, classes, inputs, and clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from hwadvisor.errors import UsageError
from hwadvisor.estimate import build_workload
from hwadvisor.estimate.workload.counting import effective_size
from hwadvisor.models.workload import ModelKind

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def test_linear_is_exactly_2mnk() -> None:
    wl = build_workload(model=f"{MODELS}/mlp.py:tiny", input_shape=[64], batch_size=8)
    # Linear(64 -> 32), batch 8: 2·M·N·K = 2·8·32·64 FLOPs, per sample / 8.
    assert wl.flops_per_sample == 2 * 32 * 64
    assert wl.params == 64 * 32
    assert wl.profile is not None
    assert sum(b.flops for b in wl.profile.gemm) == 2 * 32 * 64
    assert wl.profile.conv_flops == 0


@pytest.mark.slow  # counts in the contained child (a torch import); 2mnk stays quick
def test_counted_flops_match_flop_counter_mode() -> None:
    import torch
    from tests.data.models import mlp  # type: ignore[import-not-found]
    from torch.utils.flop_counter import FlopCounterMode

    model = mlp.build()
    with FlopCounterMode(display=False) as fcm:
        model(torch.randn(4, 784))
    wl = build_workload(model=f"{MODELS}/mlp.py:build", input_shape=[784], batch_size=4)
    assert wl.flops_per_sample == fcm.get_total_flops() / 4


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_cnn_is_classified_with_conv_buckets_and_activations() -> None:
    wl = build_workload(model=f"{MODELS}/cnn.py:build", input_shape=[3, 32, 32], batch_size=4)
    assert wl.kind is ModelKind.CNN
    prof = wl.profile
    assert prof is not None and prof.conv_flops > 0.99 * (wl.flops_per_sample or 0)
    assert prof.conv and sum(b.flops for b in prof.conv) == pytest.approx(prof.conv_flops)
    assert prof.memory_bytes > 0 and prof.kernels > 10
    # Activations: at least the first conv's output (32 channels x 32 x 32 fp32) per sample.
    assert (wl.activation_bytes_per_sample or 0) >= 32 * 32 * 32 * 4


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_embedding_first_layer_gets_token_inputs() -> None:
    wl = build_workload(model=f"{MODELS}/encoder.py:build", input_shape=[16], batch_size=2)
    assert wl.kind is ModelKind.ENCODER
    assert wl.seq_len == 16
    assert any("token" in a for a in wl.assumptions)


def test_effective_size_is_dominated_by_the_smallest_side() -> None:
    assert effective_size(512, 512, 512) == 512
    assert effective_size(100000, 32, 27) < 45


@pytest.mark.parametrize(
    ("spec", "shape", "message"),
    [
        ("nope/missing.py:build", [3], "does not exist"),
        (f"{MODELS}/broken.py:build", [3], "broken on purpose"),
        # Each of these starts the contained child (a torch import): the slow step runs them.
        pytest.param(
            f"{MODELS}/mlp.py:not_a_module", [3], "not a torch.nn.Module", marks=pytest.mark.slow
        ),
        pytest.param(f"{MODELS}/mlp.py:absent", [3], "not a callable", marks=pytest.mark.slow),
        pytest.param(f"{MODELS}/mlp.py:tiny", [65], "failed", marks=pytest.mark.slow),
        pytest.param("no_such_module_xyz:build", [3], "not found", marks=pytest.mark.slow),
    ],
)
def test_bad_user_models_are_one_usage_error(spec: str, shape: list[int], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        build_workload(model=spec, input_shape=shape)


def test_user_model_needs_a_shape() -> None:
    with pytest.raises(UsageError, match="input-shape"):
        build_workload(model=f"{MODELS}/mlp.py:tiny")


def test_products_are_keyed_by_their_effective_size() -> None:
    """A Linear at batch 4: one product of M, N, K = 4, 32, 64."""
    import torch

    from hwadvisor.estimate.workload.counting import count_model

    with torch.device("meta"):
        model = torch.nn.Linear(64, 32)
    counted = count_model(model, [64], 4, "linear")
    assert list(counted.forward.gemm) == [effective_size(4, 32, 64)]


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_lstm_is_counted_as_the_cpu_runs_it() -> None:
    # Input [batch 4, 20 steps, 32 features]; two LSTM layers of 64 (4 gates).
    wl = build_workload(model=f"{MODELS}/rnn.py:lstm", input_shape=[20, 32], batch_size=4)
    steps, gates = 20, 4 * 64
    layers = 2 * steps * gates * (32 + 64) + 2 * steps * gates * (64 + 64)
    assert wl.flops_per_sample == pytest.approx(layers + 2 * 64 * 4)
    prof = wl.profile
    assert prof is not None
    # One oneDNN call per layer, not thousands of per-step operators as on the meta device.
    assert prof.kernels < 30
    # Each layer's input product covers the whole sequence (80 rows); the steps' products
    # (4 rows each) at their own effective size.
    sizes = {b.size for b in prof.gemm}
    assert effective_size(steps * 4, gates, 32) in sizes
    recurrent = [b for b in prof.gemm if b.size == effective_size(4, gates, 64)]
    assert sum(b.flops for b in recurrent) == pytest.approx(2 * 2 * steps * gates * 64)
    assert any("recurrent layers" in a for a in wl.assumptions)
    # Each layer's call is recorded, forward and backward, for its own cost.
    calls = {(g.backward, g.count) for g in prof.op_groups if g.family == "rnn_layer"}
    assert calls == {(False, 2), (True, 2)}
    # Activations still come from the saved tensors (the meta count).
    assert (wl.activation_bytes_per_sample or 0) > 0


@pytest.mark.slow  # seconds of real torch; CI's second step runs it
def test_gru_gets_the_whole_sequences_input_product_at_once() -> None:
    wl = build_workload(model=f"{MODELS}/rnn.py:gru", input_shape=[20, 32], batch_size=4)
    prof = wl.profile
    assert prof is not None
    # On a CPU the GRU multiplies all 20 steps' inputs in one product of 80 rows (3 gates
    # of 64); on the meta device each step would multiply its own 4 rows.
    inputs = [b for b in prof.gemm if b.size == effective_size(80, 192, 32)]
    assert inputs and sum(b.flops for b in inputs) == pytest.approx(2 * 20 * 192 * 32)
    assert wl.flops_per_sample == pytest.approx(2 * 20 * 192 * (32 + 64) + 2 * 64 * 4)
