"""The workload options shared by `recommend`, `estimate`, `fleet` and `rules explain`.

Each constant is a typer option a command uses as a parameter default, so the commands
spell, abbreviate and explain every workload option the same way. Closed choices are the
model's enums; counts and shapes go through :mod:`hwadvisor.parse`; the bounds are the
``Workload`` model's (``build_workload`` names the option of a value out of bounds).
"""

from __future__ import annotations

import typer

from hwadvisor import parse


class Shape(tuple[int, ...]):
    """``--input-shape`` as parsed: a tuple, so that typer reads one value, not a list."""


def count_option(text: str) -> int:
    """``--params`` / ``--dataset-size``: :func:`hwadvisor.parse.parse_count` for typer."""
    try:
        return parse.parse_count(text)
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


def shape_option(text: str) -> Shape:
    """``--input-shape``: :func:`hwadvisor.parse.parse_shape` for typer."""
    try:
        return Shape(parse.parse_shape(text))
    except ValueError as exc:
        raise typer.BadParameter(str(exc)) from None


MODEL = typer.Option(
    None,
    "--model",
    "-m",
    help="Catalog model (resnet50, bert-base, ...), module:callable or file.py:callable.",
)
PARAMS = typer.Option(
    None,
    "--params",
    parser=count_option,
    help="Parameter count, when there is no model (125000000, 1.25e8, 125M, 7B).",
)
FLOPS_PER_SAMPLE = typer.Option(
    None, "--flops-per-sample", help="Forward FLOPs per sample (real FLOPs, not MACs)."
)
BATCH_SIZE = typer.Option(None, "--batch-size", "-b", help="Samples per step and device.")
DATASET_SIZE = typer.Option(
    None,
    "--dataset-size",
    parser=count_option,
    help="Samples per epoch, for the total time (catalog models may have a default; 1.28M works).",
)
EPOCHS = typer.Option(None, "--epochs", help="Epochs (default 1).")
SEQ_LEN = typer.Option(None, "--seq-len", help="Sequence length for transformer-like models.")
INPUT_SHAPE = typer.Option(
    None,
    "--input-shape",
    parser=shape_option,
    help="Shape of one sample: 3,224,224, 3x224x224 or 128 (token ids).",
)
PRECISION = typer.Option(None, "--precision", case_sensitive=False, help="Numeric precision.")
OPTIMIZER = typer.Option(None, "--optimizer", case_sensitive=False, help="Optimizer.")
TASK = typer.Option(
    None,
    "--task",
    case_sensitive=False,
    help="train or infer (default from the scenario, else train).",
)
QPS = typer.Option(None, "--qps", help="Inference: requests per second to sustain.")
LATENCY_MS = typer.Option(None, "--latency-ms", help="Inference: latency target in ms.")
DEADLINE = typer.Option(None, "--deadline", help="Training: hours the job may take (default 24).")
CATALOG = typer.Option(None, "--catalog", help="Extra catalog YAML file (merged by id).")
