"""PyTorch's native CPU convolution path: 1x1 convolutions at batch < 16 on one thread.

PyTorch's ``ConvParams::use_mkldnn`` sends them to ``_slow_conv2d_forward`` / ``_backward``
(a matrix product per sample), not oneDNN; the estimate prices them so, at the measured
matmul rate for the product's size, and says so.
"""

from __future__ import annotations

import math

import pytest

from hwadvisor.catalog.loader import load_devices
from hwadvisor.estimate.timing.cpu import here_rates
from hwadvisor.estimate.timing.rates import catalog_rates
from hwadvisor.estimate.timing.step import native_conv, step_time
from hwadvisor.estimate.workload.counting import effective_size
from hwadvisor.models.bench import BenchReport, BenchResult
from hwadvisor.models.workload import (
    ConvShape,
    GemmBucket,
    ModelKind,
    OpProfile,
    Precision,
    Task,
    Workload,
)


def _conv(kernel: list[int], *, stride: int = 1, groups: int = 1, dilation: int = 1,
          elements: int = 256 * 56 * 56, product: list[int] | None = None,
          flops: float = 1e9, size: int = 500) -> ConvShape:  # fmt: skip
    dims = len(kernel)
    return ConvShape(
        count=1, kernel=kernel, stride=[stride] * dims, dilation=[dilation] * dims,
        groups=groups, input_elements=elements, product=product or [64, 256, 3136],
        flops=flops, size=size,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("conv", "batch", "threads", "native"),
    [
        (_conv([1, 1]), 4, 1, True),  # the case: unstrided 1x1, batch < 16, one thread
        (_conv([1, 1]), 15, 1, True),
        (_conv([1, 1]), 16, 1, False),  # input.size(0) >= 16
        (_conv([1, 1]), 4, 2, False),  # at::get_num_threads() > 1
        (_conv([1, 1], stride=2), 4, 1, False),  # is_strided()
        (_conv([1, 1], dilation=2), 4, 1, False),  # is_dilated()
        (_conv([3, 3]), 4, 1, False),  # weight.size(-1) != 1
        (_conv([1, 3]), 4, 1, False),
        (_conv([1, 1], groups=4), 4, 1, True),  # the first clause fails whatever the groups
        (_conv([1]), 4, 1, True),  # 1-D, viewed as 2-D with a kernel of height 1
        (_conv([3, 3], elements=3 * 32 * 32), 1, 2, True),  # batch 1, <= 20480 elements
        (_conv([3, 3], elements=3 * 224 * 224), 1, 2, False),
        (_conv([3, 3], elements=3 * 32 * 32, groups=3), 1, 2, False),  # groups > 1
        (_conv([5, 5], elements=3 * 32 * 32), 1, 2, False),  # kernel over 3x3
        (_conv([1, 1, 1]), 4, 1, False),  # 3-D: not modelled
    ],
)
def test_rule_follows_use_mkldnn(conv: ConvShape, batch: int, threads: int, native: bool) -> None:
    assert native_conv(conv, batch, threads) is native


def _bench(threads: int) -> BenchReport:
    """Matmul 20 GFLOP/s at 64, 100 at 512 and above; conv2d 150 GFLOP/s at its size."""

    def fig(kernel: str, value: float, shape: list[int], unit: str = "GFLOP/s") -> BenchResult:
        return BenchResult(device="cpu", kernel=kernel, dtype="fp32", shape=shape, value=value,
                           unit=unit, median_s=1e-3, iqr_s=0.0, runs=5, threads=threads)  # fmt: skip

    return BenchReport(
        budget_s=1.0,
        elapsed_s=1.0,
        results=[
            fig("matmul", 20.0, [64, 64, 64]),
            fig("matmul", 100.0, [512, 512, 512]),
            fig("conv2d", 150.0, [8, 64, 56, 56, 64, 3, 3]),
            fig("triad", 10.0, [1 << 23], unit="GB/s"),
        ],
    )


def _resnet_like(batch: int, precision: Precision = Precision.FP32) -> Workload:
    """Two conv buckets: a 3x3 one (oneDNN whatever the batch) and a 1x1 one."""
    pointwise = _conv([1, 1], product=[256, 64, 3136], flops=1e8, size=154)
    spatial = _conv([3, 3], product=[64, 576, 3136], flops=2e8, size=173)
    prof = OpProfile(
        conv=[GemmBucket(size=154, flops=1e8), GemmBucket(size=173, flops=2e8)],
        conv_shapes=[pointwise, spatial],
        conv_flops=3e8,
        kernels=10,
    )
    return Workload(kind=ModelKind.CNN, task=Task.TRAIN, batch_size=batch, params=1000,
                    flops_per_sample=3e8, profile=prof, precision=precision)  # fmt: skip


def test_one_thread_small_batch_prices_1x1_as_per_sample_products() -> None:
    rates = here_rates(None, _bench(threads=1), Precision.FP32)
    assert rates.threads == 1
    st = step_time(_resnet_like(4), rates)
    assert st.total is not None
    work = 4 * 3.0  # samples x (forward + a backward of two products)
    gemm_rate = rates.gemm(float(effective_size(256, 3136, 64)))
    conv_rate = rates.conv_at(173.0)
    assert gemm_rate and conv_rate
    assert st.parts["conv"] == pytest.approx((1e8 / gemm_rate + 2e8 / conv_rate) * work)
    note = next(n for n in st.notes if "native path" in n)
    assert "1x1 convolutions at batch < 16 on one thread" in note
    assert "per-sample products" in note


def test_nothing_changes_at_two_threads_batch_16_or_bf16() -> None:
    def conv_part(batch: int, threads: int, precision: Precision = Precision.FP32) -> float:
        rates = here_rates(None, _bench(threads=threads), precision)
        st = step_time(_resnet_like(batch, precision), rates)
        assert not any("native path" in n for n in st.notes)
        return st.parts["conv"]

    def onednn(batch: int) -> float:
        rates = here_rates(None, _bench(threads=2), Precision.FP32)
        # On oneDNN the 1x1 goes at the lower of the conv rate and the matmul curve at its
        # product's size at this batch ([batch x 3136 positions, 64] @ [64, 256]).
        square = rates.gemm(float(effective_size(batch * 3136, 256, 64))) or 1.0
        pointwise = min(rates.conv_at(154.0) or 1.0, square)
        return 1e8 / pointwise + 2e8 / (rates.conv_at(173.0) or 1)

    assert conv_part(4, 2) == pytest.approx(onednn(4) * 4 * 3.0)
    assert conv_part(16, 1) == pytest.approx(onednn(16) * 16 * 3.0)
    assert conv_part(4, 1, Precision.BF16) > 0  # bf16 inputs: oneDNN (no native note)


def test_pointwise_convolutions_on_onednn_go_no_faster_than_the_matmul_curve() -> None:
    """A 1x1 reuses no input across a window: it is a product, priced on the matmul curve."""
    from hwadvisor.estimate.timing.step import onednn_conv_rate

    rates = here_rates(None, _bench(threads=2), Precision.FP32)
    pointwise = _conv([1, 1], product=[256, 64, 3136], flops=1e8, size=154)
    square = rates.gemm(float(effective_size(4 * 3136, 256, 64)))
    assert square is not None and square < (rates.conv_at(154.0) or 0)
    assert onednn_conv_rate(pointwise, rates, 4) == pytest.approx(square)
    # A 3x3 keeps the conv rate; so does a 1x1 whose product runs faster than it.
    spatial = _conv([3, 3], product=[64, 576, 3136], flops=2e8, size=173)
    assert onednn_conv_rate(spatial, rates, 4) == rates.conv_at(173.0)
    fast = _bench(threads=2)
    fast = fast.model_copy(update={"results": [
        r.model_copy(update={"value": 400.0}) if r.kernel == "matmul" else r for r in fast.results
    ]})  # fmt: skip
    quick = here_rates(None, fast, Precision.FP32)
    assert onednn_conv_rate(pointwise, quick, 4) == quick.conv_at(154.0)


def test_native_path_is_slower_here_than_the_onednn_rate() -> None:
    # The measured matmul rate at a 1x1's product size is below the conv2d figure's scaled
    # rate on this fake machine, as on the development machine: the estimate grows.
    fast = step_time(_resnet_like(4), here_rates(None, _bench(threads=2), Precision.FP32))
    slow = step_time(_resnet_like(4), here_rates(None, _bench(threads=1), Precision.FP32))
    assert slow.parts["conv"] > fast.parts["conv"]


def test_catalog_cpu_runs_on_its_cores_so_nothing_changes() -> None:
    entry = load_devices()["xeon-6248"]
    rates = catalog_rates(entry, Precision.FP32)
    assert rates.threads == entry.cores and (rates.threads or 0) > 1
    st = step_time(_resnet_like(4), rates)
    assert not any("native path" in n for n in st.notes)


def test_a_convolution_is_never_priced_above_the_measured_rate() -> None:
    """The matmul curve lowers a convolution smaller than the measured one and never
    raises a larger one: the measured conv2d (172 effective size here) has amortised the
    per-call costs that make small squares slow."""
    rates = here_rates(None, _bench(threads=2), Precision.FP32)
    assert rates.conv_size == effective_size(8 * 56 * 56, 64, 64 * 9) == 172
    assert rates.conv_at(600.0) == pytest.approx(150e9)  # the curve says 100/~70 above it
    small = rates.conv_at(64.0)
    ref, low = rates.gemm(172.0), rates.gemm(64.0)
    assert small is not None and ref is not None and low is not None
    assert small == pytest.approx(150e9 * low / ref) and small < 150e9


def test_the_backward_convolutions_run_at_the_measured_backward_rate() -> None:
    """With a measured aten.convolution_backward, a training step's backward convolutions
    (two forwards' FLOPs) run at its rate, lowered along the curve from its own size as the
    forward's is; inference is unchanged, and without it the backward runs at the forward's."""
    bench = _bench(threads=2)
    back = bench.results[2].model_copy(
        update={"kernel": "conv2d_backward", "value": 120.0, "shape": [16, 128, 56, 56]}
    )
    slow = bench.model_copy(update={"results": [*bench.results, back]})
    rates = here_rates(None, slow, Precision.FP32)
    assert rates.conv_backward == pytest.approx(120e9)
    assert rates.conv_backward_size == effective_size(16 * 56 * 56, 128, 128 * 9)
    assert rates.conv_at(2000.0, backward=True) == pytest.approx(120e9)
    assert rates.conv_at(2000.0) == pytest.approx(150e9)

    def conv_part(b: BenchReport, task: Task) -> float:
        wl = _resnet_like(16).model_copy(update={"task": task})
        return step_time(wl, here_rates(None, b, Precision.FP32)).parts["conv"]

    forward = conv_part(bench, Task.INFER) * 16 / 16
    plain, measured = conv_part(bench, Task.TRAIN), conv_part(slow, Task.TRAIN)
    assert plain == pytest.approx(3 * forward)

    from hwadvisor.estimate.timing.step import onednn_conv_rate

    pointwise = _resnet_like(16).profile.conv_shapes[0]  # type: ignore[union-attr]
    # The 1x1 at the lower of the backward rate and the matmul curve, the 3x3 at the former.
    back_1x1 = onednn_conv_rate(pointwise, rates, 16, backward=True) or 1.0
    assert back_1x1 <= (rates.conv_at(154.0, backward=True) or 0)
    backward = 16 * 2 * (1e8 / back_1x1 + 2e8 / (rates.conv_at(173.0, backward=True) or 1.0))
    assert measured == pytest.approx(forward + backward)
    assert conv_part(slow, Task.INFER) == pytest.approx(conv_part(bench, Task.INFER))
    notes = rates.assumptions
    assert any(
        "backward convolutions at the measured conv2d backward rate (120" in n for n in notes
    )


def test_a_strided_convolutions_backward_goes_at_the_measured_strided_share() -> None:
    """The bench's conv2d_backward_strided figures, over the price this estimate gives the
    same shape unstrided, scale the backward of every stride-2 convolution of that kernel
    side: forwards, unstrided convolutions and other kernels are left as they were."""
    from hwadvisor.estimate.timing.step import onednn_conv_rate, strided_backward_factor

    bench = _bench(threads=2)

    def strided(side: int, value: float) -> BenchResult:
        return bench.results[2].model_copy(
            update={"kernel": "conv2d_backward_strided", "value": value,
                    "shape": [4, 256, 28, 28, 512 if side == 1 else 256, side, side]}
        )  # fmt: skip

    measured = bench.model_copy(update={"results": [*bench.results, strided(1, 20.0), strided(3, 60.0)]})  # fmt: skip
    rates = here_rates(None, measured, Precision.FP32)
    plain = here_rates(None, bench, Precision.FP32)
    assert set(rates.strided_backward) == {1, 3} and not plain.strided_backward
    # Each factor is the figure over the unstrided price of the figure's own shape.
    ref = _conv([1, 1], product=[512, 256, 196], flops=2.0 * 512 * 196 * 256,
                size=effective_size(4 * 196, 512, 256))  # fmt: skip
    assert rates.strided_backward[1] == pytest.approx(20e9 / (onednn_conv_rate(ref, plain, 4, backward=True) or 1))  # fmt: skip
    down = _conv([1, 1], stride=2, product=[512, 256, 784], flops=1e8, size=154)
    same = _conv([1, 1], product=[512, 256, 784], flops=1e8, size=154)
    five = _conv([5, 5], stride=2, product=[64, 1600, 784], flops=1e8, size=154)
    assert strided_backward_factor(down, rates) == rates.strided_backward[1]
    assert strided_backward_factor(same, rates) == strided_backward_factor(five, rates) == 1.0
    back = onednn_conv_rate(down, rates, 4, backward=True)
    unstrided = onednn_conv_rate(same, rates, 4, backward=True)
    assert back == pytest.approx((unstrided or 0) * rates.strided_backward[1])
    assert onednn_conv_rate(down, rates, 4) == onednn_conv_rate(same, rates, 4)  # forward
    assert any("conv2d_backward_strided" in a for a in rates.assumptions)
    # An unreliable figure is left out.
    shaky = measured.model_copy(update={"results": [*bench.results, strided(1, 20.0).model_copy(update={"reliable": False})]})  # fmt: skip
    assert not here_rates(None, shaky, Precision.FP32).strided_backward


def test_an_nchw_convolution_goes_at_the_measured_nchw_share_of_its_price() -> None:
    """The bench's conv2d_nchw figures, over the channels-last price of the same shape,
    scale an NCHW job's oneDNN convolutions, read between the measured channel counts;
    a channels-last job is priced as before."""
    from hwadvisor.estimate.timing.step import conv_channels, onednn_conv_rate

    bench = _bench(threads=2)

    def nchw(channels: int, side: int, value: float, *, backward: bool = False) -> BenchResult:
        kernel = "conv2d_nchw_backward" if backward else "conv2d_nchw"
        return bench.results[2].model_copy(
            update={"kernel": kernel, "value": value, "shape": [4, channels, side, side]}
        )

    figures = [nchw(32, 56, 50.0), nchw(256, 14, 75.0), nchw(32, 56, 40.0, backward=True)]
    measured = bench.model_copy(update={"results": [*bench.results, *figures]})
    rates = here_rates(None, measured, Precision.FP32)
    plain = here_rates(None, bench, Precision.FP32)
    assert not plain.nchw and plain.nchw_factor(64.0) == 1.0

    def price(channels: int, side: int, *, backward: bool = False) -> float:
        same = _conv([3, 3], product=[channels, channels * 9, side * side],
                     flops=2.0 * channels * side * side * channels * 9,
                     size=effective_size(4 * side * side, channels, channels * 9))  # fmt: skip
        return onednn_conv_rate(same, plain, 4, backward=backward) or 1.0

    # Without a sweep no reorder is priced: each factor is the figure over the price.
    forward = rates.nchw[False]
    assert [c for c, _ in forward] == [32.0, 256.0]
    assert forward[0][1] == pytest.approx(50e9 / price(32, 56))
    assert forward[1][1] == pytest.approx(75e9 / price(256, 14))
    assert rates.nchw[True] == [(32.0, pytest.approx(40e9 / price(32, 56, backward=True)))]
    # Read log-linearly by channels, held at the ends.
    mid = rates.nchw_factor(math.sqrt(32 * 256))
    assert mid == pytest.approx((forward[0][1] + forward[1][1]) / 2)
    assert rates.nchw_factor(8.0) == forward[0][1] and rates.nchw_factor(2048.0) == forward[1][1]
    assert rates.nchw_factor(512.0, backward=True) == rates.nchw[True][0][1]
    # A convolution's channels: the geometric mean of its input and output channels.
    spatial = _conv([3, 3], product=[64, 128 * 9, 3136], flops=2e8, size=173)
    assert conv_channels(spatial) == pytest.approx(math.sqrt(64 * 128))
    factor = rates.nchw_factor(conv_channels(spatial))
    assert onednn_conv_rate(spatial, rates, 4, nchw=True) == pytest.approx(
        (onednn_conv_rate(spatial, rates, 4) or 0) * factor
    )
    # A grouped convolution (its own kernel, not measured) keeps its price.
    grouped = _conv([3, 3], groups=64, product=[1, 9, 3136], flops=1e7, size=20)
    assert onednn_conv_rate(grouped, rates, 4, nchw=True) == onednn_conv_rate(grouped, rates, 4)

    def conv_part(b: BenchReport, channels_last: bool) -> float:
        wl = _resnet_like(16).model_copy(update={"channels_last": channels_last})
        return step_time(wl, here_rates(None, b, Precision.FP32)).parts["conv"]

    assert conv_part(measured, True) == pytest.approx(conv_part(bench, True))
    assert conv_part(measured, False) > 1.5 * conv_part(bench, False)
    assert any("conv2d_nchw rates" in a for a in rates.assumptions)
    # An unreliable figure is left out.
    shaky = [f.model_copy(update={"reliable": False}) for f in figures]
    unsure = bench.model_copy(update={"results": [*bench.results, *shaky]})
    assert not here_rates(None, unsure, Precision.FP32).nchw
