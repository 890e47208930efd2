"""Which kernel PyTorch runs a float CPU convolution on: oneDNN, or its own.

``ConvParams::use_mkldnn`` (``aten/src/ATen/native/Convolution.cpp``, pytorch/pytorch
commit 954cecd1): a float CPU convolution goes to oneDNN when ``(is_strided() ||
is_dilated() || input.size(0) >= 16 || weight.size(-1) != 1 || weight.size(-2) != 1 ||
at::get_num_threads() > 1) && (groups > 1 || (weight.size(-1) > 3 && weight.size(-2) >
3) || input.size(0) > 1 || input.size(0)*input.size(1)*input.size(2)*input.size(3) >
20480)``, else to the native ``thnn_conv2d`` (``_slow_conv2d_forward`` / ``_backward``:
a matrix product per sample, per group). Both the time model (:mod:`.timing`) and the
CPU kernels' buffers (:mod:`.cpu_kernels`) follow it from here.
"""

from __future__ import annotations

from collections.abc import Sequence

#: The batch and input-size thresholds of the rule.
NATIVE_CONV_BATCH = 16
NATIVE_CONV_INPUT = 20480


def native_path(
    *,
    kernel: Sequence[int],
    stride: Sequence[int],
    dilation: Sequence[int],
    groups: int,
    batch: int,
    input_elements: int,
    threads: int,
    transposed: bool = False,
) -> bool:
    """Whether PyTorch runs this fp32 CPU convolution on its native path, not oneDNN.

    ``input_elements`` is one sample's; 1-D convolutions are viewed as 2-D with a
    kernel of height 1. Transposed and 3-D convolutions are left to oneDNN (the rule
    is not modelled for them)."""
    if transposed or not 1 <= len(kernel) <= 2:
        return False
    kh, kw = (int(kernel[0]), int(kernel[1])) if len(kernel) == 2 else (1, int(kernel[0]))
    strided = any(int(s) != 1 for s in stride)
    dilated = any(int(d) != 1 for d in dilation)
    first = strided or dilated or batch >= NATIVE_CONV_BATCH or kw != 1 or kh != 1 or threads > 1
    second = (
        groups > 1 or (kw > 3 and kh > 3) or batch > 1 or batch * input_elements > NATIVE_CONV_INPUT
    )
    return not (first and second)
