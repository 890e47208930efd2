"""`hwadvisor bench`: exit codes first, then the JSON on stdout and the --output file."""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.bench import runner as runner_mod
from hwadvisor.bench.sizing import OutOfTime, SizingOutcome, Timing, Unsupported
from hwadvisor.models.schemas import schema_for

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]


@pytest.fixture(autouse=True)
def no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The probe is tested elsewhere; here it would only cost time."""
    import hwadvisor.pipeline.commands as commands

    monkeypatch.setattr(commands, "probe_or_none", lambda: None)


@pytest.fixture
def canned(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Canned timings through run_bench's ``measure`` seam; Ctrl-C when a test asks for it.

    The command reaches the real :func:`run_bench` through ``hwadvisor.bench``; the
    fixture hands it the seam there, so everything but the timing itself runs.
    """
    seen: list[str] = []

    def measure(torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        seen.append(case.kernel)
        if "interrupt" in seen and len(seen) == 4:
            raise KeyboardInterrupt
        return SizingOutcome(
            shape=case.ladder[case.start], timing=Timing(median_s=1e-3, iqr_s=1e-5, runs=5)
        )

    import hwadvisor.bench

    monkeypatch.setattr(
        hwadvisor.bench, "run_bench", functools.partial(runner_mod.run_bench, measure=measure)
    )
    return seen


@pytest.fixture
def worst(monkeypatch: pytest.MonkeyPatch) -> None:
    """A run with as much to say as a CPU run can have: a busy machine, every figure
    unsteady, a dtype torch cannot run, and figures the budget had no time for."""
    import hwadvisor.bench

    def measure(torch: Any, case: Any, allot_s: float, clock: Any) -> SizingOutcome:
        if case.dtype == "int8":
            raise Unsupported("\"_int_mm_cpu\" not implemented for 'Char' on this CPU build")
        if case.ladder[case.start] == (2048, 2048, 2048):
            raise OutOfTime("2048³: no time left in the budget")
        shape = case.ladder[case.start]
        return SizingOutcome(shape=shape, timing=Timing(median_s=1e-3, iqr_s=3e-4, runs=5))

    run = functools.partial(runner_mod.run_bench, measure=measure, load_reader=lambda: 5.0)
    monkeypatch.setattr(hwadvisor.bench, "run_bench", run)


@pytest.mark.parametrize("budget", ["0", "-3", "nan", "inf"])
def test_bad_budget_exits_2_with_one_line(cli: Cli, budget: str) -> None:
    result = cli("bench", "--budget", budget)
    assert result.code == 2
    assert "--budget must be a positive number" in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_unknown_device_exits_2_with_json_error(cli: Cli) -> None:
    result = cli("bench", "--device", "tpu", "--json")
    assert result.code == 2
    assert "unknown device 'tpu'" in result.err
    assert json.loads(result.out)["error"]["kind"] == "usage"


def test_absent_gpu_exits_2(cli: Cli) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    result = cli("bench", "--device", "cuda:0")
    assert result.code == 2
    assert "no cuda device" in result.err


def test_missing_torch_exits_3_with_one_line(cli: Cli, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)
    result = cli("bench", "--device", "cpu")
    assert result.code == 3
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "torch is not installed: pip install 'hwadvisor[bench]'" in lines[0]
    assert "Traceback" not in result.err


def test_json_and_output_file(cli: Cli, tmp_path: Path, canned: list[str]) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "bench.json"
    result = cli("bench", "--device", "cpu", "--budget", "2", "--json", "--output", str(out))
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    jsonschema.validate(doc, schema_for("bench"))
    assert json.loads(out.read_text()) == doc
    assert doc["budget_s"] == 2.0 and not doc["interrupted"]
    kernels = {r["kernel"] for r in doc["results"]}
    assert {"matmul", "conv2d", "conv2d_backward", "copy", "triad", "dispatch"} <= kernels
    assert [p.name for p in tmp_path.iterdir()] == ["bench.json"]  # no temp file left


def test_human_output_is_a_summary_and_verbose_lists_every_figure(
    cli: Cli, canned: list[str]
) -> None:
    pytest.importorskip("torch")
    result = cli("bench", "--device", "cpu", "--budget", "5")
    assert result.code == 0, result.err
    assert "Measured throughput" in result.out and "{" not in result.out.splitlines()[0]
    rows = [ln for ln in result.out.splitlines() if ln.startswith("cpu ")]
    assert len([r for r in rows if r.split()[1:3] == ["matmul", "fp32"]]) == 1  # its best
    verbose = cli("bench", "--device", "cpu", "--budget", "5", "--verbose")
    assert verbose.code == 0, verbose.err
    rows = [ln for ln in verbose.out.splitlines() if ln.startswith("cpu ")]
    assert len([r for r in rows if r.split()[1:3] == ["matmul", "fp32"]]) > 1  # every size
    assert "Compute throughput by dtype" in verbose.out


def test_the_default_view_fits_one_screen_at_80_columns(
    cli: Cli, worst: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("torch")
    from hwadvisor.render import stdout_console

    monkeypatch.setenv("COLUMNS", "80")
    stdout_console.cache_clear()
    try:
        result = cli("bench", "--device", "cpu", "--budget", "5")
    finally:
        stdout_console.cache_clear()
    assert result.code == 0, result.err
    lines = result.out.rstrip("\n").splitlines()
    assert len(lines) <= 40, result.out
    assert max(len(ln) for ln in lines) <= 80
    text = " ".join(result.out.split())
    assert "not implemented for 'Char'" in text and "a longer --budget measures them" in text
    assert "busy" in text and "unsteady" in text


def test_ctrl_c_writes_partial_report_and_exits_130(
    cli: Cli, tmp_path: Path, canned: list[str]
) -> None:
    pytest.importorskip("torch")
    canned.append("interrupt")
    out = tmp_path / "partial.json"
    result = cli("bench", "--device", "cpu", "--json", "--output", str(out))
    assert result.code == 130
    doc = json.loads(out.read_text())
    assert doc["interrupted"] is True
    assert len(doc["results"]) == 2
    assert json.loads(result.out) == doc
    assert "interrupted" in result.err
