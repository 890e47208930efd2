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


class Workload(Document):
    """A workload as understood, with defaults filled in; unknown stays null."""

    model: str | None = Field(None, description="catalog id, module:callable, file.py:callable, or null")
    kind: ModelKind = ModelKind.OTHER
    task: Task = Task.TRAIN
    params: int | None = None
    flops_per_sample: float | None = Field(None, description="forward FLOPs per sample (real FLOPs, not MACs)")
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
    source: str | None = Field(None, description="where the cost figures came from (catalog entry, counted, user)")
