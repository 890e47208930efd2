"""Serving speed: prefill and decode tokens/s, time to first token, tokens/s at a concurrency.

Physics, per forward step on one device (or a tensor-parallel group of ``tp``):

- **prefill** is compute-bound: ``arch.prefill_flops`` (2 x active matrix parameters per
  token + causal attention) at peak x achieved GEMM fraction, never faster than reading
  the weights once per micro-batch; engines that dequantize block formats to fp16 before
  a GEMM (llama.cpp's cuBLAS path) also pay reading the blocks and writing fp16 once per
  micro-batch; plus the engine's small-kernel overhead per pass.
- **decode** reads, per step, the weights a token uses (routed experts, the lm_head) and
  the KV cache of every sequence at its current context, at bandwidth x achieved fraction
  (compute-bound instead once the batch is large), plus layers x small kernels x their
  fixed cost. At a concurrency of B the weights are read once for all B sequences, so
  aggregate tokens/s grows until the step becomes compute-bound. A mixture of experts
  touches E x (1 - (1 - k/E)^B) experts per layer at batch B.
- **tensor parallel** divides bytes and FLOPs by tp and adds two all-reduces per layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.errors import UsageError
from hwadvisor.llm.arch import LlmArch
from hwadvisor.llm.device import DeviceSpec
from hwadvisor.llm.engines import Engine
from hwadvisor.llm.fit import MemoryFit, memory_fit
from hwadvisor.llm.formats import QuantFormat
from hwadvisor.llm.step import (
    experts_touched,
    forward_seconds,
    pipeline_hop_seconds,
    stage_arch,
)

__all__ = [
    "CurvePoint",
    "ServingEstimate",
    "ServingRequest",
    "batching_curve",
    "decode_step_seconds",
    "estimate_serving",
    "experts_touched",
    "largest_meeting",
    "max_fitting_concurrency",
    "mixed_step_seconds",
    "prefill_seconds",
]


@dataclass(frozen=True)
class ServingRequest:
    """What is served: prompt and output lengths, the context reserved, the concurrency."""

    prompt_tokens: int = 512
    output_tokens: int = 128
    context: int = 4096
    concurrency: int = 1
    kv_bytes_per_element: float = 2

    def __post_init__(self) -> None:
        """Refuse lengths and counts that cannot be served (one UsageError line)."""
        if self.context <= 0:
            raise UsageError(f"--context must be a positive number of tokens, got {self.context}")
        if self.prompt_tokens < 0 or self.output_tokens < 0:
            raise UsageError("--prompt-tokens and --output-tokens must not be negative")
        if self.concurrency <= 0:
            raise UsageError(f"--concurrency must be at least 1, got {self.concurrency}")
        if self.prompt_tokens + self.output_tokens > self.context:
            raise UsageError(
                f"prompt ({self.prompt_tokens}) + output ({self.output_tokens}) tokens exceed "
                f"the context of {self.context}"
            )

    @property
    def decode_context(self) -> int:
        """The mean context while the output is generated: prompt + output / 2."""
        return max(1, self.prompt_tokens + self.output_tokens // 2)


@dataclass(frozen=True)
class ServingEstimate:
    """Speed and memory of serving one model on one device (or a tensor-parallel group)."""

    prefill_tokens_per_s: float
    decode_tokens_per_s: float
    aggregate_tokens_per_s: float
    ttft_s: float
    requests_per_s: float
    kv_cache_bytes_per_token: float
    max_concurrency: int
    decode_bound: str  # "memory" or "compute"
    memory: MemoryFit
    compute_type: str
    assumptions: tuple[str, ...] = field(default=())


def prefill_seconds(
    arch: LlmArch, fmt: QuantFormat, engine: Engine, device: DeviceSpec, tokens: int, tp: int = 1
) -> float:
    """Seconds to process a prompt of ``tokens``: one forward pass per micro-batch, each
    attending over the keys before it."""
    tokens = max(1, tokens)
    passes = engine.passes(tokens)
    per_pass = -(-tokens // passes)
    total = 0.0
    for i in range(passes):
        chunk = min(per_pass, tokens - i * per_pass)
        seconds, _ = forward_seconds(
            arch,
            fmt,
            engine,
            device,
            prefill_tokens=chunk,
            prefill_context=i * per_pass + max(1, chunk // 2),
            tp=tp,
        )
        total += seconds
    return total


def decode_step_seconds(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    *,
    context: int,
    batch: int = 1,
    tp: int = 1,
    kv_bytes_per_element: float = 2,
) -> tuple[float, str]:
    """Seconds of one decode step of ``batch`` sequences at ``context``, and its bound."""
    return forward_seconds(
        arch,
        fmt,
        engine,
        device,
        decode_seqs=batch,
        context=context,
        tp=tp,
        kv_bytes_per_element=kv_bytes_per_element,
    )


def estimate_serving(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    request: ServingRequest | None = None,
    *,
    tp: int = 1,
) -> ServingEstimate:
    """Tokens/s, time to first token, requests/s and the memory fit of serving ``arch``."""
    req = request or ServingRequest()
    kvb = req.kv_bytes_per_element
    prompt = req.prompt_tokens or 1
    prefill = prefill_seconds(arch, fmt, engine, device, prompt, tp)
    ctx = req.decode_context
    one, _ = decode_step_seconds(
        arch, fmt, engine, device, context=ctx, tp=tp, kv_bytes_per_element=kvb
    )
    step, bound = decode_step_seconds(
        arch,
        fmt,
        engine,
        device,
        context=ctx,
        batch=req.concurrency,
        tp=tp,
        kv_bytes_per_element=kvb,
    )
    fit = memory_fit(
        arch,
        fmt,
        engine,
        device,
        context=req.context,
        concurrency=req.concurrency,
        prompt_tokens=req.prompt_tokens,
        tp=tp,
        kv_bytes_per_element=kvb,
    )
    b = req.concurrency
    per_batch = b * prefill + req.output_tokens * step
    _, compute_type = device.flops(fmt.compute)
    return ServingEstimate(
        prefill_tokens_per_s=prompt / prefill,
        decode_tokens_per_s=1 / one,
        aggregate_tokens_per_s=b / step,
        ttft_s=prefill,
        requests_per_s=b / per_batch if per_batch > 0 else 0.0,
        kv_cache_bytes_per_token=arch.kv_bytes_per_token(req.context, kvb),
        max_concurrency=fit.max_concurrency,
        decode_bound=bound,
        memory=fit,
        compute_type=compute_type,
        assumptions=_assumptions(arch, fmt, engine, device, req, compute_type),
    )


def _assumptions(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    req: ServingRequest,
    compute: str,
) -> tuple[str, ...]:
    notes = [
        f"weights in {fmt.id} ({fmt.bits_per_weight:g} bits per weight; {fmt.source})",
        f"decode at the mean context {req.decode_context} (prompt {req.prompt_tokens} + half of "
        f"{req.output_tokens} output tokens); KV cache {req.kv_bytes_per_element:g} bytes per element",
        f"engine {engine.id}: {engine.small_kernels_per_layer} small kernels per layer at "
        f"{engine.kernel_us:g} us, memory utilization {engine.memory_utilization:g}",
        f"bandwidth x {device.memory_fraction:g} and GEMM at "
        f"{device.product_fraction(compute):g} of the {compute} peak ({device.source})",
    ]
    if arch.is_moe:
        notes.append(
            f"mixture of experts: speed priced on {arch.params_active / 1e9:.1f} B active "
            f"parameters, memory holds all {arch.params_total / 1e9:.1f} B"
        )
    if compute != fmt.compute:
        notes.append(f"{device.name} has no {fmt.compute} peak: {compute} used")
    if device.kind == "cpu":
        notes.append("CPU: operators run in the calling threads, no kernel launch overhead")
    return tuple(notes)


# -- under load: continuous batching ------------------------------------------------------


@dataclass(frozen=True)
class CurvePoint:
    """One concurrency of a continuous-batching curve (per tensor-parallel group).

    ``aggregate_tokens_s`` counts generated tokens of all sequences; ``ttft_s`` is the
    time from a request's admission to its first token; ``itl_s`` the mean time between a
    sequence's tokens (a decode step, with the prefill chunks mixed into it); ``requests_s``
    the completed requests per second with ``concurrency`` always in flight; ``fits`` is
    True when the KV cache of that many sequences of the context fits the memory budget.
    """

    concurrency: int
    aggregate_tokens_s: float
    ttft_s: float
    itl_s: float
    requests_s: float
    fits: bool


def mixed_step_seconds(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    *,
    decode_seqs: float,
    context: int,
    prefill_tokens: float = 0.0,
    prefill_context: int = 0,
    tp: int = 1,
    kv_bytes_per_element: float = 2,
) -> float:
    """Seconds of one engine step that decodes ``decode_seqs`` sequences at ``context``
    and processes ``prefill_tokens`` prompt tokens (a chunk) in the same forward pass:
    one read of the weights serves both (:func:`hwadvisor.llm.step.forward_seconds`)."""
    seconds, _ = forward_seconds(
        arch,
        fmt,
        engine,
        device,
        decode_seqs=decode_seqs,
        context=context,
        prefill_tokens=prefill_tokens,
        prefill_context=max(1, prefill_context),
        tp=tp,
        kv_bytes_per_element=kv_bytes_per_element,
    )
    return seconds


def _curve_point(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    req: ServingRequest,
    concurrency: int,
    tp: int,
    fits: bool,
) -> CurvePoint:
    """Steady state of ``concurrency`` requests always in flight (closed loop)."""
    c, p, o = concurrency, max(1, req.prompt_tokens), max(1, req.output_tokens)
    kvb = req.kv_bytes_per_element
    ctx = req.decode_context
    if engine.chunked_prefill:
        cycle, steps, ttft = _chunked_cycle(arch, fmt, engine, device, req, c, tp)
        itl = cycle / steps
    else:
        # Prefill runs as its own forward passes that stall every decoding sequence.
        prefill = prefill_seconds(arch, fmt, engine, device, p, tp)
        step, _ = decode_step_seconds(
            arch, fmt, engine, device, context=ctx, batch=c, tp=tp, kv_bytes_per_element=kvb
        )
        cycle = o * step + c * prefill
        ttft = prefill + step
        itl = cycle / o
    return CurvePoint(
        concurrency=c,
        aggregate_tokens_s=c * o / cycle,
        ttft_s=ttft,
        itl_s=itl,
        requests_s=c / cycle,
        fits=fits,
    )


def _chunked_cycle(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    req: ServingRequest,
    c: int,
    tp: int,
) -> tuple[float, float, float]:
    """One cycle (every one of ``c`` requests served once) under chunked prefill: its
    seconds, its steps and the TTFT of a request.

    Each step decodes the running sequences first, then spends the rest of the token
    budget on one prompt's chunk. A request lives o + n_chunks steps; c x n_chunks of
    those carry a chunk. When the prompts outgrow that (c x n_chunks > the steps), every
    step is full: the budget shared between decodes and chunks.
    """
    p, o = max(1, req.prompt_tokens), max(1, req.output_tokens)
    budget = engine.micro_batch or (p + c)
    kvb, ctx = req.kv_bytes_per_element, req.decode_context
    room = max(1, budget - (c - 1))
    chunk = min(p, room)
    n_chunks = -(-p // chunk)

    def step(decoding: float, prefill: float) -> float:
        return mixed_step_seconds(
            arch,
            fmt,
            engine,
            device,
            decode_seqs=decoding,
            context=ctx,
            prefill_tokens=prefill,
            prefill_context=p // 2,
            tp=tp,
            kv_bytes_per_element=kvb,
        )

    t_chunk = step(c - 1, chunk)
    steps = float(o + n_chunks)
    if c * n_chunks <= steps:
        plain = steps - c * n_chunks
        cycle = c * n_chunks * t_chunk + plain * step(c * o / steps, 0.0)
    else:
        steps = max(steps, c * (p + o) / budget)
        decoding = c * o / steps
        cycle = steps * step(decoding, min(c * p / steps, max(0.0, budget - decoding)))
    return cycle, steps, n_chunks * t_chunk


def default_concurrencies(limit: int) -> tuple[int, ...]:
    """1, 2, 4, ... up to ``limit``, with ``limit`` itself last."""
    out, c = [], 1
    while c < limit:
        out.append(c)
        c *= 2
    out.append(max(1, limit))
    return tuple(out)


def batching_curve(
    arch: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    request: ServingRequest | None = None,
    *,
    tp: int = 1,
    pp: int = 1,
    concurrencies: tuple[int, ...] | None = None,
) -> tuple[CurvePoint, ...]:
    """The continuous-batching curve of serving ``arch`` on ``tp`` GPUs of ``device``.

    Inputs: the model's shape, its weight format, the engine, one device of the group,
    ``request`` (prompt and output tokens, the context each sequence reserves and the KV
    bytes per element; its ``concurrency`` is ignored) and ``concurrencies`` to evaluate
    (default 1, 2, 4, ... up to the most sequences the memory holds, that number last;
    at least 1). Output: one :class:`CurvePoint` per concurrency, in order, each with the
    aggregate generated tokens/s, TTFT, inter-token latency and requests/s of that many
    requests always in flight, and whether their KV cache fits. Figures are per group of
    ``tp`` x ``pp`` GPUs; divide requests_s by tp x pp for a per-GPU rate. With ``pp`` > 1
    the model is split into pipeline stages (one node each, tensor parallel ``tp`` inside):
    each GPU holds ceil(layers / pp) layers and their KV cache, a stage time prices those
    layers, and tokens cross the network between nodes.

    Engines with chunked prefill (vLLM, SGLang, TensorRT-LLM) mix prompt chunks into decode
    steps up to their token budget; the others (llama.cpp, transformers) stall decoding
    while a prompt is processed.
    """
    req = request or ServingRequest()
    if pp < 1 or tp < 1:
        raise UsageError("tensor- and pipeline-parallel sizes must be at least 1")
    stage = stage_arch(arch, pp)
    fit = memory_fit(
        stage,
        fmt,
        engine,
        device,
        context=req.context,
        prompt_tokens=req.prompt_tokens,
        tp=tp,
        kv_bytes_per_element=req.kv_bytes_per_element,
    )
    limit = fit.max_concurrency
    if engine.max_sequences:
        limit = min(limit, engine.max_sequences)
    points = concurrencies or default_concurrencies(max(1, limit))
    if any(c <= 0 for c in points):
        raise UsageError("every concurrency must be at least 1")
    return tuple(
        _pipelined_point(stage, fmt, engine, device, req, c, tp, pp, limit) for c in points
    )


def _pipelined_point(
    stage: LlmArch,
    fmt: QuantFormat,
    engine: Engine,
    device: DeviceSpec,
    req: ServingRequest,
    c: int,
    tp: int,
    pp: int,
    limit: int,
) -> CurvePoint:
    """``c`` sequences over ``pp`` stages: ``pp`` micro-batches of c / pp keep every stage
    busy, so the pipeline completes one micro-batch's tokens per stage time; a token waits
    for all ``pp`` stages and the hops between them."""
    fits = 0 < c <= limit
    if pp == 1:
        return _curve_point(stage, fmt, engine, device, req, c, tp, fits)
    micro = max(1, -(-c // pp))
    point = _curve_point(stage, fmt, engine, device, req, micro, tp, fits)
    hops = (pp - 1) * pipeline_hop_seconds(stage, device, micro)
    prompt_hops = (pp - 1) * pipeline_hop_seconds(stage, device, max(1, req.prompt_tokens))
    return CurvePoint(
        concurrency=c,
        aggregate_tokens_s=point.aggregate_tokens_s * c / (micro * pp),
        ttft_s=point.ttft_s * pp + prompt_hops,
        itl_s=point.itl_s * pp + hops,
        requests_s=point.requests_s * c / (micro * pp),
        fits=fits,
    )


def max_fitting_concurrency(curve: tuple[CurvePoint, ...]) -> CurvePoint | None:
    """The point of highest concurrency whose KV cache fits memory (None: none fits).

    This is the ``--max-throughput`` operating point: the engines' own throughput
    benchmarks run as many sequences as the memory holds.
    """
    fitting = [p for p in curve if p.fits]
    return max(fitting, key=lambda p: p.concurrency) if fitting else None


def largest_meeting(
    curve: tuple[CurvePoint, ...],
    *,
    ttft_s: float | None = None,
    itl_s: float | None = None,
) -> CurvePoint | None:
    """The point of highest concurrency that fits memory and meets both targets (None
    when no point does). A target left as None is not checked."""
    ok = [
        p
        for p in curve
        if p.fits and (ttft_s is None or p.ttft_s <= ttft_s) and (itl_s is None or p.itl_s <= itl_s)
    ]
    return max(ok, key=lambda p: p.concurrency) if ok else None
