"""What a CPU kernel allocates inside one call: the scripts, and the replay that holds them."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hwadvisor.estimate.workload import cpu_kernels  # noqa: E402
from hwadvisor.estimate.workload.cpu_alloc import replay  # noqa: E402
from hwadvisor.estimate.workload.cpu_kernels import kernel_script  # noqa: E402

MiB = 1 << 20
CONV = torch.ops.aten.convolution.default
CONV_BACKWARD = torch.ops.aten.convolution_backward.default


def _conv_call(cin: int, cout: int, *, channels_last: bool = False) -> tuple[list, object]:
    x = torch.empty(4, cin, 32, 32)
    if channels_last:
        x = x.to(memory_format=torch.channels_last)
    w = torch.empty(cout, cin, 3, 3)
    args = [x, w, None, [1], [1], [1], False, [0], 1]
    return args, torch.empty(4, cout, 32, 32)


def _allocated(script: list) -> list[int]:
    """The call's own buffers (not oneDNN's small descriptor blocks around them)."""
    return [n for op, slot, n in script if op == "+" and slot < cpu_kernels._BLOCK_SLOT]


def test_a_convolution_copies_its_input_and_weights_and_computes_into_a_blocked_buffer() -> None:
    args, out = _conv_call(16, 32)
    script = kernel_script(CONV, args, out)
    x, w = args[0], args[1]
    assert _allocated(script) == [x.nbytes, w.nbytes, out.nbytes]
    # the output is made while the blocked destination is live, freed after it
    assert script.index(("out", 0, 0)) < script.index(("-", 3, 0))
    assert script.index(("-", 1, 0)) < script.index(("out", 0, 0))
    # oneDNN's descriptor blocks around them, as traced: every one freed in the call
    blocks = [slot for op, slot, n in script if op == "+" and n == cpu_kernels.MEMORY_DESC]
    assert len(blocks) == 15
    assert sorted(blocks) == sorted(s for op, s, _ in script if op == "-" and s in blocks)


def test_a_first_layer_reads_its_input_as_it_is() -> None:
    args, out = _conv_call(3, 32)
    assert _allocated(kernel_script(CONV, args, out)) == [args[1].nbytes, out.nbytes]


def test_channels_last_needs_no_reorder() -> None:
    args, out = _conv_call(16, 32, channels_last=True)
    assert kernel_script(CONV, args, out) == []


def test_a_convolution_backward_copies_per_gradient_it_computes() -> None:
    gy, x, w = torch.empty(4, 32, 16, 16), torch.empty(4, 16, 16, 16), torch.empty(32, 16, 3, 3)
    args = [gy, x, w, [32], [1], [1], [1], False, [0], 1, [True, True, False]]
    both = kernel_script(CONV_BACKWARD, args, (x, w, None))
    assert _allocated(both) == [gy.nbytes, w.nbytes, x.nbytes, gy.nbytes, x.nbytes, w.nbytes]
    assert [s for s in both if s[0] == "out"] == [("out", 0, 0), ("out", 1, 0)]
    args[-1] = [False, True, False]
    weights_only = kernel_script(CONV_BACKWARD, args, (None, w, None))
    assert _allocated(weights_only) == [gy.nbytes, x.nbytes, w.nbytes]


def test_an_operator_without_kernel_buffers_has_no_script() -> None:
    a = torch.empty(8, 8)
    assert kernel_script(torch.ops.aten.mm.default, [a, a], a) == []


def test_kernel_buffers_are_resident_but_not_live_tensors() -> None:
    events = [("a", 1, 8 * MiB), ("k", 2, 8 * MiB), ("a", 3, 8 * MiB), ("f", 2, 0)]
    r = replay(events)
    assert r.live_peak == 16 * MiB
    assert r.peak >= 24 * MiB


def test_the_tracker_records_a_convolutions_buffers_around_its_output() -> None:
    from torch import nn

    from hwadvisor.estimate.workload.memtrack import count_memory

    def build() -> nn.Module:
        with torch.device("meta"):
            return nn.Sequential(nn.Conv2d(16, 16, 3, padding=1), nn.ReLU())

    c = count_memory(build, [16, 32, 32], batch=4, tokens=False, precision="fp32")
    kinds = [op for op, _, _ in c.infer_events]
    assert "k" in kinds
    act = 4 * 16 * 32 * 32 * 4
    ks = [n for op, _, n in c.infer_events if op == "k"]
    assert act in ks
    # the live count is the tensors' alone
    assert c.inference.total < 3 * act + 16 * 16 * 9 * 4 + 64 * 1024


def test_every_script_frees_what_it_allocates() -> None:
    x = torch.empty(16, 4, 32)  # time-major: 16 steps, batch 4
    w_ih, w_hh, b = torch.empty(4 * 64, 32), torch.empty(4 * 64, 64), torch.empty(4 * 64)
    h = torch.empty(4, 64)
    rnn = [x, w_ih, w_hh, b, b, h, h, False, [], 2, 64, 1, True, False, False, True]
    conv_args, conv_out = _conv_call(16, 32)
    gy, cx, cw = torch.empty(4, 32, 16, 16), torch.empty(4, 16, 16, 16), torch.empty(32, 16, 3, 3)
    calls = [
        (CONV, conv_args, conv_out),
        (
            CONV_BACKWARD,
            [gy, cx, cw, [32], [1], [1], [1], False, [0], 1, [True, True, False]],
            (cx, cw, None),
        ),
        (torch.ops.aten.native_batch_norm_backward.default, [cx, cx], (cx, None, None)),
        (torch.ops.aten.mkldnn_rnn_layer.default, rnn, (x, h, h, torch.empty(0))),
        (torch.ops.aten.mkldnn_rnn_layer_backward.default, rnn, (x, w_ih, w_hh, b, b, h, h)),
        (torch.ops.aten.mm.default, [torch.ones(()).expand(8, 4), torch.empty(4, 4)], None),
        (torch.ops.aten.addmm.default, [b, torch.empty(4, 4), torch.empty(4, 8, 2)[:, :, 0]], None),
    ]
    assert {str(f) for f, _, _ in calls} == set(cpu_kernels._SCRIPTS) - {
        "aten._transformer_encoder_layer_fwd.default"
    }
    for func, args, out in calls:
        script = kernel_script(func, args, out)
        made = [slot for op, slot, _ in script if op in ("+", "s")]
        freed = [slot for op, slot, _ in script if op == "-"]
        assert made and sorted(made) == sorted(freed), func


def test_a_training_lstm_layer_holds_the_written_part_of_its_workspace() -> None:
    from hwadvisor.estimate.workload.cpu_kernels import output_sizes

    steps, batch, width = 32, 4, 64
    args = [
        torch.empty(steps, batch, 16),
        torch.empty(4 * width, 16),
        torch.empty(4 * width, width),
        torch.empty(4 * width),
        torch.empty(4 * width),
        torch.empty(batch, width),
        torch.empty(batch, width),
        False,
        [],
        2,
        width,
        1,
        True,
        False,
        True,
        True,
    ]
    real = torch.ops.aten.mkldnn_rnn_layer.default(*args)[3]
    empty = (real, real, real, torch.empty(0))
    part = output_sizes(torch.ops.aten.mkldnn_rnn_layer.default, args, empty)[3]
    # the workspace's real size (linear in steps and batch), the share the forward
    # writes, and more written once the backward has used it as scratch
    assert abs(part.size - real.nbytes) <= 0.05 * real.nbytes  # probed at batch 8
    assert 0.05 * real.nbytes < part.written < part.read_written < 0.9 * real.nbytes
    # in inference (train False) and when the fake kernel reports the size, nothing changes
    assert output_sizes(torch.ops.aten.mkldnn_rnn_layer.default, [*args[:15], False], empty) == {}
    full = (real, real, real, real)
    assert output_sizes(torch.ops.aten.mkldnn_rnn_layer.default, args, full) == {}


def test_an_lstm_training_step_counts_its_workspace() -> None:
    from torch import nn

    from hwadvisor.estimate.workload.memtrack import count_memory

    class Tagger(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = nn.LSTM(32, 128, batch_first=True)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.lstm(x)[0]

    def build() -> nn.Module:
        with torch.device("meta"):
            return Tagger()

    small = count_memory(build, [64, 32], batch=4, tokens=False)
    large = count_memory(build, [64, 32], batch=16, tokens=False)
    outputs = 64 * 128 * 4  # one sample's hidden states, fp32
    per_sample = (large.forward.total - small.forward.total) / 12
    # the forward keeps the written workspace per sample beside the outputs and the input
    assert per_sample > 2 * outputs
    assert large.inference.total - small.inference.total < 12 * 3 * outputs
    # the replay maps the workspace at its real size, written a part at a time: a part
    # by the forward, more by the backward that reads it
    kinds = {key: n for op, key, n in large.train_events if op == "u"}
    assert kinds
    key, size = next(iter(kinds.items()))
    writes = [n for op, k, n in large.train_events if op == "w" and k == key]
    assert len(writes) == 2 and 0 < writes[0] < writes[1] < size


def test_pytorchs_own_kernel_makes_no_reorders() -> None:
    # an unstrided 1x1 convolution at batch < 16 on one thread runs PyTorch's own kernel
    x, w = torch.empty(4, 16, 8, 8), torch.empty(32, 16, 1, 1)
    args = [x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1]
    out = torch.empty(4, 32, 8, 8)
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert kernel_script(CONV, args, out) == []
        torch.set_num_threads(2)
        assert kernel_script(CONV, args, out) != []
    finally:
        torch.set_num_threads(threads)
    # a tiny 3x3 convolution at batch 1 runs PyTorch's own kernel too
    small = [
        torch.empty(1, 8, 8, 8),
        torch.empty(8, 8, 3, 3),
        None,
        [1, 1],
        [1, 1],
        [1, 1],
        False,
        [0, 0],
        1,
    ]
    assert kernel_script(CONV, small, torch.empty(1, 8, 8, 8)) == []


def test_a_product_copies_an_operand_blas_cannot_read() -> None:
    mm = torch.ops.aten.mm.default
    grad = torch.ones(()).expand(64, 32)  # a summed output's gradient: every stride 0
    w = torch.empty(32, 16)
    assert _allocated(kernel_script(mm, [grad, w], None)) == [64 * 32 * 4]
    # contiguous, transposed and row-sliced operands are read as they are
    assert kernel_script(mm, [torch.empty(64, 32), w.t().contiguous().t()], None) == []
    assert kernel_script(mm, [torch.empty(64, 64)[:, :32], w], None) == []


def test_the_bias_add_of_linear_is_in_place_as_real_tensors_do_it() -> None:
    from torch import nn

    from hwadvisor.estimate.workload.memtrack import count_memory

    class Head(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.out = nn.Linear(64, 4096)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            # a transposed input cannot be flattened: F.linear multiplies, then adds
            return self.out(x.transpose(0, 1))

    def build() -> nn.Module:
        with torch.device("meta"):
            return Head()

    c = count_memory(build, [32, 64], batch=16, tokens=False)
    logits = 16 * 32 * 4096 * 4
    weights = 4096 * 65 * 4
    # one product-sized tensor, as the real add_ leaves, not two
    assert c.inference.total < 1.5 * logits + weights + 16 * 32 * 64 * 4 * 2


def test_a_training_step_keeps_its_output_through_backward() -> None:
    from torch import nn

    from hwadvisor.estimate.workload.memtrack import count_memory

    def build() -> nn.Module:
        with torch.device("meta"):
            return nn.Sequential(nn.Linear(64, 8192))

    c = count_memory(build, [64], batch=256, tokens=False)
    out = 256 * 8192 * 4
    # the loop's `outputs` is referenced while backward and the step run
    assert c.backward.activations + c.backward.temporaries >= out


def test_an_add_of_a_plain_tensor_to_a_product_stays_out_of_place() -> None:
    from hwadvisor.estimate.workload.cpu_kernels import in_place_bias

    add = torch.ops.aten.add.Tensor
    y, bias = torch.empty(8, 16), torch.nn.Parameter(torch.empty(16))
    fresh = {y.untyped_storage()._cdata}
    assert in_place_bias(add, [y, bias], fresh)
    assert not in_place_bias(add, [y, torch.empty(16)], fresh)  # a tensor, not a bias
    assert not in_place_bias(add, [y, bias], set())  # not the product just made
