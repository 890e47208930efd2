"""The workload a user describes: the input to the estimator and the rule engine."""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from hwadvisor.models.common import Document


class Scenario(str, Enum):
    """What the user wants to do (SPEC §2)."""

    PROTOTYPING = "prototyping"
    TRAINING = "training"
    DISTRIBUTED = "distributed"
    INFERENCE = "inference"
    EDGE = "edge"
    PREPROCESSING = "preprocessing"


class Task(str, Enum):
    """Training or inference."""

    TRAIN = "train"
    INFER = "infer"


class Precision(str, Enum):
    """Numeric precision of the job."""

    FP32 = "fp32"
    AMP = "amp"
    BF16 = "bf16"
    FP16 = "fp16"
    INT8 = "int8"


class Optimizer(str, Enum):
    """Optimizer, which sets the bytes of state per parameter."""

    ADAMW = "adamw"
    SGD = "sgd"


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
    basis: str | None = None


class Workload(Document):
    """A workload as understood, with defaults filled in; unknown stays null."""

    model: str | None = Field(
        None, description="catalog id, module:callable, file.py:callable, or null"
    )
    kind: ModelKind = ModelKind.OTHER
    task: Task = Task.TRAIN
    params: int | None = None
    flops_per_sample: float | None = Field(
        None, description="forward FLOPs per sample (real FLOPs, not MACs)"
    )
    input_shape: list[int] | None = None
    seq_len: int | None = None
    batch_size: int = 32
    dataset_size: int | None = None
    epochs: float = 1.0
    precision: Precision = Precision.FP32
    optimizer: Optimizer = Optimizer.ADAMW
    qps: float | None = None
    latency_ms: float | None = None
    deadline_hours: float = 24.0
    source: str | None = Field(
        None, description="where the cost figures came from (catalog entry, counted, user)"
    )
    layers: int | None = Field(
        None, description="transformer blocks (activation and KV-cache memory)"
    )
    hidden: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    activation_bytes_per_sample: float | None = Field(
        None, description="fp32 activation bytes saved for backward per sample (CNN/MLP, measured)"
    )
    profile: OpProfile | None = None
    assumptions: list[str] = Field(default_factory=list)


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
