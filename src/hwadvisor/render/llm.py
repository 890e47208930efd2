"""Human view of language-model estimates: tokens/s, time to first token, priced options.

:func:`render_llm` prints, under the estimate table, the serving figures of each device
(prefill, decode and aggregate tokens/s, time to first token, how many sequences of the
context fit; the KV cache per token in the title, as it is the model's, not the
device's) and, for what does not fit, the alternatives in order, each with its memory
and speed or time. :func:`serving_summary` is the one-line form the advice shows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hwadvisor.render.layout import Col, FitTable, Hanging
from hwadvisor.units import duration, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

    from hwadvisor.models.advice import Advice
    from hwadvisor.models.estimate import DeviceEstimate, EstimateReport
    from hwadvisor.models.llm import FinetuneOption, ServingFigures, ServingOption

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


def _finetune_option(o: FinetuneOption) -> str:
    what = _METHOD.get(o.method, o.method)
    if o.gpus > 1:
        what += f" over {o.gpus} GPUs ({o.strategy})"
    if o.total_time_s is not None:
        time = f", {duration(o.total_time_s)}"
    elif o.step_time_s is not None:
        time = f", {duration(o.step_time_s)}/step"
    else:
        time = ""
    return f"{what} {human_bytes(o.memory_bytes)}{time}{' (fits)' if o.fits else ''}"


def priced_options(est: DeviceEstimate) -> str | None:
    """The lighter alternatives of one estimate, in order, each priced; None if none."""
    if est.serving is not None and est.serving.options:
        return "; ".join(_serving_option(o) for o in est.serving.options)
    if est.finetune is not None and est.finetune.options:
        return "; ".join(_finetune_option(o) for o in est.finetune.options)
    return None


def render_llm(con: Console, report: EstimateReport) -> None:
    """The serving table and, for what does not fit, the priced alternatives."""
    table = serving_table(report)
    if table is not None:
        con.print()
        con.print(table)
    ft = next((e.finetune for e in report.estimates if e.finetune is not None), None)
    if ft is not None:
        rank = f", rank {ft.lora_rank} on {ft.lora_targets}" if ft.lora_rank else ""
        con.print()
        con.print(
            Hanging(
                "",
                f"[bold]{_METHOD.get(ft.method, ft.method)}[/]{rank}: "
                f"{ft.trainable_params:,} trainable parameters, {ft.flop_ratio:.2f} x the "
                "forward FLOPs per token"
                + (" (gradient checkpointing)" if ft.checkpointing else ""),
            )
        )
    for est in report.estimates:
        options = priced_options(est)
        if options:
            con.print()
            con.print(
                Hanging(
                    "",
                    f"[bold]{_label(est)}[/] does not fit ({human_bytes(est.memory_bytes)}). "
                    f"Lighter, in order: {options}",
                    indent=2,
                )
            )


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
            f"{s.requests_per_s:.3g}" if s.requests_per_s is not None else "unknown",
            _fit(fits),
        ]
        for name, s, fits in rows
    ]
    title = (
        f"Serving, tokens/s ({wl.concurrency} sequence(s) of {wl.context}, prompt "
        f"{wl.prompt_tokens}, output {wl.output_tokens}; KV cache "
        f"{human_bytes(rows[0][1].kv_cache_bytes_per_token)} per token)"
    )
    con.print(FitTable(columns, cells, title=title))
