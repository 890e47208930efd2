"""The HTML report's language-model sections: serving and fine-tuning per device (pure).

Serving: per device, prefill and decode tokens/s, the aggregate at the concurrency,
time to first token, inter-token latency, the concurrency, how many sequences fit and
requests/s, then the lighter formats in order. A row that carries a batching curve gets
its points in a table here and a chart (:mod:`hwadvisor.render.llm_charts`).

Fine-tuning: per device, the method, framework, optimizer, checkpointing, strategy,
tokens/s and hours; the memory per GPU by part; the row's answers (longest sequence at
micro-batch 1, largest micro-batch, dataset tokens, hours); the fixes in order.

Every value from a document passes through :func:`esc`. Fields an older document lacks
(a row's ``itl_s``, ``concurrency``, ``requests_per_s_per_gpu`` or ``curve``) are
shown as unknown, derived (one sequence's inter-token time, requests/s over the GPUs) or
left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hwadvisor.render.report_data import label_of
from hwadvisor.render.report_sections import esc
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from hwadvisor.models.advice import Advice
    from hwadvisor.models.estimate import EstimateReport, MemoryBreakdown
    from hwadvisor.models.llm import FinetuneFigures, FinetuneOption, ServingFigures
    from hwadvisor.models.workload import Workload

GIB = 2**30
METHOD = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}
#: The memory parts of a fine-tuning job, in the order a GPU's memory is filled.
PARTS = (
    "weights",
    "adapters",
    "gradients",
    "optimizer",
    "activations",
    "logits",
    "temporaries",
    "runtime",
)


@dataclass(frozen=True)
class ServingRow:
    """One device's serving figures, as the report shows them."""

    label: str
    serving: ServingFigures
    fits: bool | None
    fits_planned: bool | None = None


@dataclass(frozen=True)
class FinetuneRow:
    """One device's fine-tuning figures, memory parts and capacity."""

    label: str
    finetune: FinetuneFigures
    memory: MemoryBreakdown | None
    capacity: int | None
    fits: bool | None
    fits_planned: bool | None


@dataclass(frozen=True)
class CurvePointRow:
    """One concurrency of a batching curve: tokens/s, latencies, requests/s, fit."""

    concurrency: int
    tokens_s: float
    ttft_s: float
    itl_s: float | None
    requests_s: float | None
    fits: bool | None


# -- rows of the documents ----------------------------------------------------------------


def advice_serving(advice: Advice) -> list[ServingRow]:
    """This machine and each alternative that carries serving figures."""
    here = advice.estimates.here
    rows = []
    if here is not None and here.serving is not None:
        rows.append(
            ServingRow(
                label_of(here.device, here.name, here.gpus),
                here.serving,
                here.fits,
                here.fits_planned,
            )
        )
    rows += [
        ServingRow(_alternative(a.device, a.name, a.gpus), a.serving, a.memory_fit, a.fits_planned)
        for a in advice.estimates.alternatives
        if a.serving is not None
    ]
    return rows


def _alternative(device: str, name: str | None, gpus: int) -> str:
    """An alternative's label; this machine's own GPUs (``local:``) say so."""
    label = label_of(device, name, gpus)
    return f"{label} (this machine)" if device.startswith("local:") else label


def estimate_serving(report: EstimateReport) -> list[ServingRow]:
    """Each estimate that carries serving figures."""
    return [
        ServingRow(label_of(e.device, e.name, e.gpus), e.serving, e.fits, e.fits_planned)
        for e in report.estimates
        if e.serving is not None
    ]


def advice_finetune(advice: Advice) -> list[FinetuneRow]:
    """This machine's fine-tuning row and each alternative's."""
    here = advice.estimates.here
    rows = []
    if here is not None and here.finetune is not None:
        rows.append(
            FinetuneRow(
                label_of(here.device, here.name, here.gpus),
                here.finetune,
                here.memory,
                here.device_memory_bytes,
                here.fits,
                here.fits_planned,
            )
        )
    rows += [
        FinetuneRow(
            _alternative(a.device, a.name, a.gpus),
            a.finetune,
            a.memory,
            a.device_memory_bytes,
            a.memory_fit,
            a.fits_planned,
        )
        for a in advice.estimates.alternatives
        if a.finetune is not None
    ]
    return rows


def estimate_finetune(report: EstimateReport) -> list[FinetuneRow]:
    """Each estimate that carries fine-tuning figures."""
    return [
        FinetuneRow(
            label_of(e.device, e.name, e.gpus),
            e.finetune,
            e.memory,
            e.device_memory_bytes,
            e.fits,
            e.fits_planned,
        )
        for e in report.estimates
        if e.finetune is not None
    ]


def _first(obj: object, *names: str) -> Any:
    for name in names:
        value = getattr(obj, name, None)
        if value is not None:
            return value
    return None


def curve_points(points: Sequence[object] | None) -> list[CurvePointRow]:
    """A batching curve's points, from a document's curve or :func:`batching_curve`'s
    :class:`~hwadvisor.llm.serving.CurvePoint` (either spelling of the rates)."""
    out = []
    for p in points or ():
        c = _first(p, "concurrency")
        tokens = _first(p, "aggregate_tokens_per_s", "aggregate_tokens_s")
        ttft = _first(p, "ttft_s")
        if c is None or tokens is None or ttft is None:
            continue
        rps = _first(p, "requests_per_s", "requests_s")
        out.append(
            CurvePointRow(
                int(c), float(tokens), float(ttft), _first(p, "itl_s"), rps, _first(p, "fits")
            )
        )
    return out


def curve_of(serving: ServingFigures) -> list[CurvePointRow]:
    """The batching curve a serving row carries (none when its concurrency was given)."""
    return curve_points(serving.curve)


def memory_parts(ft: FinetuneFigures, mem: MemoryBreakdown | None) -> dict[str, int]:
    """Bytes per part of one GPU's memory; their sum is the total.

    The estimate counts the adapters inside the weights and the logits inside the
    activations; they are shown apart here.
    """
    if mem is None:
        return {}
    adapters = ft.adapter_bytes or 0
    logits = ft.logits_bytes or 0
    activations = mem.activations_bytes or 0
    parts = {
        "weights": max(0, mem.weights_bytes - adapters),
        "adapters": adapters,
        "gradients": mem.gradients_bytes,
        "optimizer": mem.optimizer_bytes,
        "activations": max(0, activations - logits),
        "logits": logits if activations >= logits else 0,
        "temporaries": mem.temporaries_bytes,
        "runtime": mem.runtime_bytes,
    }
    return {k: v for k, v in parts.items() if v}


# -- HTML ---------------------------------------------------------------------------------


def _rate(value: float | None) -> str:
    if value is None:
        return "unknown"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _fit(fits: bool | None, planned: bool | None = None) -> str:
    if not fits and planned:
        return "with fixes"
    return "unknown" if fits is None else "fits" if fits else "does not fit"


def _table(head: Sequence[tuple[str, bool]], rows: Sequence[Sequence[str]]) -> str:
    """A table of already-escaped cells, scrolling sideways on a narrow screen; ``head``
    is (title, numeric) per column."""
    ths = "".join(f'<th class="num">{esc(t)}</th>' if n else f"<th>{esc(t)}</th>" for t, n in head)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if head[i][1] else f"<td>{c}</td>" for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f'<div class="scroll"><table><tr>{ths}</tr>{body}</table></div>'


def _itl(s: ServingFigures) -> str:
    """Inter-token latency: the row's own, else one sequence alone (1 / decode)."""
    if s.itl_s is not None:
        return esc(duration(s.itl_s))
    if s.decode_tokens_per_s:
        return esc(duration(1 / s.decode_tokens_per_s)) + '<br><span class="meta">alone</span>'
    return "unknown"


def _requests(s: ServingFigures) -> str:
    if s.requests_per_s is None:
        return "unknown"
    gpus = s.tp * s.replicas
    each = s.requests_per_s_per_gpu
    if each is None:
        each = s.requests_per_s / gpus
    per = f'<br><span class="meta">{esc(f"{each:.3g}")} per GPU</span>'
    return esc(f"{s.requests_per_s:.3g}") + (per if gpus > 1 else "")


def _in_flight(s: ServingFigures, wl: Workload) -> str:
    """The concurrency the figures are at, and why, where it was chosen here."""
    text = esc(f"{s.concurrency if s.concurrency is not None else wl.concurrency:,}")
    if s.concurrency_chosen:
        # "44 sequences at a time: the most the memory holds" -> "the most the memory holds"
        why = s.concurrency_chosen.partition(": ")[2] or s.concurrency_chosen
        text += f'<br><span class="meta">{esc(why)}</span>'
    return text


def _format(s: ServingFigures) -> str:
    text = f"{s.quant} with {s.engine}"
    if s.tp > 1:
        text += f", tensor parallel {s.tp}"
    if s.replicas > 1:
        text += f", {s.replicas} replicas"
    return esc(text)


def _serving_options(rows: Sequence[ServingRow]) -> str:
    items = []
    for r in rows:
        if not r.serving.options:
            continue
        opts = "".join(
            "<li>"
            + esc(
                f"{o.quant} with {o.engine}"
                + (f" on {o.tp} GPUs" if o.tp > 1 else "")
                + f": {human_bytes(o.memory_bytes)} per GPU, "
                + (f"{_rate(o.decode_tokens_per_s)} tokens/s, " if o.decode_tokens_per_s else "")
                + f"{o.max_concurrency:,} sequences fit"
                + (" (fits)" if o.fits else " (does not fit)")
            )
            + "</li>"
            for o in r.serving.options
        )
        items.append(f"<li><strong>{esc(r.label)}</strong><ol>{opts}</ol></li>")
    if not items:
        return ""
    return f"<details open><summary>lighter formats, in order</summary><ul>{''.join(items)}</ul></details>"


def _curve_table(label: str, points: Sequence[CurvePointRow]) -> str:
    head = [
        ("concurrency", True),
        ("tokens/s", True),
        ("TTFT", True),
        ("ITL", True),
        ("requests/s", True),
        ("fits", False),
    ]
    rows = [
        [
            esc(f"{p.concurrency:,}"),
            esc(_rate(p.tokens_s)),
            esc(duration(p.ttft_s)),
            esc(duration(p.itl_s)),
            esc(f"{p.requests_s:.3g}" if p.requests_s is not None else "unknown"),
            esc(_fit(p.fits)),
        ]
        for p in points
    ]
    return (
        f"<details><summary>batching curve of {esc(label)} (per replica)</summary>"
        f"{_table(head, rows)}</details>"
    )


def serving_section(rows: Sequence[ServingRow], wl: Workload) -> str:
    """The serving figures of each device, the lighter formats and any batching curves."""
    if not rows:
        return ""
    head = [
        ("device", False),
        ("prefill", True),
        ("decode", True),
        ("aggregate", True),
        ("TTFT", True),
        ("ITL", True),
        ("in flight", True),
        ("fit seqs", True),
        ("req/s", True),
        ("fit", False),
    ]
    cells = [
        [
            f'{esc(r.label)}<br><span class="meta">{_format(r.serving)}</span>',
            esc(_rate(r.serving.prefill_tokens_per_s)),
            esc(_rate(r.serving.decode_tokens_per_s)),
            esc(_rate(r.serving.aggregate_tokens_per_s)),
            esc(duration(r.serving.ttft_s)),
            _itl(r.serving),
            _in_flight(r.serving, wl),
            esc(f"{r.serving.max_concurrency:,}"),
            _requests(r.serving),
            esc(_fit(r.fits, r.fits_planned)),
        ]
        for r in rows
    ]
    kv = human_bytes(rows[0].serving.kv_cache_bytes_per_token)
    caption = (
        f"Prompt {wl.prompt_tokens:,} and output {wl.output_tokens:,} tokens per request, "
        f"{wl.context:,} tokens of context reserved per sequence; KV cache {kv} per token. "
        "Prefill, decode and aggregate are tokens/s: decode of one sequence alone, the "
        "aggregate of all sequences in flight (all replicas). TTFT: time to first token; "
        "ITL: inter-token latency (marked alone: one sequence's, 1 / decode). In flight: "
        "the requests served at once (given, or chosen by continuous batching); fit seqs: how many sequences of the context fit "
        "beside the weights; req/s: requests completed per second at that concurrency. "
        "A fit 'with fixes' holds in a lighter format or on more GPUs, as listed below."
    )
    curves = "".join(_curve_table(r.label, pts) for r in rows if (pts := curve_of(r.serving)))
    return (
        f'<section class="card"><h2>Serving</h2>{_table(head, cells)}'
        f'<p class="caption">{esc(caption)}</p>{_serving_options(rows)}{curves}</section>'
    )


def _method(ft: FinetuneFigures) -> str:
    text = METHOD.get(ft.method, ft.method)
    if ft.lora_rank:
        text += f", rank {ft.lora_rank}" + (f" on {ft.lora_targets}" if ft.lora_targets else "")
    return text


def _answers(r: FinetuneRow, wl: Workload) -> str:
    ft = r.finetune
    items = []
    if ft.longest_seq_batch1 is not None:
        items.append(
            f"longest sequence that fits one GPU at micro-batch 1: {ft.longest_seq_batch1:,} tokens"
        )
    if ft.largest_micro_batch is not None:
        at = f" at {wl.seq_len:,} tokens" if wl.seq_len else ""
        items.append(f"largest micro-batch{at}: {ft.largest_micro_batch:,}")
    if ft.dataset_tokens is not None:
        items.append(f"tokens of data: {ft.dataset_tokens:,}")
    if ft.hours is not None:
        items.append(f"hours of the run: {ft.hours:,.3g} ({duration(ft.hours * 3600)})")
    if ft.host_bytes:
        items.append(f"in host memory (paged or offloaded): {human_bytes(ft.host_bytes)}")
    if not items:
        return ""
    return f"<li><strong>{esc(r.label)}</strong>: {esc('; '.join(items))}</li>"


def _fix(o: FinetuneOption, plan: bool) -> list[str]:
    savers = [o.optimizer or "", "checkpointing" if o.checkpointing else ""]
    savers.append("CPU offload" if o.offload else "")
    if o.gpus > 1:
        savers.append(f"{o.gpus} GPUs, {o.strategy}")
    what = o.fix or METHOD.get(o.method, o.method)
    time = duration(o.total_time_s) if o.total_time_s is not None else duration(o.step_time_s)
    return [
        esc(what) + (' <span class="badge ok">the plan</span>' if plan else ""),
        esc(f"{o.batch_size or '?'} × {o.grad_accumulation or 1}"),
        esc(", ".join(x for x in savers if x)),
        esc(human_bytes(o.memory_bytes)),
        esc(time if o.total_time_s is not None else f"{time} a step"),
        esc("fits" if o.fits else "no"),
    ]


def _fixes(rows: Sequence[FinetuneRow]) -> str:
    head = [
        ("fix", False),
        ("micro-batch × steps", True),
        ("runs with", False),
        ("memory per GPU", True),
        ("time", True),
        ("fits", False),
    ]
    out = []
    for r in rows:
        opts = r.finetune.options
        if not opts:
            continue
        plan = next((i for i, o in enumerate(opts) if o.fits), None)
        cells = [_fix(o, i == plan) for i, o in enumerate(opts)]
        out.append(
            f"<h3>{esc(r.label)}: the fixes in order, each keeping those before</h3>"
            + _table(head, cells)
        )
    return "".join(out)


def finetune_section(rows: Sequence[FinetuneRow], wl: Workload) -> str:
    """Fine-tuning per device: method and speed, memory by part, answers, the fixes."""
    if not rows:
        return ""
    head = [
        ("device", False),
        ("method", False),
        ("framework", False),
        ("optimizer", False),
        ("checkpointing", False),
        ("strategy", False),
        ("tokens/s", True),
        ("hours", True),
        ("fit", False),
    ]
    cells = [
        [
            esc(r.label),
            esc(_method(r.finetune)),
            esc(r.finetune.framework or "unknown"),
            esc(
                (r.finetune.optimizer or "unknown")
                + (" + CPU offload" if r.finetune.offload else "")
            ),
            esc("on" if r.finetune.checkpointing else "off"),
            esc(r.finetune.strategy),
            esc(_rate(r.finetune.tokens_per_s)),
            esc(f"{r.finetune.hours:,.3g}" if r.finetune.hours is not None else "unknown"),
            esc(_fit(r.fits, r.fits_planned)),
        ]
        for r in rows
    ]
    answers = "".join(_answers(r, wl) for r in rows)
    trainable = rows[0].finetune.trainable_params
    caption = (
        f"{trainable:,} trainable parameters; batch {wl.batch_size} × {wl.seq_len or '?'} tokens. "
        "The figures are the job as written; a fit 'with fixes' holds once the fixes below apply."
    )
    return (
        f'<section class="card"><h2>Fine-tuning</h2>{_table(head, cells)}'
        f'<p class="caption">{esc(caption)}</p>{_memory_table(rows)}'
        + (f"<h3>What the rows answer</h3><ul>{answers}</ul>" if answers else "")
        + f"{_fixes(rows)}</section>"
    )


def _memory_table(rows: Sequence[FinetuneRow]) -> str:
    parts_of = [(r, memory_parts(r.finetune, r.memory)) for r in rows]
    shown = [p for p in PARTS if any(p in parts for _, parts in parts_of)]
    if not shown:
        return ""
    head = [("device", False)] + [(p, True) for p in shown]
    head += [("total", True), ("capacity", True), ("host", True)]
    cells = []
    for r, parts in parts_of:
        total = r.memory.total_bytes if r.memory is not None else None
        cells.append(
            [esc(r.label)]
            + [esc(human_bytes(parts[p]) if p in parts else "–") for p in shown]
            + [
                esc(human_bytes(total)),
                esc(human_bytes(r.capacity)),
                esc(human_bytes(r.finetune.host_bytes or 0)),
            ]
        )
    note = (
        "Runtime: the CUDA context and the allocator's reserve. Host: what is held in host "
        "memory (paged optimizer state, offloaded tensors), not on the GPU nor in the total."
    )
    return (
        "<h3>Memory per GPU, by part</h3>"
        + _table(head, cells)
        + f'<p class="caption">{esc(note)}</p>'
    )
