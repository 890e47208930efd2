"""From a language-model workload and one device to :mod:`hwadvisor.llm`, and back.

:func:`llm_estimate` prices the workload on one
:class:`~hwadvisor.estimate.llm.target.LlmDevice`: serving (tokens/s, time to first token,
KV cache, the memory fit with tensor-parallel shards over ``--gpus``, lighter formats
when it does not fit) or fine-tuning (:mod:`hwadvisor.estimate.llm.finetune`).
"""

from __future__ import annotations

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
from hwadvisor.llm.fit import TP_SIZES
from hwadvisor.models.estimate import DeviceEstimate, MemoryBreakdown, MemoryFix
from hwadvisor.models.llm import ServingFigures, ServingOption
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
    )
    return _device_estimate(wl, target, fit, figures, notes)


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
