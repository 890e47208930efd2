"""Recount the catalog's ``memory_counts`` from plain-torch definitions of its models.

Each model is built on the meta device from its file under ``tests/data/models/`` and
counted by ``hwadvisor.estimate.workload.memtrack.memory_counts`` (one training step and one
inference pass on fake tensors, fp32 and amp, at two batch sizes). Prints the YAML
block of each entry; ``--write`` puts it into ``src/hwadvisor/catalog/data/models.yaml``
in place of the entry's ``memory_counts`` (or before its ``activation_depends_on``),
leaving every other line as it is. Transformer entries without a definition here keep
the formula from their shape (``estimate.activations``).

    python scripts/count_activations.py [--write] [resnet50 yolov5n]
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CATALOG = ROOT / "src" / "hwadvisor" / "catalog" / "data" / "models.yaml"
MODELS = ROOT / "tests" / "data" / "models"
#: catalog id -> (definition file, one sample's shape, token input, batches counted)
DEFINITIONS: dict[str, tuple[str, list[int], bool, tuple[int, int]]] = {
    "resnet50": ("resnet.py", [3, 224, 224], False, (2, 4)),
    "yolov5n": ("yolov5n.py", [3, 640, 640], False, (2, 4)),
}


def _builder(path: Path) -> Any:
    import torch

    spec = importlib.util.spec_from_file_location(f"_count_{path.stem}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def build() -> Any:
        with torch.device("meta"):
            return module.build()

    return build


def count(model_id: str) -> Any:
    """The counted ``MemoryCounts`` of one catalog model."""
    from hwadvisor.estimate.workload.memtrack import memory_counts

    file, shape, tokens, batches = DEFINITIONS[model_id]
    path = MODELS / file
    rel = path.relative_to(ROOT)
    import datetime

    today = datetime.date.today().isoformat()
    return memory_counts(
        _builder(path),
        shape,
        tokens=tokens,
        batches=batches,
        spec=str(rel),
        source=f"counted with hwadvisor memtrack on {rel} {today} (batches {batches[0]} and "
        f"{batches[1]}, one AdamW step and one inference pass on fake tensors)",
    )


def yaml_block(counts: Any) -> str:
    """The ``memory_counts`` block as it sits in an entry (four-space indent)."""
    data = counts.model_dump(mode="json", exclude_none=True)
    lines = ["    memory_counts:"]
    for key, value in data.items():
        if isinstance(value, dict):
            inner = ", ".join(f"{k}: {_num(v)}" for k, v in value.items())
            lines.append(f"      {key}: {{{inner}}}")
        elif isinstance(value, (list, tuple)) and value and isinstance(value[0], dict):
            lines.append(f"      {key}:")
            for item in value:
                inner = ", ".join(f"{k}: {_num(v)}" for k, v in item.items())
                lines.append(f"        - {{{inner}}}")
        elif isinstance(value, (list, tuple)):
            lines.append(f"      {key}: [{', '.join(str(v) for v in value)}]")
        elif isinstance(value, str):
            lines.append(f'      {key}: "{value}"')
        else:
            lines.append(f"      {key}: {_num(value)}")
    return "\n".join(lines) + "\n"


def _num(v: Any) -> str:
    return str(round(v)) if isinstance(v, float) and abs(v) >= 1000 else str(v)


def write(model_id: str, block: str) -> None:
    """Replace (or insert) the entry's ``memory_counts`` block in the catalog file."""
    text = CATALOG.read_text(encoding="utf-8")
    start = text.index(f"  - id: {model_id}\n")
    nxt = text.find("\n  - id: ", start + 1)
    end = len(text) if nxt < 0 else nxt + 1
    entry = text[start:end]
    entry = re.sub(r"    memory_counts:\n(      .*\n)+", "", entry)
    at = entry.index("    activation_depends_on:")
    entry = entry[:at] + block + entry[at:]
    CATALOG.write_text(text[:start] + entry + text[end:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    """Count the named catalog models (all with a definition when none named)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", default=sorted(DEFINITIONS))
    ap.add_argument("--write", action="store_true", help="update models.yaml in place")
    args = ap.parse_args(argv)
    for model_id in args.models:
        block = yaml_block(count(model_id))
        print(f"# {model_id}\n{block}", end="")
        if args.write:
            write(model_id, block)
    return 0


if __name__ == "__main__":
    sys.exit(main())
