"""The options of the commands that advise on a workload, as typed objects.

``recommend``, ``estimate``, ``fleet`` and ``rules explain`` describe a job with the same
options (``cli/_options.py``). The CLI builds these objects once from what was given
and passes them down: :class:`WorkloadOptions` to
:func:`~hwadvisor.estimate.build_workload`, :class:`PricingOptions` to
:func:`~hwadvisor.pipeline.pricing.load_pricing`, and :class:`RunOptions` (both, with
the machine and guidance options) to :func:`~hwadvisor.pipeline.recommend` and
:func:`~hwadvisor.pipeline.explain_rule`, so the same options give the same run.

A value of None is an option not given; the estimator fills in the defaults and says so.
Closed choices are the workload model's enums, or their names (any case).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hwadvisor.models.workload import (
    LLM_OPTIONS,
    Budget,
    Checkpointing,
    FinetuneMethod,
    Framework,
    LoraTargets,
    Offload,
    Optimizer,
    Precision,
    Quant,
    ServingEngine,
    Strategy,
    Task,
    Team,
)

__all__ = ["PricingOptions", "RunOptions", "WorkloadOptions"]


@dataclass(frozen=True)
class WorkloadOptions:
    """What the user said about the job (``--model``, ``--batch-size``, ...).

    ``model`` is a catalog id, ``module:callable`` or ``file.py:callable``, or a language
    model's Hugging Face id, folder, ``config.json`` or ``.gguf`` file; without it,
    ``params`` and ``flops_per_sample`` (with ``seq_len`` or ``input_shape``) describe
    the cost. The fields from ``method`` on are the language-model options
    (:data:`~hwadvisor.models.workload.LLM_OPTIONS`).
    """

    model: str | None = None
    task: Task | str | None = None
    params: int | None = None
    flops_per_sample: float | None = None
    batch_size: int | None = None
    dataset_size: int | None = None
    epochs: float | None = None
    seq_len: int | None = None
    input_shape: Sequence[int] | None = None
    precision: Precision | str | None = None
    optimizer: Optimizer | str | None = None
    channels_last: bool = False
    qps: float | None = None
    latency_ms: float | None = None
    #: ``--deadline``: hours a training job may take.
    deadline_hours: float | None = None
    method: FinetuneMethod | str | None = None
    lora_rank: int | None = None
    lora_targets: LoraTargets | str | None = None
    quant: Quant | str | None = None
    context: int | None = None
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    concurrency: int | None = None
    #: ``--max-throughput``: serve at the most sequences the memory holds.
    max_throughput: bool = False
    engine: ServingEngine | str | None = None
    checkpointing: Checkpointing | str | None = None
    framework: Framework | str | None = None
    strategy: Strategy | str | None = None
    offload: Offload | str | None = None

    def llm_given(self) -> frozenset[str]:
        """The language-model options given (those not None)."""
        return frozenset(name for name in LLM_OPTIONS if getattr(self, name) is not None)


@dataclass(frozen=True)
class PricingOptions:
    """What prices the estimates: a price file over the shipped instance catalog, and
    own hardware's price (per hour, or a purchase spread over years plus electricity)."""

    prices: str | Path | None = None
    price_per_hour: float | None = None
    purchase_usd: float | None = None
    years: float | None = None
    electricity_usd_kwh: float | None = None

    def __post_init__(self) -> None:
        """Each price finite and within its limit (:mod:`hwadvisor.models.bounds`), or one line
        naming the option (exit 2)."""
        from hwadvisor.models import bounds

        bounds.check(bounds.USD_PER_HOUR, self.price_per_hour, "--price-per-hour", "USD/h")
        bounds.check(bounds.USD, self.purchase_usd, "--purchase-usd", "USD")
        bounds.check(bounds.YEARS, self.years, "--years", "years")
        bounds.check(
            bounds.USD_PER_KWH, self.electricity_usd_kwh, "--electricity-usd-kwh", "USD/kWh"
        )
        if self.purchase_usd is not None and self.years is not None:
            # A purchase spread over a moment is no price: the hourly figure has its limit too.
            hourly = self.purchase_usd / (self.years * 8760)
            bounds.check(bounds.USD_PER_HOUR, hourly, "--purchase-usd over --years", "USD/h")


@dataclass(frozen=True)
class RunOptions:
    """``recommend``'s and ``rules explain``'s shared options: the workload, the machine
    (a saved facts file, saved bench figures, or no benchmark), the guidance (budget,
    team), the rule folders and the prices."""

    workload: WorkloadOptions = field(default_factory=WorkloadOptions)
    budget: Budget = Budget.NORMAL
    team: Team | None = None
    facts_file: str | None = None
    bench_file: str | None = None
    no_bench: bool = False
    rules_dirs: list[str] | None = None
    pricing: PricingOptions = field(default_factory=PricingOptions)
