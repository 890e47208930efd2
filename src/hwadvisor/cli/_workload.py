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
    help="Catalog model (resnet50, llama-3-8b, ...), module:callable, file.py:callable, or a language model's Hugging Face id (org/name, from the local cache), folder, config.json or .gguf file.",
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
OPTIMIZER = typer.Option(
    None,
    "--optimizer",
    case_sensitive=False,
    help="Optimizer: adamw, adamw8bit, paged_adamw8bit (state in host memory), sgd or adafactor.",
)
CHANNELS_LAST = typer.Option(
    False,
    "--channels-last",
    help="The model runs in torch.channels_last (NHWC): no NCHW<->NHWC transposes around tensor-core convolutions (PyTorch's default is NCHW).",
)
TASK = typer.Option(
    None,
    "--task",
    case_sensitive=False,
    help="train, infer, serve (a language model, in tokens/s) or finetune (default from the scenario: a language model serves under inference and edge; else train).",
)
QPS = typer.Option(None, "--qps", help="Inference: requests per second to sustain.")
LATENCY_MS = typer.Option(None, "--latency-ms", help="Inference: latency target in ms.")
DEADLINE = typer.Option(None, "--deadline", help="Training: hours the job may take (default 24).")
CATALOG = typer.Option(None, "--catalog", help="Extra catalog YAML file (merged by id).")
#: ``bench``, ``estimate`` and ``recommend``: the HTML report beside the output.
HTML = typer.Option(
    None, "--html", help="Also write a self-contained HTML report with charts to FILE."
)

# Language models (--task serve / finetune; docs/llm.md). Closed choices are the model's
# enums; the bounds (a context above 0, ...) are the Workload model's.
METHOD = typer.Option(
    None,
    "--method",
    case_sensitive=False,
    help="Fine-tuning method: full, lora or qlora (implies --task finetune).",
)
LORA_RANK = typer.Option(None, "--lora-rank", help="LoRA rank r (default 16).")
LORA_TARGETS = typer.Option(
    None,
    "--lora-targets",
    case_sensitive=False,
    help="Projections LoRA adapts: attn (q, k, v, o; default) or all-linear.",
)
CHECKPOINTING = typer.Option(
    None,
    "--checkpointing",
    case_sensitive=False,
    help="Fine-tuning: activation checkpointing on, off or auto (default auto: on when needed to fit).",
)
FRAMEWORK = typer.Option(
    None,
    "--framework",
    case_sensitive=False,
    help="Fine-tuning framework profile: hf (Trainer + PEFT; default), torchtune or unsloth.",
)
STRATEGY = typer.Option(
    None,
    "--strategy",
    case_sensitive=False,
    help="Fine-tuning over --gpus: ddp, fsdp, zero1, zero2 or zero3 (default: DDP when one GPU holds it, else FSDP).",
)
OFFLOAD = typer.Option(
    None,
    "--offload",
    case_sensitive=False,
    help="Fine-tuning: cpu offloads the optimizer state (and, with fsdp/zero3, the parameters) to host memory.",
)
QUANT = typer.Option(
    None,
    "--quant",
    case_sensitive=False,
    help="Serving weight format (default: the checkpoint's own dtype or format).",
)
CONTEXT = typer.Option(
    None,
    "--context",
    help="Serving: tokens of context reserved per sequence (default max(4096, prompt + output), not the model's maximum).",
)
PROMPT_TOKENS = typer.Option(
    None, "--prompt-tokens", help="Serving: prompt tokens per request (default 512)."
)
OUTPUT_TOKENS = typer.Option(
    None, "--output-tokens", help="Serving: generated tokens per request (default 128)."
)
CONCURRENCY = typer.Option(
    None,
    "--concurrency",
    help="Serving: sequences decoded together (default 1; with --qps, the most that fit memory and --latency-ms).",
)
MAX_THROUGHPUT = typer.Option(
    False,
    "--max-throughput",
    help="Serving: the most sequences the memory holds, decoded together (continuous batching), as engines' own benchmarks run.",
)
ENGINE = typer.Option(
    None,
    "--engine",
    case_sensitive=False,
    help="Serving engine class (default: llama.cpp for GGUF formats and CPUs, else vllm).",
)

# The pricing options (`estimate`, `recommend`, `fleet`): what prices the estimates.
PRICES = typer.Option(
    None,
    "--prices",
    help="Price file over the shipped instance catalog: a SkyPilot vms.csv, a gpuhunt CSV or ours.",
)
PRICE_PER_HOUR = typer.Option(
    None,
    "--price-per-hour",
    help="Own hardware: USD per hour of this machine ('here'), or of every machine of a fleet.",
)
PURCHASE_USD = typer.Option(
    None, "--purchase-usd", help="Own hardware: purchase price in USD, spread over --years."
)
YEARS = typer.Option(None, "--years", help="Own hardware: years the purchase is spread over.")
ELECTRICITY = typer.Option(
    None,
    "--electricity-usd-kwh",
    help="Own hardware: electricity in USD per kWh, added at board power (with --purchase-usd).",
)
