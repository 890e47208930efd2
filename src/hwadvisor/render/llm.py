"""Human view of language-model estimates: tokens/s, time to first token, priced options.

:func:`render_llm` prints, under the estimate table, the serving figures of each device
(prefill, decode and aggregate tokens/s, time to first token, how many sequences of the
context fit; the KV cache per token in the title, as it is the model's, not the
device's); the fine-tuning line (method, trainable parameters, FLOPs per token, the
data's tokens) with each device's answers (tokens/s and hours, the longest sequence at
micro-batch 1, the largest micro-batch); and, for what does not fit, the alternatives
in order: each serving format with its memory and speed, each fine-tuning fix itself
with its memory and time. :func:`render_advice_serving` is the advice's serving table.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from hwadvisor.render.layout import Col, FitTable, Hanging
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.advice import Advice
    from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
    from hwadvisor.models.llm import (
        FinetuneFigures,
        FinetuneOption,
        ServingFigures,
        ServingOption,
    )

_METHOD = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def _rate(value: float | None) -> str:
    """Tokens/s: ``8,683``, ``57.9``, ``2.73``; 'unknown' when not known."""
    if value is None:
        return "unknown"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _label(est: DeviceEstimate) -> str:
    return est.device + (f" x{est.gpus}" if est.gpus > 1 else "")


def _fit(fits: bool | None) -> str:
    if fits is None:
        return "[yellow]?[/]"
    return "[bold green]✓ fits[/]" if fits else "[bold red]✗ no[/]"


def serving_table(report: EstimateReport) -> FitTable | None:
    """The serving figures of each device, or None when no estimate has them."""
    rows = [(e, e.serving) for e in report.estimates if e.serving is not None]
    if not rows:
        return None
    wl = report.workload
    kv = rows[0][1].kv_cache_bytes_per_token
    title = (
        f"tokens/s: prompt {wl.prompt_tokens}, output {wl.output_tokens}; "
        f"KV cache {human_bytes(kv)} per token; {_formats(rows)}"
    )
    columns = [
        Col("device", wrap=True, min_width=8),
        Col("prefill", "right"),
        Col("decode", "right"),
        Col("aggregate", "right", fold=1),
        Col("TTFT", "right"),
        Col("max seqs", "right", fold=2),
        Col("fit"),
    ]
    cells = [
        [
            _label(e),
            _rate(s.prefill_tokens_per_s),
            _rate(s.decode_tokens_per_s),
            _rate(s.aggregate_tokens_per_s),
            duration(s.ttft_s),
            f"{s.max_concurrency:,}",
            _fit(e.fits),
        ]
        for e, s in rows
    ]
    return FitTable(columns, cells, title=title)


def _formats(rows: list[tuple[DeviceEstimate, ServingFigures]]) -> str:
    """``bf16 with vllm`` when every device serves alike, else each with its devices."""
    groups: dict[str, list[str]] = {}
    for e, s in rows:
        groups.setdefault(f"{s.quant} with {s.engine}", []).append(e.device)
    if len(groups) == 1:
        return next(iter(groups))
    return "; ".join(f"{k} ({', '.join(v)})" for k, v in groups.items())


def llm_title(report: EstimateReport) -> str | None:
    """The estimate table's title for a language model's serving or fine-tuning."""
    wl = report.workload
    if wl.task.value == "serve":
        return f"{wl.model}: serve {wl.concurrency} sequence(s) of {wl.context} tokens" + (
            f", {wl.quant.value}" if wl.quant else ""
        )
    if wl.task.value == "finetune" and wl.method is not None:
        rank = f" r{wl.lora_rank}" if wl.method.value != "full" else ""
        return (
            f"{wl.model}: finetune ({wl.method.value}{rank}), batch {wl.batch_size} x "
            f"{wl.seq_len} tokens"
        )
    return None


def _serving_option(o: ServingOption) -> str:
    what = f"{o.quant} on {o.tp} GPUs" if o.tp > 1 else o.quant
    speed = f", {_rate(o.decode_tokens_per_s)} tokens/s" if o.decode_tokens_per_s else ""
    return f"{what} {human_bytes(o.memory_bytes)}{speed}{' (fits)' if o.fits else ''}"


def _finetune_option(o: FinetuneOption, before: FinetuneOption | None) -> str:
    """One fix as the ladder applied it: the fix itself (with the micro-batch and the
    accumulation it runs with, where they changed and the fix does not say so), its
    memory per GPU and its time."""
    what = o.fix or _METHOD.get(o.method, o.method)
    if o.gpus > 1 and not o.fix:
        what += f" over {o.gpus} GPUs ({o.strategy})"
    step = (o.batch_size, o.grad_accumulation)
    changed = before is None or step != (before.batch_size, before.grad_accumulation)
    if (o.grad_accumulation or 1) > 1 and changed and "micro-batch" not in what:
        micro = f"micro-batch {o.batch_size}, " if o.batch_size is not None else ""
        what += f" ({micro}{o.grad_accumulation} accumulated)"
    if o.total_time_s is not None:
        time = f", {duration(o.total_time_s)}"
    elif o.step_time_s is not None:
        time = f", {duration(o.step_time_s)}/step"
    else:
        time = ""
    return f"{escape(what)}: {human_bytes(o.memory_bytes)}{time}{' (fits)' if o.fits else ''}"


def finetune_fixes(est: DeviceEstimate) -> list[str]:
    """The fine-tuning fixes of one estimate, in order, each with its memory and time."""
    if est.finetune is None:
        return []
    opts = est.finetune.options
    return [_finetune_option(o, opts[i - 1] if i else None) for i, o in enumerate(opts)]


def priced_options(est: DeviceEstimate) -> str | None:
    """The lighter alternatives of one estimate, in order, each priced; None if none."""
    if est.serving is not None and est.serving.options:
        return "; ".join(_serving_option(o) for o in est.serving.options)
    fixes = finetune_fixes(est)
    return "; ".join(fixes) if fixes else None


def finetune_answers(ft: FinetuneFigures, seq_len: int | None) -> str:
    """What the fine-tune row answers: speed and hours, the longest sequence at micro-batch
    1, the largest micro-batch at the sequence length ('' when it carries none)."""
    parts = []
    if ft.tokens_per_s is not None or ft.hours is not None:
        hours = duration(ft.hours * 3600) if ft.hours is not None else "time unknown"
        parts.append(f"{_rate(ft.tokens_per_s)} tokens/s, {hours}")
    if ft.longest_seq_batch1 is not None:
        parts.append(f"longest sequence at micro-batch 1: {ft.longest_seq_batch1:,} tokens")
    if ft.largest_micro_batch is not None:
        at = f" at {seq_len:,} tokens" if seq_len else ""
        parts.append(f"largest micro-batch{at}: {ft.largest_micro_batch:,}")
    return "; ".join(parts)


def _finetune_line(con: Console, report: EstimateReport) -> None:
    rows = [(e, e.finetune) for e in report.estimates if e.finetune is not None]
    if not rows:
        return
    ft = rows[0][1]
    rank = f", rank {ft.lora_rank} on {ft.lora_targets}" if ft.lora_rank else ""
    head = (
        f"[bold]{_METHOD.get(ft.method, ft.method)}[/]{rank}: "
        f"{ft.trainable_params:,} trainable parameters, {ft.flop_ratio:.2f} x the "
        "forward FLOPs per token" + (" (gradient checkpointing)" if ft.checkpointing else "")
    )
    if ft.dataset_tokens:
        head += f"; {ft.dataset_tokens:,} tokens of data"
    seq = report.workload.seq_len
    answers = [(e, finetune_answers(f, seq)) for e, f in rows]
    con.print()
    if len(answers) == 1 and answers[0][1]:
        con.print(Hanging("", f"{head}; on {escape(_label(answers[0][0]))}: {answers[0][1]}"))
        return
    con.print(Hanging("", head))
    for e, text in answers:
        if text:
            con.print(Hanging("  ", f"{escape(_label(e))}: {text}", indent=4))


def render_llm(con: Console, report: EstimateReport) -> None:
    """The serving table, the fine-tuning line with its answers per device and, for what
    does not fit, the alternatives in order, each with its memory and time."""
    table = serving_table(report)
    if table is not None:
        con.print()
        con.print(table)
    _finetune_line(con, report)
    for est in report.estimates:
        head = f"[bold]{escape(_label(est))}[/] does not fit ({human_bytes(est.memory_bytes)})."
        fixes = finetune_fixes(est)
        if fixes:
            con.print()
            con.print(Hanging("", f"{head} Lighter, in order, each fix keeping those before:"))
            for i, text in enumerate(fixes, 1):
                con.print(Hanging(f"  {i}. ", text, indent=5))
            continue
        options = priced_options(est)
        if options:
            con.print()
            con.print(Hanging("", f"{head} Lighter, in order: {options}", indent=2))


def render_advice_serving(doc: Advice, con: Console) -> None:
    """The advice's serving figures: this machine and each alternative, in tokens/s."""
    here = doc.estimates.here
    rows: list[tuple[str, ServingFigures, bool | None]] = []
    if here is not None and here.serving is not None:
        rows.append(("this machine (CPU)", here.serving, here.fits))
    for a in doc.estimates.alternatives:
        if a.serving is not None:
            name = (f"{a.gpus} x " if a.gpus > 1 else "") + (a.name or a.device)
            rows.append((name, a.serving, a.memory_fit))
    if not rows:
        return
    wl = doc.workload
    columns = [
        Col("device", wrap=True, min_width=12),
        Col("decode", "right"),
        Col("prefill", "right", fold=2),
        Col("aggregate", "right", fold=1),
        Col("TTFT", "right"),
        Col("seqs", "right", fold=3),
        Col("req/s", "right"),
        Col("fits"),
    ]
    cells = [
        [
            name,
            _rate(s.decode_tokens_per_s),
            _rate(s.prefill_tokens_per_s),
            _rate(s.aggregate_tokens_per_s),
            duration(s.ttft_s),
            str(s.concurrency or wl.concurrency),
            f"{s.requests_per_s:.3g}" if s.requests_per_s is not None else "unknown",
            _fit(fits),
        ]
        for name, s, fits in rows
    ]
    # With --qps or --max-throughput and no --concurrency, each row is at its own.
    batch = (
        "seqs chosen per device by continuous batching"
        if wl.concurrency_auto
        else f"{wl.concurrency} sequence(s)"
    )
    title = (
        f"Serving, tokens/s ({batch}, {wl.context} tokens each, prompt "
        f"{wl.prompt_tokens}, output {wl.output_tokens}; KV cache "
        f"{human_bytes(rows[0][1].kv_cache_bytes_per_token)} per token)"
    )
    con.print(FitTable(columns, cells, title=title))
