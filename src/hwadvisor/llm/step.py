"""One forward step of a served model, as an engine runs it on a device.

A step processes ``decode_seqs`` sequences that each generate one token (reading their KV
cache at ``context``) and ``prefill_tokens`` prompt tokens (a chunk, attending over
``prefill_context`` keys on average), all in one pass over the weights. Its time is the
sum of parts that run as separate kernels, each at its own bound:

- **weight products**: reading the weights a step touches plus their FLOPs on a GPU
  (near the ridge a GEMM waits for its tiles, then multiplies them: measured prefill and
  batched serving times follow the sum, not the longer of the two), the longer of the
  two on a CPU, whose prefetchers stream while its cores compute.
  The read runs at the bandwidth the engine's mat-vec kernels sustain: streaming
  (bandwidth x achieved fraction), or, at small batches, the engine's measured
  ceiling for the weight format (a kernel keeps a fixed number of bytes in flight, so
  past a point a faster memory does not make it faster: Little's law). Products run at
  the format's compute peak x the achieved GEMM fraction; an engine whose prompt path
  multiplies FP16 with FP16 accumulate (llama.cpp) at its share of the FP16-accumulate
  peak, twice the fp16 figure on GeForce parts (:func:`product_rate`).
- **dequantization** for engines that turn block formats into fp16 before a GEMM
  (llama.cpp's cuBLAS path): reading the blocks and writing fp16, once per pass.
- **attention**: the longer of reading the KV cache (x the engine's passes over it,
  :func:`kv_passes`: transformers copies a grouped cache out to every query head) and
  its FLOPs, which run in 16 bits whatever the weights are. Decode scores each key at
  ``arch.attention_flops_per_key`` (multi-head latent attention in its absorbed form,
  over the cached latent); a prompt at :func:`prefill_flops_per_key` (MLA expanded to
  per-head keys and values, as engines run prefill).
- **activations**: the memory-bound kernels between the products (norms, rotary
  embedding, the gated activation, residual adds) read and write each token's vectors.
- **fixed costs**: the kernels of every layer at the engine's launch cost on this class
  of GPU, the engine's per-step host work (scheduler, sampling, output processing), and,
  under tensor parallelism, two all-reduces per layer on the device's link.
"""

from __future__ import annotations

import math

from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.device import DeviceSpec
from hwadvisor.llm.engines import Engine
from hwadvisor.llm.formats import QuantFormat

#: Fixed cost of one small all-reduce among GPUs joined by NVLink or Infinity Fabric.
ALLREDUCE_LATENCY_S = 10e-6
#: ... and among GPUs that reach each other over PCIe only (through the host bridge).
ALLREDUCE_PCIE_LATENCY_S = 30e-6
ALLREDUCE_SOURCE = (
    "NCCL small-message all-reduce latency: ~10 us inside an NVLink node, several times "
    "that over PCIe (NVIDIA nccl-tests all_reduce_perf at 8 B-64 KB; assumed 10 and 30 us)"
)
#: Link rate when the device names none (PCIe 4.0 x16, 32 GB/s per direction).
DEFAULT_LINK_BYTES_S = 32e9
#: The share of a PCIe link's rate that NCCL's ring all-reduce reaches (bus bandwidth).
PCIE_ALLREDUCE_EFFICIENCY = 0.6
#: Network between nodes when the device names none (200 Gb/s InfiniBand per GPU), and
#: the fixed cost of one send between pipeline stages on it (assumed).
DEFAULT_NETWORK_BYTES_S = 25e9
PIPELINE_HOP_LATENCY_S = 20e-6
#: GPUs of this much bandwidth and memory are the HBM data-centre parts.
HBM_CLASS_BANDWIDTH = 1.5e12
HBM_CLASS_MEMORY = 40e9


def gpu_class(device: DeviceSpec) -> str:
    """The device class engine figures are kept by: ``hbm`` (data-centre GPUs of 1.5 TB/s
    and 40 GB or more: A100, H100, H200, B200, MI300X), ``gddr`` (other GPUs), or the
    device's kind (``cpu``, ``soc``)."""
    if device.kind != "gpu":
        return device.kind
    big = device.bandwidth_bytes_s >= HBM_CLASS_BANDWIDTH
    return "hbm" if big and device.memory_bytes >= HBM_CLASS_MEMORY else "gddr"


def kernel_family(fmt: QuantFormat) -> str:
    """The mat-vec kernel family a format runs in: fp8, 16bit, 8bit or 4bit."""
    if fmt.compute == "fp8":
        return "fp8"
    if fmt.bits_per_weight >= 16:
        return "16bit"
    return "8bit" if fmt.bits_per_weight >= 8 else "4bit"


def weight_bandwidth(engine: Engine, device: DeviceSpec, fmt: QuantFormat, tokens: float) -> float:
    """Bytes/s the engine reads weights at for a step of ``tokens`` tokens.

    Below ``engine.matvec_max_batch`` tokens the engine's mat-vec kernel for the format
    caps it at its measured ceiling; above, the products become GEMMs whose bytes in
    flight grow with the tokens, so the ceiling rises in proportion.
    """
    bandwidth = device.effective_bandwidth
    ceiling = engine.decode_ceiling_gb_s.get(kernel_family(fmt))
    if device.kind != "gpu" or not ceiling:
        return bandwidth
    scale = max(1.0, tokens / max(1, engine.matvec_max_batch))
    return min(bandwidth, ceiling * 1e9 * scale)


def product_rate(engine: Engine, device: DeviceSpec, fmt: QuantFormat, tokens: float) -> float:
    """FLOP/s the weight products of a step of ``tokens`` tokens run at, on one device.

    Normally the format's compute peak x the device's achieved fraction for it (FP4's own
    where measured, :meth:`DeviceSpec.product_fraction`). An engine
    whose prompt path multiplies FP16 with FP16 accumulate (llama.cpp's cuBLAS call,
    compute type 16F) runs above ``matvec_max_batch`` tokens on a GPU at its share of the
    FP16-accumulate peak, which GeForce parts run at twice their FP32-accumulate rate and
    professional and data-centre parts at the same rate; then at most the engine's
    measured ceiling for the GPU class.
    """
    peak, _ = device.flops(fmt.compute)
    rate = peak * device.product_fraction(fmt.compute)
    if device.kind != "gpu" or tokens <= engine.matvec_max_batch:
        return rate
    if engine.prefill_fp16_accumulate:
        fraction = engine.prefill_tensor_fraction or device.gemm_fraction
        rate = device.fp16_accumulate_rate() * fraction
    ceiling = engine.prefill_ceiling_tflops.get(gpu_class(device))
    return min(rate, ceiling * 1e12) if ceiling else rate


def activation_bytes_per_token(arch: LlmArch) -> float:
    """Bytes the memory-bound kernels of one token move, over all layers (16-bit).

    Per layer, in vectors of ``hidden`` (h), the KV width (kv) and the MLP width (i):
    two norms (read, write: 4h), the q/k/v outputs written and rotated (h + 2kv written,
    q and k read and written again: 2h + 2kv), attention's q read and output written
    (2h), two residual adds (read two, write one: 6h), the gate/up outputs written and
    the gated activation (2i written, 2i read, i written: 5i), the down output (h) and
    the products' inputs read (3h + i): 18h + 4kv + 6i values of 2 bytes.
    """
    inner = (arch.expert_intermediate or arch.intermediate) * arch.experts_per_token
    kv = arch.kv_heads * arch.head_dim
    return arch.layers * (18 * arch.hidden + 4 * kv + 6 * inner) * 2.0


def prefill_flops_per_key(arch: LlmArch) -> int:
    """FLOPs of QK^T and AV for one prompt token against one key, in one layer.

    Per-head attention: as in decode (:attr:`LlmArch.attention_flops_per_key`). MLA: the
    engines run a prompt in the compute-friendly form, the latent expanded to per-head
    keys of ``head_dim`` (nope + rope) and values of ``v_head_dim`` by ``kv_b_proj``,
    whose FLOPs the weight products count, then ordinary multi-head attention; decode
    uses the absorbed form over the latent (vLLM ``vllm/v1/attention/backends/mla/common.py``,
    module docstring: the compute-friendly approach for prefill, the data-movement
    friendly one for decode, after the DeepSeek-V2 paper, arXiv:2405.04434). For
    DeepSeek-V3 (128 heads, 192 + 128 wide) that is 2 x 128 x 320 = 81,920 FLOPs a key
    against the absorbed form's 2 x 128 x (2 x 512 + 64) = 278,528.
    """
    if not arch.is_mla:
        return arch.attention_flops_per_key
    return 2 * arch.heads * (arch.head_dim + (arch.v_head_dim or arch.head_dim))


def kv_passes(engine: Engine, arch: LlmArch) -> float:
    """Times a decode step moves each layer's KV cache, in units of the cache's bytes.

    The engine's ``kv_passes``; an engine that expands grouped-query attention's cache to
    every query head first (``repeat_kv``: ``g`` = heads / KV heads query heads share one)
    also reads the cache once and writes ``g`` copies, and its attention then reads the
    ``g`` copies instead of one: ``2 g`` passes more.
    """
    groups = arch.heads / max(1, arch.kv_heads)
    if not engine.repeat_kv or arch.is_mla or groups <= 1:
        return engine.kv_passes
    return engine.kv_passes + 2 * groups


def fixed_seconds(engine: Engine, device: DeviceSpec, arch: LlmArch) -> float:
    """Kernel launches of every layer plus the engine's per-step host work.

    A CPU runs each operator in the calling threads: no kernel launches to pay for.
    """
    if device.kind == "cpu":
        return engine.step_overhead_us * 1e-6
    kernel_us = engine.kernel_us_by_class.get(gpu_class(device), engine.kernel_us)
    launches = arch.layers * engine.small_kernels_per_layer * kernel_us
    return (launches + engine.step_overhead_us) * 1e-6


def allreduce_seconds(arch: LlmArch, device: DeviceSpec, tp: int, tokens: float) -> float:
    """Two ring all-reduces per layer of ``tokens`` x hidden 16-bit activations.

    Over NVLink the link's rate; over PCIe the share NCCL's ring reaches and a larger
    fixed cost per call, so tensor parallelism over PCIe is priced as slow as it runs.
    """
    if tp <= 1:
        return 0.0
    pcie = device.link_kind is None or device.link_kind.startswith("pcie")
    link = device.link_bytes_s or DEFAULT_LINK_BYTES_S
    rate = link * (PCIE_ALLREDUCE_EFFICIENCY if pcie else 1.0)
    latency = ALLREDUCE_PCIE_LATENCY_S if pcie else ALLREDUCE_LATENCY_S
    message = max(1.0, tokens) * arch.hidden * 2
    return 2 * arch.layers * (latency + 2 * (tp - 1) / tp * message / rate)


def experts_touched(arch: LlmArch, batch: float) -> float:
    """Mean distinct experts per layer that ``batch`` tokens route to (k of E each)."""
    if not arch.is_moe:
        return 1.0
    e, k = arch.experts, arch.experts_per_token
    return e * (1 - (1 - k / e) ** max(1.0, batch))


def forward_seconds(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    *,
    decode_seqs: float = 0.0,
    context: int = 1,
    prefill_tokens: float = 0.0,
    prefill_context: int = 1,
    tp: int = 1,
    kv_bytes_per_element: float = 2,
) -> tuple[float, str]:
    """Seconds of one step (see the module docstring), and whether the weight products
    were bound by ``memory`` or ``compute``. Per GPU of a tensor-parallel group of ``tp``.
    """
    tokens = max(1.0, decode_seqs + prefill_tokens)
    bandwidth = device.effective_bandwidth * tp
    weights = fmt.bytes_read_per_step(arch, experts_touched(arch, tokens))
    t_weights = weights / (weight_bandwidth(engine, device, fmt, tokens) * tp)
    rate = product_rate(engine, device, fmt, tokens) * tp
    body = 2 * arch.body_matrix_params()
    gemm = decode_seqs * (body + 2 * arch.lm_head_matrix_params) + prefill_tokens * body
    t_gemm = gemm / rate
    dequant = 0.0
    if engine.dequantize_for_prefill and fmt.block_quantized and tokens > engine.matvec_max_batch:
        params = arch.body_matrix_params(experts_touched(arch, tokens))
        dequant = params * (fmt.bits_per_weight / 8 + 2) / bandwidth
    attn_flops = arch.attention_flops_per_key * decode_seqs * arch.attention_span(
        max(1, context)
    ) + prefill_flops_per_key(arch) * prefill_tokens * arch.attention_span(max(1, prefill_context))
    peak16, _ = device.flops("bf16")
    kv = decode_seqs * arch.kv_cache_bytes(max(1, context), kv_bytes_per_element)
    t_attn = max(
        kv * kv_passes(engine, arch) / bandwidth, attn_flops / (peak16 * device.gemm_fraction * tp)
    )
    t_act = tokens * activation_bytes_per_token(arch) / bandwidth
    fixed = fixed_seconds(engine, device, arch) + allreduce_seconds(arch, device, tp, tokens)
    # A GPU's GEMM kernels near the ridge alternate between waiting for weight tiles and
    # multiplying them, so the two add; a CPU's prefetchers stream the next weights while
    # its cores compute, so there the longer one counts.
    products = max(t_weights, t_gemm) if device.kind != "gpu" else t_weights + t_gemm
    total = products + dequant + t_attn + t_act + fixed
    return total, "memory" if t_weights >= t_gemm else "compute"


def stage_arch(arch: LlmArch, pp: int) -> LlmArch:
    """The largest of ``pp`` pipeline stages: ceil(layers / pp) of the model's layers
    (the embedding and the lm_head stay with it: the first and last stages hold them)."""
    if pp <= 1:
        return arch
    layers = math.ceil(arch.layers / pp)
    sliding = arch.sliding_layers[:layers] if arch.sliding_layers else ()
    return arch.with_changes(layers=layers, sliding_layers=sliding)


def pipeline_hop_seconds(arch: LlmArch, device: DeviceSpec, tokens: float) -> float:
    """Sending ``tokens`` 16-bit hidden vectors from one pipeline stage (node) to the next."""
    network = device.network_bytes_s or DEFAULT_NETWORK_BYTES_S
    return PIPELINE_HOP_LATENCY_S + max(1.0, tokens) * arch.hidden * 2 / network
