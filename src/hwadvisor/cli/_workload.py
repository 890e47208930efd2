"""The workload options shared by `recommend`, `estimate` and `fleet`, defined once.

Each constant is a typer option a command uses as a parameter default, so the three
commands spell, abbreviate and explain every workload option the same way.
"""

from __future__ import annotations

import typer

MODEL = typer.Option(
    None,
    "--model",
    "-m",
    help="Catalog model (resnet50, bert-base, ...), module:callable or file.py:callable.",
)
PARAMS = typer.Option(None, "--params", help="Parameter count, when there is no model.")
FLOPS_PER_SAMPLE = typer.Option(
    None, "--flops-per-sample", help="Forward FLOPs per sample (real FLOPs, not MACs)."
)
BATCH_SIZE = typer.Option(None, "--batch-size", "-b", help="Samples per step and device.")
DATASET_SIZE = typer.Option(
    None,
    "--dataset-size",
    help="Samples per epoch, for the total time (catalog models may have a default).",
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
