"""`hwadvisor estimate` and `hwadvisor catalog`: exit codes first, then the output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.schemas import schema_for

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"


def test_estimate_json_catalog_devices(cli: Cli) -> None:
    code, out, _ = cli(
        "estimate",
        "--model",
        "bert-base",
        "--task",
        "infer",
        "--on",
        "t4",
        "--on",
        "a10",
        "--no-bench",
        "--json",
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"].startswith("1.")
    assert doc["workload"]["model"] == "bert-base" and doc["workload"]["task"] == "infer"
    assert [e["device"] for e in doc["estimates"]] == ["t4", "a10"]
    for e in doc["estimates"]:
        assert e["step_time_s"] > 0 and e["fits"] is True and e["assumptions"]
    from hwadvisor.models.schemas import schema_for

    jsonschema.validate(doc, schema_for("estimate"))


def test_estimate_human_output_has_table_and_chart(cli: Cli) -> None:
    code, out, _ = cli(
        "estimate",
        "--params",
        "7e9",
        "--seq-len",
        "2048",
        "--batch-size",
        "2",
        "--on",
        "a100-80gb",
        "--on",
        "h200",
        "--no-bench",
        "--dataset-size",
        "1000",
    )
    assert code == 0
    assert "a100-80gb" in out and "h200" in out
    assert "log scale" in out and "█" in out
    assert "does not fit" in out and "Fixes in order" in out


@pytest.mark.slow  # a user model in the contained child (a torch import)
def test_estimate_user_model_here_with_bench_file(cli: Cli, tmp_path: Path) -> None:
    bench = {
        "schema_version": "1.0",
        "budget_s": 1,
        "elapsed_s": 1,
        "results": [
            {
                "device": "cpu",
                "kernel": "matmul",
                "dtype": "fp32",
                "shape": [512, 512, 512],
                "value": 100.0,
                "unit": "GFLOP/s",
                "median_s": 0.01,
                "iqr_s": 0.0,
                "runs": 3,
            },
            {
                "device": "cpu",
                "kernel": "triad",
                "dtype": "fp32",
                "shape": [1048576],
                "value": 10.0,
                "unit": "GB/s",
                "median_s": 0.01,
                "iqr_s": 0.0,
                "runs": 3,
            },
        ],
    }
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(bench))
    code, out, _ = cli(
        "estimate",
        "--model",
        f"{MODELS}/mlp.py:build",
        "--input-shape",
        "784",
        "--on",
        "here",
        "--bench-file",
        str(path),
        "--json",
    )
    assert code == 0
    here = json.loads(out)["estimates"][0]
    assert here["device"] == "here" and here["step_time_s"] > 0
    assert "measured here" in here["basis"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--model", "resnet18"], "did you mean resnet50"),
        (["--model", "resnet50", "--on", "a100-120gb"], "did you mean a100"),
        (["--model", f"{MODELS}/mlp.py:tiny", "--input-shape", "3,x"], "--input-shape"),
        (["--model", "resnet50", "--batch-size", "0"], "--batch-size"),
        (["--model", "resnet50", "--precision", "fp64"], "--precision"),
        (["--model", f"{MODELS}/broken.py:build", "--input-shape", "3"], "broken on purpose"),
    ],
)
def test_bad_input_is_one_line_exit_2(cli: Cli, args: list[str], needle: str) -> None:
    code, out, err = cli("estimate", *args, "--no-bench", "--json")
    assert code == 2
    assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert json.loads(out)["error"]["exit_code"] == 2


def test_catalog_devices_json_and_user_file(cli: Cli, tmp_path: Path) -> None:
    user = tmp_path / "mine.yaml"
    user.write_text(
        "devices:\n  - id: my-npu\n    name: My NPU\n    kind: soc\n    vendor: me\n"
        "    peaks_tflops: {fp32: 1.0}\n    memory_bytes: 8000000000\n    bandwidth_gb_s: 50\n"
        "    interconnect: {kind: none}\n    achieved: {gemm: 0.5, cnn_train: 0.2, transformer_train: 0.2,"
        " inference: 0.2, memory: 0.7, source: guess}\n    source: my own datasheet\n    date: '2026-01'\n"
    )
    code, out, _ = cli("catalog", "devices", "--json", "--catalog", str(user))
    assert code == 0
    ids = [d["id"] for d in json.loads(out)["devices"]]
    assert "my-npu" in ids and "h100-sxm" in ids
    code, out, _ = cli(
        "estimate",
        "--model",
        "resnet50",
        "--on",
        "my-npu",
        "--catalog",
        str(user),
        "--no-bench",
        "--json",
    )
    assert code == 0 and json.loads(out)["estimates"][0]["device"] == "my-npu"


def test_catalog_models_table_and_bad_kind(cli: Cli) -> None:
    code, out, _ = cli("catalog", "models")
    assert code == 0 and "resnet50" in out and "llama-7b" in out
    code, _, err = cli("catalog", "model")
    assert code == 2 and "did you mean models" in err


def _guidance(cli: Cli, *extra: str) -> Any:
    code, out, err = cli(
        "estimate", "--model", "resnet50", "--on", "t4", "--no-bench", "--json", *extra
    )
    assert code == 0, err
    doc = json.loads(out)

    jsonschema.validate(doc, schema_for("estimate"))
    return doc


def test_estimate_gives_the_guidance_for_budget_and_team(
    cli: Cli,
) -> None:
    """SPEC §1: the team lead gets the guidance that applies (budget, team experience)."""
    doc = _guidance(cli, "--budget", "low", "--team", "new")
    assert (doc["scenario"], doc["budget"], doc["team"]) == ("training", "low", "new")
    rules = {f["rule"]: f for f in doc["guidance"]}
    assert "HW502" in rules and rules["HW502"]["source"] == ["C2", "S1"]
    assert "CPU cloud instances" in rules["HW502"]["message"]


def test_guidance_follows_the_options_and_the_scenario(
    cli: Cli,
) -> None:
    plain = _guidance(cli)
    assert (plain["budget"], plain["team"]) == ("normal", None)
    team_rules = {"HW501", "HW502", "HW503", "HW504", "HW505"}
    assert not team_rules & {f["rule"] for f in plain["guidance"]}
    cluster = _guidance(cli, "--team", "cluster")
    assert "HW503" in {f["rule"] for f in cluster["guidance"]}
    # HW502 is advice for prototyping and training, not for serving.
    serving = _guidance(cli, "--task", "infer", "--budget", "low", "--team", "new")
    assert serving["scenario"] == "inference"
    assert "HW502" not in {f["rule"] for f in serving["guidance"]}


def test_human_estimate_prints_the_guidance(cli: Cli) -> None:
    code, out, _ = cli(
        "estimate", "--model", "resnet50", "--on", "t4", "--no-bench", "--team", "cluster"
    )
    assert code == 0
    assert "guidance (training, budget normal, team cluster)" in out
    assert "HW503" in out
