"""The workload options shared by `recommend`, `estimate` and `fleet`, defined once.

Each constant is a typer option a command uses as a parameter default, so the three
commands spell, abbreviate and explain every workload option the same way.
"""

from __future__ import annotations

import re
from decimal import Decimal

import typer

_COUNT = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kmbgt]?)\s*$", re.IGNORECASE)
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
#: Counts past 10^30 are refused here; the workload's own limits are far lower.
_MAX_DIGITS = 30


def parse_count(text: str) -> int:
    """A count as people write it: ``125000000``, ``1.25e8``, ``125M``, ``7B``, ``1.5k``.

    The result must be a whole number; limits (above 0, not absurd) are the workload's.
    """
    m = _COUNT.match(text)
    if not m:
        raise typer.BadParameter(
            f"{text!r} is not a count (write e.g. 125000000, 1.25e8, 125M or 7B)"
        )
    # Decimal, not float: 16.1k is 16100 exactly, where 16.1 * 1000 is 16100.000000000002.
    value = Decimal(m.group(1)) * _SCALE[m.group(2).lower()]
    if value.adjusted() > _MAX_DIGITS:
        raise typer.BadParameter(f"{text!r} is too large")
    if value != value.to_integral_value():
        raise typer.BadParameter(f"{text!r} is not a whole number")
    return int(value)


MODEL = typer.Option(
    None,
    "--model",
    "-m",
    help="Catalog model (resnet50, bert-base, ...), module:callable or file.py:callable.",
)
PARAMS = typer.Option(
    None,
    "--params",
    parser=parse_count,
    help="Parameter count, when there is no model (125000000, 1.25e8, 125M, 7B).",
)
FLOPS_PER_SAMPLE = typer.Option(
    None, "--flops-per-sample", help="Forward FLOPs per sample (real FLOPs, not MACs)."
)
BATCH_SIZE = typer.Option(None, "--batch-size", "-b", help="Samples per step and device.")
DATASET_SIZE = typer.Option(
    None,
    "--dataset-size",
    parser=parse_count,
    help="Samples per epoch, for the total time (catalog models may have a default; 1.28M works).",
)
EPOCHS = typer.Option(None, "--epochs", help="Epochs (default 1).")
SEQ_LEN = typer.Option(None, "--seq-len", help="Sequence length for transformer-like models.")
INPUT_SHAPE = typer.Option(
    None, "--input-shape", help="Shape of one sample, e.g. 3,224,224 or 128 (token ids)."
)
PRECISION = typer.Option(None, "--precision", help="fp32, amp, bf16, fp16 or int8.")
OPTIMIZER = typer.Option(None, "--optimizer", help="adamw or sgd.")
TASK = typer.Option(None, "--task", help="train or infer (default from the scenario, else train).")
QPS = typer.Option(None, "--qps", help="Inference: requests per second to sustain.")
LATENCY_MS = typer.Option(None, "--latency-ms", help="Inference: latency target in ms.")
DEADLINE = typer.Option(None, "--deadline", help="Training: hours the job may take (default 24).")
CATALOG = typer.Option(None, "--catalog", help="Extra catalog YAML file (merged by id).")
