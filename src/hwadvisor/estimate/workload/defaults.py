"""Defaults a practitioner would choose when the user leaves precision or batch unsaid.

Transformer language models (encoders and decoders, and a bare ``--params`` job, priced
as a decoder) are trained in mixed precision: bf16 autocast with fp32 master weights
(fp16 with loss scaling where a GPU has no bf16), as the LLaMA and BERT recipes do, not
fp32. Their batch is counted in tokens: the micro-batch per device holds about 4,096
tokens (BERT's fine-tuning batch of 32 sequences of 128, Devlin et al. 2019,
arXiv:1810.04805, §A.3), at least one sequence, and gradient accumulation makes up the
global batch (millions of tokens for pre-training: LLaMA used 4 M, arXiv:2302.13971
§2.3). Serving keeps batch 1 and the 16-bit weights the checkpoints are published in.
Other models keep fp32 and batch 32 (training) or 1 (inference). Each default chosen is
stated in the workload's assumptions.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from hwadvisor.models.workload import ModelKind, Precision, Task

#: Sequence length assumed when a transformer's is not given: the training context of
#: GPT-3 and LLaMA (2048) for decoders, BERT's longest (512) for encoders.
DEFAULT_SEQ = {ModelKind.DECODER: 2048, ModelKind.ENCODER: 512, ModelKind.OTHER: 2048}

#: Tokens in one device's micro-batch when the batch is not given.
TOKENS_PER_MICROBATCH = 4096
#: Batch when nobody says: a common default for training and for batched inference;
#: fine-tuning a language model runs micro-batches of one sequence (gradient
#: accumulation makes the effective batch), serving batches --concurrency sequences.
DEFAULT_BATCH = {Task.TRAIN: 32, Task.INFER: 1, Task.SERVE: 1, Task.FINETUNE: 1}
_LLM = (ModelKind.ENCODER, ModelKind.DECODER)
#: The words of the note a precision chosen here carries (``precision_defaulted``).
BY_DEFAULT = "by default"


def precision_defaulted(assumptions: list[str]) -> bool:
    """Whether the workload's precision was chosen here rather than given (its note)."""
    return any(a.startswith("precision ") and BY_DEFAULT in a.split("(")[0] for a in assumptions)


@dataclass(frozen=True)
class Defaults:
    """The precision and batch to use, and a note for each one that was chosen."""

    precision: Precision
    batch: int
    notes: list[str] = field(default_factory=list)


def practitioner_defaults(
    kind: ModelKind,
    task: Task,
    seq_len: int | None,
    *,
    precision: Precision | None = None,
    batch_size: int | None = None,
    params_only: bool = False,
) -> Defaults:
    """Fill ``precision`` and ``batch_size`` where they are None (given values are kept).

    ``params_only``: the job is a bare parameter count, priced as a decoder.
    """
    llm = kind in _LLM or params_only
    train = task.value in ("train", "finetune")
    notes: list[str] = []
    if precision is None:
        if llm and train:
            precision = Precision.AMP
            notes.append(
                f"precision amp {BY_DEFAULT} (bf16 autocast with fp32 master weights, as "
                "language models are trained); give --precision fp32 to change it"
            )
        elif llm:
            precision = Precision.BF16
            notes.append(
                f"precision bf16 {BY_DEFAULT} (16-bit weights, as checkpoints are published)"
            )
        else:
            precision = Precision.FP32
    if batch_size is None:
        if llm and train:
            seq = seq_len or DEFAULT_SEQ.get(kind, DEFAULT_SEQ[ModelKind.DECODER])
            batch_size = max(1, TOKENS_PER_MICROBATCH // seq)
            at = f"seq {seq}" if seq_len else f"the assumed seq {seq}"
            notes.append(
                f"batch {batch_size} per device by default ({TOKENS_PER_MICROBATCH} tokens "
                f"at {at}; gradient accumulation makes up the global batch); "
                "give --batch-size to change it"
            )
        else:
            batch_size = DEFAULT_BATCH[Task.TRAIN if train else Task.INFER]
    return Defaults(precision=precision, batch=batch_size, notes=notes)
