"""The advice's "Measured here" line: the figures the estimates rest on first, each as
the rules read it (reliable first; bandwidth at its largest buffer; else the fastest)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

DATA = Path(__file__).parents[1] / "data"


def test_the_line_shows_key_figures_first_as_the_rules_read_them(
    cli: Callable[..., Any], tmp_path: Path
) -> None:
    doc = json.loads((DATA / "bench" / "bf16-fast-int8-slow.json").read_text())
    base = doc["results"]
    extra = [
        # a cache-sized triad is faster than the DRAM one the rules take
        {**base[4], "shape": [1 << 20], "value": 90.0},
        # an unreliable matmul figure above the reliable one is not the one shown
        {**base[0], "value": 900.0, "reliable": False},
        {**base[0], "kernel": "batch_norm", "unit": "GB/s", "value": 8.0, "shape": [64]},
    ]
    doc["results"] = [*base, *extra]  # the last of a kind is not the one shown
    bench = tmp_path / "bench.json"
    bench.write_text(json.dumps(doc))
    facts = DATA / "facts" / "laptop.json"
    out = cli("recommend", "-s", "training", "--model", "resnet50", "--facts", str(facts),
              "--bench-file", str(bench))  # fmt: skip
    assert out.code == 0, out.err
    text = " ".join(out.out.split())
    line = text[text.index("Measured here") : text.index("Estimates")]
    assert (
        line.index("matmul") < line.index("triad") < line.index("copy") < line.index("batch_norm")
    )
    assert "matmul fp32 100 GFLOP/s" in line and "900" not in line
    assert "triad fp32 22 GB/s" in line and "90 GB/s" not in line
