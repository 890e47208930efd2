"""The workload a user describes: the input to the estimator and the rule engine."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from enum import Enum
from typing import Annotated, Any

from pydantic import AfterValidator, Field, ValidationError

from hwadvisor.errors import UsageError
from hwadvisor.models.common import Document
from hwadvisor.models.memory import MemoryCounts

#: The most elements one sample (``--input-shape``) may have, and so any one dimension.
MAX_SHAPE_ELEMENTS = 10**12


class Scenario(str, Enum):
    """What the user wants to do: the scenario of the job."""

    PROTOTYPING = "prototyping"
    TRAINING = "training"
    DISTRIBUTED = "distributed"
    INFERENCE = "inference"
    EDGE = "edge"
    PREPROCESSING = "preprocessing"

    @property
    def is_inference(self) -> bool:
        """Serving a trained model (``inference``, ``edge``): the job's task is ``infer``."""
        return self in INFERENCE_SCENARIOS


#: The scenarios whose job is inference rather than training: the one definition.
INFERENCE_SCENARIOS = frozenset({Scenario.INFERENCE, Scenario.EDGE})


class Task(str, Enum):
    """Training, inference, serving a language model, or fine-tuning one."""

    TRAIN = "train"
    INFER = "infer"
    SERVE = "serve"
    FINETUNE = "finetune"

    @property
    def is_llm(self) -> bool:
        """Serving or fine-tuning: priced by :mod:`hwadvisor.llm` (tokens, KV cache, LoRA)."""
        return self in (Task.SERVE, Task.FINETUNE)


class FinetuneMethod(str, Enum):
    """How a language model is fine-tuned (``--method``)."""

    FULL = "full"
    LORA = "lora"
    QLORA = "qlora"


class LoraTargets(str, Enum):
    """The projections LoRA adapts (``--lora-targets``): attention q/k/v/o, or every linear."""

    ATTN = "attn"
    ALL_LINEAR = "all-linear"


class Quant(str, Enum):
    """The weight format a language model is served in (``--quant``; catalog/data/quant.yaml)."""

    FP32 = "fp32"
    FP16 = "fp16"
    BF16 = "bf16"
    FP8 = "fp8"
    INT8 = "int8"
    Q8_0 = "q8_0"
    Q4_0 = "q4_0"
    Q4_K_M = "q4_k_m"
    AWQ = "awq"
    GPTQ = "gptq"
    NF4 = "nf4"
    Q3_K_M = "q3_k_m"
    IQ4_XS = "iq4_xs"
    Q5_K_M = "q5_k_m"
    Q6_K = "q6_k"
    MXFP4 = "mxfp4"
    NVFP4 = "nvfp4"


class ServingEngine(str, Enum):
    """The serving engine class (``--engine``; catalog/data/engines.yaml)."""

    LLAMA_CPP = "llama.cpp"
    VLLM = "vllm"
    TRANSFORMERS = "transformers"
    SGLANG = "sglang"
    TENSORRT_LLM = "tensorrt-llm"


class Precision(str, Enum):
    """Numeric precision of the job."""

    FP32 = "fp32"
    AMP = "amp"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"

    @property
    def dtype(self) -> str:
        """The dtype its products run in (a bench figure's ``dtype``): autocast runs
        them in bf16."""
        return "bf16" if self is Precision.AMP else self.value

    @property
    def weight_bytes(self) -> float:
        """Bytes a stored weight takes: mixed precision keeps fp32 weights (and casts
        them at each call, reading all four bytes)."""
        return 4.0 if self is Precision.AMP else DTYPE_BYTES[self.value]

    @property
    def activation_bytes(self) -> float:
        """Bytes an activation element takes on average: autocast keeps about half of a
        step's elementwise traffic (normalisation, softmax, losses) in fp32, so 3."""
        return 3.0 if self is Precision.AMP else DTYPE_BYTES[self.value]


#: Bytes an element of each dtype takes: the one table of them (tf32 is fp32 storage
#: with TF32 math; fp8 and int8 one byte; int4 half).
DTYPE_BYTES: dict[str, float] = {
    "fp32": 4.0,
    "tf32": 4.0,
    "bf16": 2.0,
    "fp16": 2.0,
    "fp8": 1.0,
    "int8": 1.0,
    "int4": 0.5,
}


class Optimizer(str, Enum):
    """Optimizer, which sets the bytes of state per parameter (``--optimizer``)."""

    ADAMW = "adamw"
    ADAMW8BIT = "adamw8bit"
    PAGED_ADAMW8BIT = "paged_adamw8bit"
    SGD = "sgd"
    ADAFACTOR = "adafactor"


class Checkpointing(str, Enum):
    """Activation checkpointing (``--checkpointing``): auto turns it on when needed to fit."""

    ON = "on"
    OFF = "off"
    AUTO = "auto"


class Framework(str, Enum):
    """The fine-tuning framework (``--framework``; catalog/data/frameworks.yaml)."""

    HF = "hf"
    TORCHTUNE = "torchtune"
    UNSLOTH = "unsloth"


class Strategy(str, Enum):
    """How several GPUs share a fine-tuning job (``--strategy``)."""

    DDP = "ddp"
    FSDP = "fsdp"
    ZERO1 = "zero1"
    ZERO2 = "zero2"
    ZERO3 = "zero3"


class Offload(str, Enum):
    """Where optimizer state (and, sharded, parameters) is offloaded (``--offload``)."""

    NONE = "none"
    CPU = "cpu"


class ModelKind(str, Enum):
    """Family of model: decides activation memory and per-operator structure."""

    CNN = "cnn"
    ENCODER = "encoder"
    DECODER = "decoder"
    MLP = "mlp"
    OTHER = "other"


class GemmBucket(Document):
    """Forward FLOPs of the matrix products whose typical dimension is about ``size``."""

    size: int = Field(description="effective size of the products: harmonic mean of M, N and K")
    flops: float


#: The op-profile family of a recurrent layer's one fused call (LSTM, GRU): its products
#: are counted apart; the call itself is priced as one operator launch.
RNN_LAYER = "rnn_layer"


class OpGroup(Document):
    """Operators of one family in one pass: the unit the time model prices.

    ``bytes`` is what one of them reads and writes per sample in fp32 on average (not
    cost-weighted), so ``count x bytes x batch`` is what the group moves in a step.
    Products (``bytes`` 0) and convolutions (their tensors' bytes) appear too, so launches
    can be priced by kind.
    """

    family: str = Field(
        description="eltwise, batch_norm, batch_norm_backward, max_pool, dropout, layer_norm, softmax, softmax_backward (priced as eltwise on a CPU), gelu, masked_fill, where, conv, gemm, bmm (batched products), view (no kernel, no bytes), module (a module call: host cost only), rnn_layer (a recurrent layer's call on a CPU: its call's own cost only)"
    )
    backward: bool = False
    count: int = Field(ge=0, description="how many such operators per pass")
    bytes: float = Field(ge=0, description="fp32 bytes read + written by one of them per sample")


class OpProfile(Document):
    """Per-operator structure of one forward pass of one sample (batch-independent parts apart).

    The time model prices each class separately: products at the measured (or catalog)
    matrix rate for their size, convolutions at the convolution rate, memory-bound
    operators (normalisation, activations, element-wise) by their bytes over bandwidth.
    """

    gemm: list[GemmBucket] = Field(default_factory=list)
    conv: list[GemmBucket] = Field(
        default_factory=list, description="convolution FLOPs by the size of their implicit product"
    )
    conv_flops: float = 0.0
    other_flops: float = 0.0
    memory_bytes: float = Field(
        0.0, description="fp32 bytes read+written by memory-bound operators, weighted by their cost"
    )
    kernels: int = Field(0, description="operator launches per forward pass")
    backward_memory_bytes: float | None = Field(
        None,
        description="cost-weighted bytes of the backward's memory-bound operators per sample (null: 2x forward)",
    )
    backward_kernels: int | None = Field(
        None, description="operator launches per backward pass (null: 2x forward)"
    )
    op_groups: list[OpGroup] = Field(
        default_factory=list,
        description="memory-bound operators by family, products and convolutions by count (empty: only the totals above are known)",
    )
    basis: str | None = None


def _not_too_many_elements(shape: list[int]) -> list[int]:
    n = math.prod(shape)
    if n > MAX_SHAPE_ELEMENTS:
        raise ValueError(
            f"has {_g(n)} elements per sample, over the limit of {MAX_SHAPE_ELEMENTS:g}"
        )
    return shape


#: One sample's shape: positive dimensions, at most MAX_SHAPE_ELEMENTS elements in all.
SampleShape = Annotated[
    list[Annotated[int, Field(gt=0, le=MAX_SHAPE_ELEMENTS)]],
    Field(min_length=1),
    AfterValidator(_not_too_many_elements),
]


class LlmQuantization(Document):
    """What a checkpoint's ``quantization_config`` says."""

    method: str
    bits: int | None = None
    group_size: int | None = None
    format_id: str | None = Field(None, description="the --quant format it maps to, when known")
    skip: list[str] = Field(
        default_factory=list,
        description="parts the checkpoint keeps 16-bit (attention, router, embedding, head, ...)",
    )


class LlmShape(Document):
    """A decoder-only language model's shape, as its config states it (see docs/llm.md)."""

    name: str
    layers: int = Field(gt=0)
    hidden: int = Field(gt=0)
    heads: int = Field(gt=0)
    kv_heads: int = Field(gt=0, description="KV heads (grouped-query / multi-query attention)")
    head_dim: int = Field(gt=0)
    intermediate: int = Field(gt=0)
    vocab: int = Field(gt=0)
    tied_embeddings: bool = False
    gated_mlp: bool = True
    attention_bias: bool = False
    norms_per_layer: int = Field(2, ge=0)
    experts: int = Field(1, ge=1)
    experts_per_token: int = Field(1, ge=1)
    expert_intermediate: int | None = Field(None, gt=0)
    sliding_window: int | None = Field(None, gt=0)
    sliding_layers: list[bool] = Field(
        default_factory=list,
        description="one flag per layer: true where it attends over the window",
    )
    max_context: int | None = Field(None, gt=0, description="the advertised maximum context")
    dtype: str = "bfloat16"
    quantization: LlmQuantization | None = None
    params_total: int = Field(gt=0, description="every parameter the checkpoint stores")
    params_active: int = Field(gt=0, description="parameters one token uses (MoE: routed experts)")
    weight_file_bytes: int | None = Field(
        None, ge=0, description="bytes of the weight files found beside the config (exact)"
    )
    origin: str = Field("catalog", description="catalog, config, gguf or hub")
    source: str = ""
    q_lora_rank: int | None = Field(None, gt=0, description="MLA: query low-rank width")
    kv_lora_rank: int | None = Field(
        None, gt=0, description="MLA: the cached KV latent width (set: multi-head latent attention)"
    )
    qk_rope_head_dim: int | None = Field(None, gt=0, description="MLA: the cached rope key width")
    v_head_dim: int | None = Field(None, gt=0, description="MLA: value head width")
    shared_experts: int = Field(0, ge=0, description="MoE: shared experts every token uses")
    shared_intermediate: int | None = Field(None, gt=0, description="MoE: shared experts' width")
    dense_layers: int = Field(0, ge=0, description="MoE: first layers with a dense MLP")
    moe_layer_step: int = Field(1, ge=1, description="MoE: every n-th layer has experts")
    mtp_layers: int = Field(0, ge=0, description="multi-token-prediction modules, counted apart")
    params_mtp: int = Field(0, ge=0, description="parameters of the MTP modules (not in totals)")
    attention_sinks: bool = Field(False, description="a learned sink logit per head (gpt-oss)")
    chunked_attention: bool = Field(
        False, description="the windowed layers attend within chunks (Llama-4)"
    )


class Workload(Document):
    """A workload as understood, with defaults filled in; unknown stays null."""

    # The bounds are the options' limits (bad input is exit 2): every size above
    # zero and finite, none past a cap far beyond any real job (a trillion-parameter model
    # is 1e12, a year-long deadline 8760 h) yet small enough that products of them (FLOPs
    # x samples x epochs, bytes x batch) stay finite floats. checked_workload names the
    # option of a value out of bounds.

    model: str | None = Field(
        None, description="catalog id, module:callable, file.py:callable, or null"
    )
    kind: ModelKind = ModelKind.OTHER
    task: Task = Task.TRAIN
    params: int | None = Field(None, gt=0, le=10**15)
    param_tensors: int | None = Field(
        None,
        gt=0,
        le=10**9,
        description="parameter tensors the optimizer updates, where counted: on a CPU its for-loop pays a cost per tensor",
    )
    flops_per_sample: float | None = Field(
        None,
        gt=0,
        le=1e21,
        allow_inf_nan=False,
        description="forward FLOPs per sample (real FLOPs, not MACs)",
    )
    input_shape: SampleShape | None = None
    seq_len: int | None = Field(None, gt=0, le=10**8)
    batch_size: int = Field(32, gt=0, le=10**9)
    dataset_size: int | None = Field(None, gt=0, le=10**15)
    epochs: float = Field(1.0, gt=0, le=1e6, allow_inf_nan=False)
    precision: Precision = Precision.FP32
    optimizer: Optimizer = Optimizer.ADAMW
    channels_last: bool = Field(
        False,
        description="convolution tensors in NHWC (torch.channels_last); false is PyTorch's default NCHW, which tensor-core convolutions transpose around each call",
    )
    qps: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    latency_ms: float | None = Field(None, gt=0, le=1e9, allow_inf_nan=False)
    deadline_hours: float = Field(24.0, gt=0, le=1e6, allow_inf_nan=False)
    source: str | None = Field(
        None, description="where the cost figures came from (catalog entry, counted, user)"
    )
    layers: int | None = Field(
        None, gt=0, description="transformer blocks (activation and KV-cache memory)"
    )
    hidden: int | None = Field(None, gt=0)
    heads: int | None = Field(None, gt=0)
    kv_heads: int | None = Field(None, gt=0)
    activation_bytes_per_sample: float | None = Field(
        None,
        ge=0,
        allow_inf_nan=False,
        description="fp32 activation bytes saved for backward per sample (CNN/MLP, measured)",
    )
    memory_counts: MemoryCounts | None = Field(
        None,
        description="a model with code (module:callable, file.py:callable): its memory peaks counted on fake tensors (one training step and one inference pass, at two batch sizes, per precision); null when the memory rests on a formula or the catalog",
    )
    profile: OpProfile | None = None
    # Language models (--task serve / finetune): the options, with their defaults, and the
    # shape read from the catalog, a config.json, a GGUF file or the Hugging Face cache.
    method: FinetuneMethod | None = Field(
        None, description="fine-tuning method (--task finetune; lora when not given)"
    )
    lora_rank: int = Field(16, gt=0, le=65536, description="LoRA rank r")
    lora_targets: LoraTargets = Field(
        LoraTargets.ATTN, description="projections LoRA adapts: attn (q, k, v, o) or all-linear"
    )
    quant: Quant | None = Field(
        None, description="serving weight format (null: the checkpoint's own dtype or format)"
    )
    context: int = Field(
        4096,
        gt=0,
        le=10**7,
        description="tokens of context reserved per sequence (KV cache); not the model's advertised maximum",
    )
    prompt_tokens: int = Field(512, ge=0, le=10**7, description="prompt tokens per request")
    output_tokens: int = Field(128, ge=0, le=10**7, description="generated tokens per request")
    concurrency: int = Field(1, gt=0, le=10**6, description="sequences decoded together")
    max_throughput: bool = Field(
        False, description="--max-throughput: serve at the most sequences the memory holds"
    )
    concurrency_auto: bool = Field(
        False,
        description="serving: the concurrency is chosen per device by continuous batching (--qps or --max-throughput without --concurrency): the most sequences that fit its memory and meet --latency-ms",
    )
    engine: ServingEngine | None = Field(
        None,
        description="serving engine class (null: llama.cpp for GGUF formats and CPUs, else vllm)",
    )
    checkpointing: Checkpointing | None = Field(
        None, description="activation checkpointing: on, off or auto (null: auto)"
    )
    framework: Framework | None = Field(
        None, description="fine-tuning framework profile (null: hf)"
    )
    strategy: Strategy | None = Field(
        None, description="multi-GPU strategy (null: DDP when one GPU holds the job, else FSDP)"
    )
    offload: Offload | None = Field(None, description="optimizer/parameter offload (null: none)")
    llm: LlmShape | None = Field(
        None, description="the language model's shape, when the model is one"
    )
    assumptions: list[str] = Field(default_factory=list)

    @property
    def priced_by_llm(self) -> bool:
        """Priced by the language-model physics: serving, fine-tuning, and training a
        language model whose shape is known (its full fine-tuning, the same job)."""
        return self.task.is_llm or (self.task is Task.TRAIN and self.llm is not None)


#: The options of language-model workloads (fine-tuning's, then serving's), as
#: :func:`~hwadvisor.estimate.build_workload` takes them.
LLM_OPTIONS = (
    "method",
    "lora_rank",
    "lora_targets",
    "quant",
    "context",
    "prompt_tokens",
    "output_tokens",
    "concurrency",
    "engine",
    "checkpointing",
    "framework",
    "strategy",
    "offload",
)

#: The command-line option of each workload field a user gives (the others are derived).
OPTIONS = {
    "model": "--model",
    "task": "--task",
    "params": "--params",
    "flops_per_sample": "--flops-per-sample",
    "input_shape": "--input-shape",
    "seq_len": "--seq-len",
    "batch_size": "--batch-size",
    "dataset_size": "--dataset-size",
    "epochs": "--epochs",
    "precision": "--precision",
    "optimizer": "--optimizer",
    "qps": "--qps",
    "latency_ms": "--latency-ms",
    "deadline_hours": "--deadline",
    "method": "--method",
    "lora_rank": "--lora-rank",
    "lora_targets": "--lora-targets",
    "quant": "--quant",
    "context": "--context",
    "prompt_tokens": "--prompt-tokens",
    "output_tokens": "--output-tokens",
    "concurrency": "--concurrency",
    "max_throughput": "--max-throughput",
    "engine": "--engine",
    "checkpointing": "--checkpointing",
    "framework": "--framework",
    "strategy": "--strategy",
    "offload": "--offload",
}


def checked_workload(fields: Mapping[str, Any], *, derived: bool = False) -> Workload:
    """``Workload(**fields)``; a value out of bounds is one UsageError naming its option.

    ``derived``: the fields were computed from options already checked (FLOPs rescaled
    for a longer sequence, say), and the message says so.
    """
    try:
        return Workload.model_validate(fields)
    except ValidationError as exc:
        raise workload_usage_error(exc, derived=derived) from None


def workload_usage_error(exc: ValidationError, *, derived: bool = False) -> UsageError:
    """The first error of a Workload validation as one line: ``--params must be > 0, got -1``."""
    err = exc.errors(include_url=False)[0]
    loc = err["loc"]
    field = str(loc[0]) if loc else "workload"
    name = OPTIONS.get(field, f"the workload's {field}")
    if derived:
        name += ", as the other options give it,"
    if len(loc) > 1 and field == "input_shape":
        name += " dimensions"
    got = "" if err["type"] == "value_error" else f", got {_shown(err.get('input'))}"
    return UsageError(f"{name} {_reason(err)}{got}")


def _reason(err: Any) -> str:
    kind, ctx = err["type"], err.get("ctx") or {}
    reasons = {
        "greater_than": lambda: f"must be > {ctx['gt']}",
        "greater_than_equal": lambda: f"must be >= {ctx['ge']}",
        "less_than_equal": lambda: f"must be at most {_g(ctx['le'])}",
        "finite_number": lambda: "must be a finite number",
        "enum": lambda: "must be one of " + "|".join(re.findall(r"'([^']*)'", ctx["expected"])),
        "too_short": lambda: "must have at least one dimension",
        "int_from_float": lambda: "must be a whole number",
        "int_parsing": lambda: "must be a whole number",
        "float_parsing": lambda: "must be a number",
        "value_error": lambda: str(ctx.get("error", err["msg"])),
    }
    reason = reasons.get(kind)
    return reason() if reason else str(err["msg"]).lower()


def _g(value: float) -> str:
    """``1e+15`` for a number of any size (a huge int has no float)."""
    try:
        return f"{float(value):g}"
    except OverflowError:
        return f"{Decimal(int(value)):.3e}"


def _shown(value: object) -> str:
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) for v in value):
        return ",".join(str(v) for v in value) or "nothing"
    if isinstance(value, float) or (isinstance(value, int) and abs(value) > 10**16):
        return _g(value)
    if isinstance(value, Enum):
        return repr(value.value)
    return repr(value) if isinstance(value, str) else str(value)


class Budget(str, Enum):
    """The user's budget (``--budget``)."""

    LOW = "low"
    NORMAL = "normal"
    HIGH = "high"


class Team(str, Enum):
    """The team's operations experience (``--team``)."""

    NEW = "new"
    EXPERIENCED = "experienced"
    CLUSTER = "cluster"
