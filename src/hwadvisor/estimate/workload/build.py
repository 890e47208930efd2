"""Building a :class:`Workload` from what the user said.

A catalog name, a user's model file (counted on the meta device: FLOPs per operator,
its memory on fake tensors through :mod:`.usermem`), a language model (:mod:`.llm`) or
raw sizes; the defaults chosen are stated (:mod:`.defaults`)."""

from __future__ import annotations

import dataclasses
import math
from enum import Enum
from pathlib import Path
from typing import Any

from hwadvisor.catalog.loader import model_notes
from hwadvisor.catalog.schema import ModelEntry
from hwadvisor.errors import UsageError
from hwadvisor.estimate.workload.defaults import DEFAULT_BATCH, practitioner_defaults
from hwadvisor.estimate.workload.llm import ignored_note, llm_workload, shape_workload
from hwadvisor.estimate.workload.llm_shape import language_model
from hwadvisor.estimate.workload.loading import looks_like_user_model
from hwadvisor.estimate.workload.profile import analytic_profile, attention_flops
from hwadvisor.models.options import WorkloadOptions
from hwadvisor.models.workload import (
    FinetuneMethod,
    LlmShape,
    ModelKind,
    Task,
    Workload,
    checked_workload,
)

#: The longest ``--model`` value: a catalog name, a Hugging Face id (96 characters at
#: most), a module or file path with its callable; past this it is a mistake or an attack.
MAX_MODEL_CHARS = 255


def build_workload(
    options: WorkloadOptions | None = None,
    /,
    *,
    extra_catalogs: list[Path] | None = None,
    inference_default: bool = False,
    **said: Any,
) -> Workload:
    """The workload as understood, defaults filled in and unknowns left null.

    ``options`` is what the user said (:class:`~hwadvisor.models.options.WorkloadOptions`);
    its fields may be given as keywords instead (``build_workload(model="resnet50")``).
    ``model`` is a catalog id, ``module:callable`` or ``file.py:callable``, or a language
    model's Hugging Face id, folder, ``config.json`` or ``.gguf`` file; without it,
    ``params`` (with ``seq_len`` for transformer-like models: 2·N·s forward FLOPs per
    sequence) or ``flops_per_sample`` describe the cost. Without a ``task``:
    ``finetune`` when a ``method`` is given, else with ``inference_default`` (the
    inference and edge scenarios) ``serve`` for a language model and ``infer`` for any
    other, else ``train``. The values are checked against the :class:`Workload` model's
    bounds; a bad one raises UsageError naming its option, an unknown catalog name
    CatalogError, each with one clear line. ``channels_last`` says the model runs in
    ``torch.channels_last`` (NHWC), so GPU estimates charge no layout transposes.
    """
    opts = _options(options, said)
    model, task, precision = opts.model, opts.task, opts.precision
    if model is not None and len(model) > MAX_MODEL_CHARS:
        raise UsageError(
            f"--model is {len(model)} characters long, over the limit of {MAX_MODEL_CHARS}"
        )
    batch_size, flops_per_sample = opts.batch_size, opts.flops_per_sample
    given = checked_workload(_said(opts))
    llm_given = set(opts.llm_given())
    shape, entry = language_model(model, extra_catalogs)
    task_said = given.task if task is not None else None
    given = given.model_copy(
        update={"task": pick_task(task_said, given, model, entry, shape, inference_default)}
    )
    trained = given.task is Task.TRAIN and shape is not None
    if trained:
        # Training a language model whose shape is known is its full fine-tuning: one job,
        # one model (the fine-tuning physics, with its activations and recipes), without
        # the lighter methods a fine-tuning job may switch to.
        given = given.model_copy(update={"method": FinetuneMethod.FULL})
        llm_given.add("method")
    batch = given.batch_size if batch_size is not None else DEFAULT_BATCH[given.task]
    common: dict[str, Any] = {
        "task": given.task,
        "batch_size": batch,
        "dataset_size": given.dataset_size,
        "epochs": given.epochs,
        "precision": given.precision,
        "optimizer": given.optimizer,
        "channels_last": opts.channels_last,
        "qps": given.qps,
        "latency_ms": given.latency_ms,
        "deadline_hours": given.deadline_hours,
    }
    if (given.task.is_llm or trained) and shape is not None:
        base = _from_catalog(entry, given, common) if entry is not None else None
        wl = llm_workload(shape, given, base, batch_given=batch_size is not None, said=llm_given)
        if trained:
            note = "training a language model is its full fine-tuning: priced as --task finetune --method full is"
            wl = wl.model_copy(update={"assumptions": [note, *wl.assumptions]})
        return _named(wl, model, entry, extra_catalogs)
    if model is not None and looks_like_user_model(model):
        return _from_user_model(model, given.input_shape, given.seq_len, common)
    if entry is not None:
        wl = _from_catalog(entry, given, common)
    elif shape is not None:
        wl = shape_workload(shape, given, common)
    else:
        wl = _from_sizes(given, common)
    wl = _practitioner(wl, model, flops_per_sample, precision is not None, batch_size is not None)
    if llm_given:
        wl = wl.model_copy(
            update={"assumptions": [*wl.assumptions, ignored_note(llm_given, wl.task)]}
        )
    return _named(wl, model, entry, extra_catalogs)


def _options(options: WorkloadOptions | None, said: dict[str, Any]) -> WorkloadOptions:
    """The options as an object, from ``options`` or from keywords (not both)."""
    if options is None:
        return WorkloadOptions(**said)
    if said:
        raise TypeError(f"build_workload() got options and keywords {sorted(said)}")
    return options


#: The closed choices given as text, matched in lower case.
_CHOICES = (
    "precision",
    "optimizer",
    "task",
    "method",
    "lora_targets",
    "quant",
    "engine",
    "checkpointing",
    "framework",
    "strategy",
    "offload",
)


def _said(opts: WorkloadOptions) -> dict[str, Any]:
    """The values given, as the :class:`Workload` model's fields, for its bounds check."""
    fields = {f.name: getattr(opts, f.name) for f in dataclasses.fields(opts)}
    fields = {k: _lower(v) if k in _CHOICES else v for k, v in fields.items() if v is not None}
    if "input_shape" in fields:
        fields["input_shape"] = list(fields["input_shape"])
    fields.pop("model", None)
    fields.pop("channels_last", None)
    return fields


def _practitioner(
    wl: Workload, model: str | None, flops: float | None, precision_said: bool, batch_said: bool
) -> Workload:
    """Language models (and a bare --params job) default to amp and a batch from tokens
    (hwadvisor.estimate.workload.defaults); each default taken is stated."""
    d = practitioner_defaults(
        wl.kind,
        wl.task,
        wl.seq_len,
        precision=wl.precision if precision_said else None,
        batch_size=wl.batch_size if batch_said else None,
        params_only=model is None and flops is None and wl.params is not None,
    )
    if not d.notes:
        return wl
    return wl.model_copy(
        update={
            "precision": d.precision,
            "batch_size": d.batch,
            "assumptions": [*wl.assumptions, *d.notes],
        }
    )


def _named(
    wl: Workload, model: str | None, entry: ModelEntry | None, extra: list[Path] | None
) -> Workload:
    """``wl`` with the note of a name taken for a catalog entry (a prefix, a family) first."""
    if model is None or entry is None:
        return wl
    notes = model_notes(model, entry.id, extra)
    return wl.model_copy(update={"assumptions": [*notes, *wl.assumptions]}) if notes else wl


def pick_task(
    said: Task | None,
    given: Workload,
    model: str | None,
    entry: ModelEntry | None,
    shape: LlmShape | None,
    inference_default: bool,
) -> Task:
    """The task: as said, else from ``--method``, the scenario and the model (see
    :func:`build_workload`); an LLM task for a model that is not one is a UsageError."""
    task = said
    if task is None:
        if given.method is not None:
            task = Task.FINETUNE
        elif inference_default:
            task = Task.SERVE if shape is not None else Task.INFER
        else:
            task = Task.TRAIN
    if given.method is not None and task is not Task.FINETUNE:
        raise UsageError(
            f"--method {given.method.value} applies to --task finetune, not --task {task.value}"
        )
    if task.is_llm and shape is None:
        what = f"--method {given.method.value}" if given.method else f"--task {task.value}"
        if entry is not None and entry.kind.value == "decoder":
            got = (
                f"the catalog has no full shape of '{entry.id}' (layers, hidden, heads, "
                "vocab, intermediate): give its folder or Hugging Face id"
            )
        elif entry is not None:
            got = f"'{entry.id}' is {_family(entry)}"
        elif model is not None:
            got = f"'{model}' is a torch module, counted as such"
        else:
            got = "no --model was given"
        raise UsageError(
            f"{what} needs a decoder language model (a catalog LLM such as llama-3-8b, a "
            f"Hugging Face id, or a folder with config.json); {got}"
        )
    return task


def _derived(**fields: Any) -> Workload:
    """The workload built from checked options; a derived value past a bound is a UsageError."""
    return checked_workload(fields, derived=True)


def _lower(choice: Enum | str | None) -> str | None:
    """A closed choice as its value, in lower case (``BF16`` is ``bf16``)."""
    if isinstance(choice, Enum):
        return str(choice.value)
    return choice.lower() if isinstance(choice, str) else choice


def _from_catalog(entry: ModelEntry, given: Workload, common: dict[str, Any]) -> Workload:
    """The workload of a catalog model, its sizes changed by those ``given``."""
    notes = [f"cost from the catalog entry '{entry.id}' ({entry.source})"]
    flops = given.flops_per_sample
    fps, seq = _sequence_cost(entry, flops, given.seq_len, notes)
    fps, shape = _input_cost(entry, flops, given.input_shape, fps, notes)
    if common["dataset_size"] is None and entry.dataset_size is not None:
        # A catalog model has a canonical data set; one epoch of it is the job a person
        # naming the model most likely means. Stated, so it can be overridden.
        common = {**common, "dataset_size": entry.dataset_size}
        notes.append(
            f"dataset: {entry.dataset} ({entry.dataset_size:,} samples), the catalog default;"
            " give --dataset-size for your own data"
        )
    wl = _derived(
        model=entry.id,
        kind=ModelKind(entry.kind.value),
        params=given.params or entry.params,
        flops_per_sample=fps,
        input_shape=shape,
        seq_len=seq,
        layers=entry.layers,
        hidden=entry.hidden,
        heads=entry.heads,
        kv_heads=entry.kv_heads or entry.heads,
        activation_bytes_per_sample=entry.activation_bytes_per_sample,
        source=f"catalog:{entry.id}",
        assumptions=notes,
        **common,
    )
    return wl.model_copy(update={"profile": analytic_profile(wl, entry)})


def _family(entry: ModelEntry) -> str:
    """``'a cnn'``, ``'an encoder'``: the entry's kind, for the assumptions."""
    return ("an " if entry.kind.value[0] in "aeiou" else "a ") + entry.kind.value


def _sequence_cost(
    entry: ModelEntry, flops: float | None, seq_len: int | None, notes: list[str]
) -> tuple[float, int | None]:
    """FLOPs per sample and sequence length after ``--seq-len`` (said in ``notes``)."""
    fps = flops if flops is not None else entry.flops_per_sample
    if seq_len is None:
        return fps, entry.seq_len
    if not entry.seq_len:
        notes.append(
            f"--seq-len {seq_len} ignored: {entry.id} is {_family(entry)}, not a sequence model"
        )
        return fps, entry.seq_len
    if flops is not None:
        # The FLOPs are the user's; the sequence length still sizes the activations.
        notes.append(f"FLOPs from --flops-per-sample; --seq-len {seq_len} sizes the memory")
    elif seq_len != entry.seq_len:
        # 24·s·h²·L grows linearly with s, the 4·s²·h·L attention products quadratically.
        h, layers = entry.hidden or 0, entry.layers or 0
        linear = entry.flops_per_sample - attention_flops(entry.seq_len, h, layers)
        fps = linear * seq_len / entry.seq_len + attention_flops(seq_len, h, layers)
        notes.append(f"FLOPs rescaled from seq {entry.seq_len} to {seq_len}")
    return fps, seq_len


def _input_cost(
    entry: ModelEntry,
    flops: float | None,
    input_shape: list[int] | None,
    fps: float,
    notes: list[str],
) -> tuple[float, list[int] | None]:
    """FLOPs per sample and sample shape after ``--input-shape`` (said in ``notes``)."""
    if not input_shape:
        return fps, entry.input_shape
    if entry.kind.value in ("encoder", "decoder"):
        notes.append(
            f"--input-shape {','.join(map(str, input_shape))} ignored: {entry.id} is "
            f"{_family(entry)}; its cost follows --seq-len"
        )
        return fps, entry.input_shape
    if (
        entry.input_shape
        and input_shape != entry.input_shape
        and flops is None
        and entry.kind.value == "cnn"
    ):
        ratio = math.prod(input_shape[1:]) / math.prod(entry.input_shape[1:])
        fps = entry.flops_per_sample * ratio
        notes.append(f"FLOPs scaled by input area from {entry.input_shape} to {input_shape}")
    return fps, input_shape


def _from_sizes(given: Workload, common: dict[str, Any]) -> Workload:
    """The workload of bare sizes (no model named)."""
    params, flops, seq_len = given.params, given.flops_per_sample, given.seq_len
    notes: list[str] = []
    kind = ModelKind.OTHER
    if flops is None and params is not None and seq_len is not None:
        flops = 2.0 * params * seq_len
        kind = ModelKind.DECODER
        notes.append(
            "forward FLOPs = 2·N·s per sequence (transformer-like); attention FLOPs left out"
        )
    elif flops is None and params is not None:
        notes.append("FLOPs unknown: give --seq-len or --flops-per-sample for a time estimate")
    elif flops is None:
        notes.append("no model given: time and memory are unknown")
    else:
        notes.append("FLOPs per sample as given")
    wl = _derived(
        model=None,
        kind=kind,
        params=int(params) if params is not None else None,
        flops_per_sample=flops,
        seq_len=seq_len,
        input_shape=given.input_shape,
        source="user sizes",
        assumptions=notes,
        **common,
    )
    return wl.model_copy(update={"profile": analytic_profile(wl, None)})


def _from_user_model(
    spec: str, input_shape: list[int] | None, seq_len: int | None, common: dict[str, Any]
) -> Workload:
    """The workload of the user's own model, counted in a contained child process
    (:mod:`.contained`): its code never runs in this one."""
    from hwadvisor.estimate.workload.contained import run_contained

    if input_shape is None:
        if seq_len is None:
            raise UsageError(
                f"model '{spec}' needs --input-shape (one sample, e.g. 3,224,224 or 128)"
            )
        input_shape = [seq_len]
    said = {k: v.value if isinstance(v, Enum) else v for k, v in common.items()}
    data = run_contained(
        "workload", spec, spec=spec, input_shape=input_shape, seq_len=seq_len, common=said
    )
    return Workload.model_validate(data)
