"""Language-model workloads: serving (``--task serve``) and fine-tuning (``--task finetune``),
each default used stated, and the training or inference of one read from its files."""

from __future__ import annotations

from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.llm_shape import arch_of
from hwadvisor.estimate.workload.profile import analytic_profile
from hwadvisor.llm import ServingRequest
from hwadvisor.models.workload import (
    LLM_OPTIONS,
    OPTIONS,
    FinetuneMethod,
    LlmShape,
    ModelKind,
    Precision,
    Task,
    Workload,
    checked_workload,
)

#: Tokens per fine-tuning sequence when --seq-len is not given (assumed; the llm
#: package's FinetuneRequest default, a common supervised fine-tuning length).
FINETUNE_SEQ_LEN = 2048
#: The options that matter to each language-model task (the others are noted as ignored).
_SERVE_OPTIONS = {"quant", "context", "prompt_tokens", "output_tokens", "concurrency", "engine"}
_FINETUNE_OPTIONS = {
    "method",
    "lora_rank",
    "lora_targets",
    "checkpointing",
    "framework",
    "strategy",
    "offload",
}


def ignored_note(said: set[str], task: Task) -> str:
    """The assumption naming options given that the task does not use."""
    names = ", ".join(OPTIONS[k] for k in sorted(said))
    return f"{names} ignored: they apply to --task serve or finetune, not {task.value}"


def serving_request(wl: Workload) -> ServingRequest:
    """The serving request of ``wl``; a prompt and output that cannot fit the context is
    one UsageError line."""
    return ServingRequest(
        prompt_tokens=wl.prompt_tokens,
        output_tokens=wl.output_tokens,
        context=wl.context,
        concurrency=wl.concurrency,
    )


def _origin_note(shape: LlmShape) -> str:
    where = {
        "catalog": "the catalog",
        "config": "its config.json",
        "gguf": "the GGUF file's metadata",
        "hub": "its config.json in the Hugging Face cache",
    }.get(shape.origin, shape.origin)
    moe = (
        f"; mixture of {shape.experts} experts, {shape.experts_per_token} per token: "
        f"{shape.params_active / 1e9:.1f} B active of {shape.params_total / 1e9:.1f} B"
        if shape.experts > 1
        else ""
    )
    return (
        f"shape of {shape.name} from {where}: {shape.layers} layers, hidden {shape.hidden}, "
        f"{shape.heads} heads, {shape.kv_heads} KV heads of {shape.head_dim}{moe} ({shape.source})"
    )


def _serve_fields(
    shape: LlmShape, given: Workload, notes: list[str], batch_given: bool
) -> dict[str, Any]:
    arch = arch_of(shape)
    if batch_given and given.batch_size != given.concurrency:
        notes.append(
            f"--batch-size {given.batch_size} ignored for serving: --concurrency "
            f"({given.concurrency}) sets the sequences decoded together"
        )
    notes.append(
        f"serving: {given.context} tokens of context reserved per sequence"
        + (f" (the model advertises {shape.max_context})" if shape.max_context else "")
        + f", prompt {given.prompt_tokens} and output {given.output_tokens} tokens per request, "
        f"{given.concurrency} sequence(s) at a time"
    )
    if shape.max_context and given.context > shape.max_context:
        notes.append(
            f"--context {given.context} is beyond the {shape.max_context} tokens {shape.name} advertises"
        )
    mean = max(1, given.prompt_tokens + given.output_tokens // 2)
    flops = arch.prefill_flops(
        max(1, given.prompt_tokens)
    ) + given.output_tokens * arch.flops_per_token(mean)
    # The weights' own format is --quant (16-bit by default); the workload's precision,
    # the compute type, is stated as bf16 like any served LLM's unless it was given.
    precision = given.precision if "precision" in given.model_fields_set else Precision.BF16
    return {
        "batch_size": given.concurrency,
        "seq_len": given.context,
        "flops_per_sample": flops,
        "precision": precision,
    }


def _finetune_fields(
    shape: LlmShape, given: Workload, notes: list[str], batch_given: bool, said: set[str]
) -> dict[str, Any]:
    arch = arch_of(shape)
    method = given.method or FinetuneMethod.LORA
    if given.method is None:
        notes.append("--method not given: LoRA assumed (give --method full|lora|qlora)")
    seq = given.seq_len or FINETUNE_SEQ_LEN
    if given.seq_len is None:
        notes.append(f"sequence length {FINETUNE_SEQ_LEN} tokens assumed (give --seq-len)")
    if not batch_given:
        notes.append("micro-batch of 1 sequence assumed (give --batch-size)")
    serve_only = sorted(said & _SERVE_OPTIONS)
    if serve_only:
        names = ", ".join(OPTIONS[k] for k in serve_only)
        notes.append(f"{names} ignored: serving options (QLoRA's base is NF4 by definition)")
    precision = given.precision if "precision" in given.model_fields_set else Precision.BF16
    return {
        "method": method,
        "seq_len": seq,
        "precision": precision,
        "flops_per_sample": seq * arch.flops_per_token(max(1, seq // 2)),
    }


def llm_workload(
    shape: LlmShape,
    given: Workload,
    base: Workload | None,
    *,
    batch_given: bool,
    said: set[str],
) -> Workload:
    """The serving or fine-tuning workload of a language model.

    ``given`` holds the checked options (task decided); ``base`` is the catalog entry's
    workload when the model is a catalog id, else the workload is built from the shape.
    """
    notes = list(base.assumptions) if base is not None else [_origin_note(shape)]
    if given.task is Task.SERVE:
        need = given.prompt_tokens + given.output_tokens
        if "context" not in said and need > given.context:
            # The default context holds the request: max(4096, prompt + output).
            given = given.model_copy(update={"context": need})
        serving_request(given)
        fields = _serve_fields(shape, given, notes, batch_given)
        if "concurrency" not in said and (given.qps is not None or given.max_throughput):
            fields["concurrency_auto"] = True
            notes.append(
                "concurrency chosen per device by continuous batching: the most sequences "
                "that fit its memory"
                + (
                    f" and give the first token within {given.latency_ms:g} ms"
                    if given.latency_ms
                    else ""
                )
                + (", then replicas for the QPS" if given.qps is not None else "")
            )
        finetune_only = sorted(said & _FINETUNE_OPTIONS)
        if finetune_only:
            names = ", ".join(OPTIONS[k] for k in finetune_only)
            notes.append(f"{names} ignored: fine-tuning options")
    else:
        fields = _finetune_fields(shape, given, notes, batch_given, said)
        fields["batch_size"] = given.batch_size if batch_given else 1
    data = {
        **(base.model_dump() if base is not None else _shape_fields(shape)),
        **{k: getattr(given, k) for k in _KEPT},
        **fields,
        "task": given.task,
        "llm": shape,
        "assumptions": notes,
        "profile": None,
    }
    if base is None:
        data["model"] = shape.name
    return checked_workload(data, derived=True)


#: Options copied from the checked options into a language-model workload.
_KEPT = (
    "dataset_size",
    "epochs",
    "precision",
    "optimizer",
    "qps",
    "latency_ms",
    "deadline_hours",
    "max_throughput",
    *LLM_OPTIONS,
)


def _shape_fields(shape: LlmShape) -> dict[str, Any]:
    """The workload fields a language model's shape gives, outside the catalog."""
    return {
        "model": shape.name,
        "kind": ModelKind.DECODER,
        "params": shape.params_total,
        "layers": shape.layers,
        "hidden": shape.hidden,
        "heads": shape.heads,
        "kv_heads": shape.kv_heads,
        "source": f"{shape.origin}:{shape.name}",
    }


def shape_workload(shape: LlmShape, given: Workload, common: dict[str, Any]) -> Workload:
    """A training or inference workload of a language model read from its files."""
    if given.method is not None:
        raise UsageError("--method applies to --task finetune")
    arch = arch_of(shape)
    seq = given.seq_len or min(given.context, shape.max_context or given.context)
    fields = {
        **_shape_fields(shape),
        **common,
        "seq_len": seq,
        "flops_per_sample": seq * arch.flops_per_token(max(1, seq // 2)),
        "llm": shape,
        "assumptions": [
            _origin_note(shape),
            f"forward FLOPs: {seq} tokens x (2 x active parameters + attention at the mean position)",
        ],
    }
    wl = checked_workload(fields, derived=True)
    return wl.model_copy(update={"profile": analytic_profile(wl, None)})
