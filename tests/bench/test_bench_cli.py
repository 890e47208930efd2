"""`hwadvisor bench`: exit codes first, then the JSON on stdout and the --output file."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from typer.testing import CliRunner

from hwadvisor.bench import runner as runner_mod
from hwadvisor.bench.sizing import Outcome, Timing
from hwadvisor.cli import app
from hwadvisor.models.schemas import schema_for

cli = CliRunner()


@pytest.fixture(autouse=True)
def no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe is tested elsewhere; here it would only cost time."""
    import hwadvisor.cli.bench as bench_cli

    monkeypatch.setattr(bench_cli, "_facts", lambda: None)


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Canned timings instead of real ones; Ctrl-C when a test asks for it."""
    seen: list[str] = []

    def measure_case(
        torch: Any, case: Any, budget: Any, weights_left: float, clock: Any
    ) -> Outcome:
        seen.append(case.kernel)
        if "interrupt" in seen and len(seen) == 4:
            raise KeyboardInterrupt
        return Outcome(
            shape=case.ladder[case.start], timing=Timing(median_s=0.25, iqr_s=0.01, runs=5)
        )

    monkeypatch.setattr(runner_mod, "_measure_case", measure_case)
    return seen


@pytest.mark.parametrize("budget", ["0", "-3", "nan", "inf"])
def test_bad_budget_exits_2_with_one_line(budget: str) -> None:
    result = cli.invoke(app, ["bench", "--budget", budget])
    assert result.exit_code == 2
    assert "--budget must be a positive number" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_unknown_device_exits_2_with_json_error() -> None:
    result = cli.invoke(app, ["bench", "--device", "tpu", "--json"])
    assert result.exit_code == 2
    assert "unknown device 'tpu'" in result.stderr
    assert json.loads(result.stdout)["error"]["kind"] == "usage"


def test_absent_gpu_exits_2() -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = cli.invoke(app, ["bench", "--device", "cuda:0"])
    assert result.exit_code == 2
    assert "no cuda device" in result.stderr


def test_missing_torch_exits_3_with_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    result = cli.invoke(app, ["bench", "--device", "cpu"])
    assert result.exit_code == 3
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "torch is not installed: pip install 'hwadvisor[bench]'" in lines[0]
    assert "Traceback" not in result.output


def test_json_and_output_file(tmp_path: Path, canned: list[str]) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "bench.json"
    result = cli.invoke(
        app, ["bench", "--device", "cpu", "--budget", "2", "--json", "--output", str(out)]
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    jsonschema.validate(doc, schema_for("bench"))
    assert json.loads(out.read_text()) == doc
    assert doc["budget_s"] == 2.0 and not doc["interrupted"]
    kernels = {r["kernel"] for r in doc["results"]}
    assert {"matmul", "conv2d", "copy", "triad"} <= kernels
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]  # no temp file left


def test_human_output_has_table_and_chart(canned: list[str]) -> None:
    pytest.importorskip("torch")
    result = cli.invoke(app, ["bench", "--device", "cpu", "--quick"])
    assert result.exit_code == 0, result.stderr
    assert "Measured throughput" in result.stdout
    assert "Compute throughput by dtype" in result.stdout
    assert "{" not in result.stdout.splitlines()[0]


def test_ctrl_c_writes_partial_report_and_exits_130(tmp_path: Path, canned: list[str]) -> None:
    pytest.importorskip("torch")
    canned.append("interrupt")
    out = tmp_path / "partial.json"
    result = cli.invoke(app, ["bench", "--device", "cpu", "--json", "--output", str(out)])
    assert result.exit_code == 130
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    assert len(doc["results"]) == 2
    assert json.loads(result.stdout) == doc
    assert "interrupted" in result.stderr
