"""Derived facts of language-model estimates (``--task serve`` and ``finetune``), per slot.

The estimate's own ``serving`` and ``finetune`` objects are document paths already
(``estimate.here.serving.decode_tokens_per_s``, ``estimate.best_gpu.serving.ttft_s``);
these add what follows from them: the time to first token in ms against the latency
target, and the priced alternatives as one sentence a message can carry.
"""

from __future__ import annotations

from hwadvisor.engine.derive import FactType
from hwadvisor.engine.derived.estimates import SLOT, Slot
from hwadvisor.models.llm import FinetuneOption, ServingOption
from hwadvisor.units import duration, human_bytes

_METHOD = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


@SLOT.fact("ttft_ms", FactType.NUMBER, "serving.ttft_s in ms (time to first token)")
def ttft_ms(s: Slot) -> float | None:
    """Time to first token in milliseconds."""
    sv = s.est.serving
    return sv.ttft_s * 1000.0 if sv is not None and sv.ttft_s is not None else None


@SLOT.fact(
    "meets_ttft",
    FactType.BOOL,
    "ttft_ms <= workload.latency_ms (serving: the latency target is the time to first token)",
)
def meets_ttft(s: Slot) -> bool | None:
    """The first token comes within the latency target."""
    t, target = ttft_ms(s), s.workload.latency_ms
    return t <= target if t is not None and target is not None else None


def _serving_option(o: ServingOption) -> str:
    what = f"{o.quant} on {o.tp} GPUs" if o.tp > 1 else o.quant
    speed = f", {o.decode_tokens_per_s:.0f} tokens/s" if o.decode_tokens_per_s else ""
    return f"{what} {human_bytes(o.memory_bytes)}{speed} ({'fits' if o.fits else 'does not fit'})"


@SLOT.fact(
    "serving_options",
    FactType.STRING,
    "serving that does not fit: lighter weight formats in order, then more GPUs, each with its memory and decode tokens/s",
)
def serving_options(s: Slot) -> str | None:
    """The priced serving alternatives as one sentence; None when there are none."""
    sv = s.est.serving
    if sv is None or not sv.options:
        return None
    return "; ".join(_serving_option(o) for o in sv.options)


def _finetune_option(o: FinetuneOption) -> str:
    what = _METHOD.get(o.method, o.method)
    if o.gpus > 1:
        what += f" over {o.gpus} GPUs with {o.strategy}"
    time = (
        f", {duration(o.total_time_s)}"
        if o.total_time_s is not None
        else (f", {duration(o.step_time_s)} per step" if o.step_time_s is not None else "")
    )
    return f"{what} {human_bytes(o.memory_bytes)}{time} ({'fits' if o.fits else 'does not fit'})"


@SLOT.fact(
    "finetune_options",
    FactType.STRING,
    "fine-tuning that does not fit: LoRA, then QLoRA, then sharding, each with its memory and time",
)
def finetune_options(s: Slot) -> str | None:
    """The priced fine-tuning alternatives as one sentence; None when there are none."""
    ft = s.est.finetune
    if ft is None or not ft.options:
        return None
    return "; ".join(_finetune_option(o) for o in ft.options)


@SLOT.fact(
    "first_fitting_option",
    FactType.STRING,
    "the first serving or fine-tuning alternative (in order) that fits",
)
def first_fitting_option(s: Slot) -> str | None:
    """The first priced alternative that fits, in words; None when none fits."""
    sv, ft = s.est.serving, s.est.finetune
    for o in sv.options if sv is not None else []:
        if o.fits:
            return _serving_option(o)
    for f in ft.options if ft is not None else []:
        if f.fits:
            return _finetune_option(f)
    return None
