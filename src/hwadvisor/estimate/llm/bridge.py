"""From a language-model workload and one device to :mod:`hwadvisor.llm`, and back.

:func:`llm_estimate` prices the workload on one
:class:`~hwadvisor.estimate.llm.target.LlmDevice`: serving (tokens/s, time to first token,
KV cache, the memory fit with tensor-parallel shards over ``--gpus``, lighter formats
when it does not fit) or fine-tuning (:mod:`hwadvisor.estimate.llm.finetune`).
"""

from __future__ import annotations

from dataclasses import dataclass

from hwadvisor.errors import UsageError
from hwadvisor.estimate.llm.finetune import finetune_estimate
from hwadvisor.estimate.llm.target import LlmDevice
from hwadvisor.estimate.timing.bands import with_bands
from hwadvisor.estimate.timing.scaling import total_time
from hwadvisor.estimate.workload.llm import serving_request
from hwadvisor.estimate.workload.llm_shape import arch_of
from hwadvisor.llm import (
    Engine,
    LlmArch,
    MemoryFit,
    QuantFormat,
    default_engine,
    default_format,
    estimate_serving,
    find_engine,
    find_format,
    memory_fit,
    smallest_fit,
)
from hwadvisor.llm.device import DeviceSpec
from hwadvisor.llm.fit import TP_SIZES
from hwadvisor.llm.serving import (
    CurvePoint,
    batching_curve,
    largest_meeting,
    max_fitting_concurrency,
)
from hwadvisor.models.estimate import DeviceEstimate, MemoryBreakdown, MemoryFix
from hwadvisor.models.llm import BatchingPoint, ServingFigures, ServingOption
from hwadvisor.models.workload import Task, Workload

#: Lighter weight formats each engine class serves, most bits first (what to suggest
#: when a model does not fit): GGUF for llama.cpp; FP8 and AWQ for vLLM (its fp8 and
#: awq quantization options); FP8 and AWQ for SGLang (--quantization fp8 / awq) and
#: TensorRT-LLM (ModelOpt FP8, INT4 AWQ); bitsandbytes INT8 and NF4 for transformers.
ENGINE_FORMATS = {
    "llama.cpp": ("q8_0", "q4_k_m", "q4_0"),
    "vllm": ("fp8", "awq"),
    "sglang": ("fp8", "awq"),
    "tensorrt-llm": ("fp8", "awq"),
    "transformers": ("int8", "nf4"),
}


def llm_estimate(wl: Workload, target: LlmDevice) -> DeviceEstimate:
    """The serving or fine-tuning estimate of ``wl`` on ``target``."""
    if wl.llm is None:
        raise UsageError(f"--task {wl.task.value} needs a language model's shape")
    if wl.task in (Task.FINETUNE, Task.TRAIN):
        return finetune_estimate(wl, target)
    return serve_estimate(wl, target)


def serving_format(wl: Workload, arch: LlmArch) -> tuple[QuantFormat, str]:
    """The weight format served, and the assumption that says where it came from.

    ``--quant`` when given; else the checkpoint's own format (its quantization_config,
    else its dtype), at the exact bytes of its weight files when those were read.
    """
    if wl.quant is not None:
        return find_format(wl.quant.value), f"weights in {wl.quant.value} (--quant)"
    fmt = default_format(arch)
    shape = wl.llm
    if shape is not None and shape.weight_file_bytes and shape.params_total:
        bpw = shape.weight_file_bytes * 8 / shape.params_total
        exact = fmt.model_copy(
            update={"bits_per_weight": bpw, "embedding_bits": None, "head_bits": None}
        )
        return exact, (
            f"weights as stored: {shape.weight_file_bytes:,} bytes in the weight files "
            f"({bpw:.2f} bits per parameter), computed as {fmt.compute}"
        )
    return fmt, f"weights in {fmt.id}, the checkpoint's own format (give --quant to change it)"


def _tp(arch: LlmArch, gpus: int, notes: list[str]) -> tuple[int, int]:
    """Tensor-parallel size (a power of two dividing the heads) and replicas over ``gpus``."""
    tp = max((t for t in TP_SIZES if t <= gpus and arch.heads % t == 0), default=1)
    replicas = max(1, gpus // tp)
    if gpus > 1:
        notes.append(
            f"{gpus} GPUs: tensor parallel over {tp}"
            + (f", {replicas} replicas" if replicas > 1 else "")
            + (f", {gpus - tp * replicas} idle" if gpus - tp * replicas else "")
        )
    return tp, replicas


def _sizes(wl: Workload) -> dict[str, int]:
    """What the memory fit reads of the request: context, concurrency, prompt."""
    return {"context": wl.context, "concurrency": wl.concurrency, "prompt_tokens": wl.prompt_tokens}


def _option(
    arch: LlmArch, fmt: QuantFormat, engine: Engine, target: LlmDevice, wl: Workload, tp: int
) -> ServingOption:
    """One alternative priced: its memory fit and, when the device's speed is known, tokens/s."""
    assert target.memory is not None
    fit = memory_fit(arch, fmt, engine, target.memory, tp=tp, **_sizes(wl))
    decode = aggregate = None
    if target.spec is not None:
        est = estimate_serving(arch, fmt, engine, target.spec, serving_request(wl), tp=tp)
        decode, aggregate = est.decode_tokens_per_s, est.aggregate_tokens_per_s
    return ServingOption(
        quant=fmt.id,
        engine=engine.id,
        tp=tp,
        weights_bytes=int(fit.weights_bytes),
        memory_bytes=int(fit.total_bytes),
        fits=fit.fits,
        decode_tokens_per_s=decode,
        aggregate_tokens_per_s=aggregate,
        max_concurrency=fit.max_concurrency,
    )


def _format_that_fits(
    arch: LlmArch,
    fmt: QuantFormat,
    note: str,
    engine: Engine,
    target: LlmDevice,
    wl: Workload,
    tp: int,
) -> tuple[QuantFormat, str]:
    """Sizing a deployment (--qps, --max-throughput) with no --quant: the checkpoint's
    format when one sequence fits, else the engine's first lighter format that does, as
    an operator serving it there would quantize it (vLLM's fp8, say)."""
    assert target.memory is not None
    one = {**_sizes(wl), "concurrency": 1}
    if memory_fit(arch, fmt, engine, target.memory, tp=tp, **one).fits:
        return fmt, note
    for q in ENGINE_FORMATS.get(engine.id, ()):
        lighter = find_format(q)
        if lighter.bits_per_weight >= fmt.bits_per_weight:
            continue
        if memory_fit(arch, lighter, engine, target.memory, tp=tp, **one).fits:
            return lighter, (
                f"weights in {lighter.id}: the checkpoint's {fmt.id} does not fit one "
                f"sequence here, so the deployment is sized as served in {lighter.id} "
                "(give --quant to fix the format)"
            )
    return fmt, note


def serving_options(
    arch: LlmArch, fmt: QuantFormat, engine: Engine, target: LlmDevice, wl: Workload, tp: int
) -> list[ServingOption]:
    """Lighter formats of the engine, most bits first, then (one GPU) the fewest GPUs."""
    out = [
        _option(arch, find_format(q), engine, target, wl, tp)
        for q in ENGINE_FORMATS.get(engine.id, ())
        if find_format(q).bits_per_weight < fmt.bits_per_weight
    ]
    if target.gpu and tp == 1 and target.memory is not None:
        more = smallest_fit(arch, fmt, engine, target.memory, **_sizes(wl))
        if more is not None and more.tp > 1:
            out.append(_option(arch, fmt, engine, target, wl, more.tp))
    return out


def _fix_text(o: ServingOption) -> str:
    if o.tp > 1:
        return f"tensor-parallel shards over {o.tp} GPUs ({o.quant})"
    return f"{o.quant} weights ({find_format(o.quant).bits_per_weight:g} bits per weight)"


def serve_estimate(wl: Workload, target: LlmDevice) -> DeviceEstimate:
    """Serving ``wl`` on ``target``: tokens/s, time to first token, KV cache and the fit."""
    assert wl.llm is not None
    arch = arch_of(wl.llm)
    fmt, fmt_note = serving_format(wl, arch)
    engine = find_engine(wl.engine.value) if wl.engine else default_engine(target.kind, fmt.id)
    notes = [*wl.assumptions, *target.notes, fmt_note]
    tp, replicas = _tp(arch, target.gpus, notes)
    est = None
    chosen: Chosen | None = None
    if wl.concurrency_auto and wl.quant is None and target.memory is not None:
        fmt, fmt_note = _format_that_fits(arch, fmt, fmt_note, engine, target, wl, tp)
    if target.spec is not None and wl.concurrency_auto:
        chosen = choose_concurrency(wl, arch, fmt, engine, target.spec, tp)
        if chosen is not None:
            wl = wl.model_copy(update={"concurrency": chosen.point.concurrency})
    if target.spec is not None:
        est = estimate_serving(arch, fmt, engine, target.spec, serving_request(wl), tp=tp)
        notes += [n for n in est.assumptions if not n.startswith("weights in ")]
        fit = est.memory
    elif target.memory is not None:
        fit = memory_fit(arch, fmt, engine, target.memory, tp=tp, **_sizes(wl))
    else:
        notes.append("memory of this machine unknown: fit unknown")
        return DeviceEstimate(
            device=target.device,
            name=target.name,
            gpus=target.gpus,
            basis=target.basis,
            assumptions=notes,
        )
    options = [] if fit.fits else serving_options(arch, fmt, engine, target, wl, tp)
    notes.append(
        f"fits within {fit.budget_bytes / 1e9:.1f} GB per {'GPU' if target.gpu else 'device'} "
        f"(usable memory x {engine.id}'s memory utilization {engine.memory_utilization:g})"
        if fit.fits
        else f"does not fit within {fit.budget_bytes / 1e9:.1f} GB per "
        f"{'GPU' if target.gpu else 'device'} at {wl.concurrency} sequence(s) of {wl.context} tokens"
    )
    figures = ServingFigures(
        engine=engine.id,
        quant=fmt.id,
        tp=tp,
        replicas=replicas,
        prefill_tokens_per_s=est.prefill_tokens_per_s if est else None,
        decode_tokens_per_s=est.decode_tokens_per_s if est else None,
        aggregate_tokens_per_s=est.aggregate_tokens_per_s * replicas if est else None,
        ttft_s=est.ttft_s if est else None,
        requests_per_s=est.requests_per_s * replicas if est else None,
        kv_cache_bytes_per_token=arch.kv_bytes_per_token(wl.context),
        kv_cache_bytes=int(fit.kv_bytes),
        max_concurrency=fit.max_concurrency,
        memory_budget_bytes=int(fit.budget_bytes),
        decode_bound=est.decode_bound if est else None,
        compute_type=est.compute_type if est else None,
        options=options,
        concurrency=wl.concurrency,
        concurrency_chosen=chosen.why if chosen else None,
        itl_s=1.0 / est.decode_tokens_per_s if est and est.decode_tokens_per_s else None,
        requests_per_s_per_gpu=est.requests_per_s / tp if est and est.requests_per_s else None,
        curve=chosen.curve if chosen else [],
    )
    if chosen is not None:
        notes.append(chosen.why)
    return _device_estimate(wl, target, fit, figures, notes)


@dataclass(frozen=True)
class Chosen:
    """The concurrency continuous batching runs at on one device, why, and its curve."""

    point: CurvePoint
    why: str
    curve: list[BatchingPoint]


def choose_concurrency(
    wl: Workload, arch: LlmArch, fmt: QuantFormat, engine: Engine, spec: DeviceSpec, tp: int
) -> Chosen | None:
    """The most sequences that fit the memory and, with ``--latency-ms``, give the first
    token within it (None: not even one fits). Engines batch every request in flight up
    to what the KV cache holds (vLLM's scheduler, SGLang's, TensorRT-LLM's in-flight
    batching); a QPS is then met with replicas."""
    req = serving_request(wl)
    curve = batching_curve(arch, fmt, engine, spec, req, tp=tp)
    top = max_fitting_concurrency(curve)
    if top is None:
        return None
    points = [
        BatchingPoint(
            concurrency=p.concurrency,
            aggregate_tokens_per_s=p.aggregate_tokens_s,
            ttft_s=p.ttft_s,
            itl_s=p.itl_s,
            requests_per_s=p.requests_s,
            fits=p.fits,
        )
        for p in curve
    ]
    if wl.latency_ms is None:
        why = f"{top.concurrency} sequences at a time: the most the memory holds"
        return Chosen(top, why, points)
    ok = largest_meeting(curve, ttft_s=wl.latency_ms / 1000.0)
    if ok is None:
        why = f"1 sequence at a time: even alone the first token misses {wl.latency_ms:g} ms"
        return Chosen(curve[0], why, points)
    why = (
        f"{ok.concurrency} sequences at a time: the most that fit the memory and give the "
        f"first token within {wl.latency_ms:g} ms"
    )
    return Chosen(ok, why, points)


def _device_estimate(
    wl: Workload, target: LlmDevice, fit: MemoryFit, figures: ServingFigures, notes: list[str]
) -> DeviceEstimate:
    rps = figures.requests_per_s
    step = wl.concurrency * figures.replicas / rps if rps else None
    parts: dict[str, float] = {}
    if figures.ttft_s is not None and figures.aggregate_tokens_per_s:
        per_step = wl.concurrency * figures.replicas / figures.aggregate_tokens_per_s
        parts = {"prefill": wl.concurrency * figures.ttft_s, "decode": wl.output_tokens * per_step}
    memory = MemoryBreakdown(
        weights_bytes=int(fit.weights_bytes),
        activations_bytes=int(fit.activation_bytes),
        kv_cache_bytes=int(fit.kv_bytes),
        runtime_bytes=int(fit.runtime_bytes + fit.comm_bytes),
        total_bytes=int(fit.total_bytes),
    )
    est = DeviceEstimate(
        device=target.device,
        name=target.name,
        gpus=target.gpus,
        step_time_s=step,
        total_time_s=total_time(wl, step, wl.concurrency * figures.replicas),
        throughput_samples_s=rps,
        memory_bytes=int(fit.total_bytes),
        device_memory_bytes=target.device_memory_bytes,
        fits=fit.fits,
        memory=memory,
        fixes=[
            MemoryFix(fix=_fix_text(o), memory_bytes=o.memory_bytes, fits=o.fits)
            for o in figures.options
        ],
        basis=target.basis,
        assumptions=notes,
        time_breakdown_s=parts,
        serving=figures,
    )
    # The decode band was validated on GPUs (llama.cpp); this CPU without a bench has the
    # theoretical class's band, validated with llama.cpp CPU decode among its rows.
    band = "llm_decode" if target.gpu else target.band_class
    return with_bands(est, band) if band else est
