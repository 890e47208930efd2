"""`hwadvisor recommend` and `hwadvisor rules`: exit codes first, then the output."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.plain import SCHEMA_VERSION
from hwadvisor.models.schemas import schema_for

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

FACTS = Path(__file__).parents[1] / "data" / "facts"


def recommend(cli: Cli, machine: str, *extra: str) -> tuple[int, str, str]:
    return cli("recommend", "--facts", str(FACTS / f"{machine}.json"), "--no-bench", *extra)


def test_json_advice_follows_the_published_schema(cli: Cli) -> None:
    code, out, err = recommend(
        cli,
        "laptop",
        "--scenario",
        "training",
        "--model",
        "resnet50",
        "--dataset-size",
        "1281167",
        "--json",
    )
    assert code == 0, err
    doc = json.loads(out)
    jsonschema.validate(doc, schema_for("advice"))
    assert doc["verdict"]["device"] == "gpu" and doc["verdict"]["fits_here"] is False
    assert doc["machine"]["from_file"].endswith("laptop.json")
    assert doc["estimates"]["here"]["device"] == "here" and doc["estimates"]["alternatives"]
    assert {"HW601", "HW606"} <= {m["rule"] for m in doc["migration"]}


@pytest.mark.parametrize(
    ("machine", "args", "expected"),
    [
        (
            "laptop",
            ["--scenario", "training", "--model", "resnet50", "--dataset-size", "1281167"],
            1,
        ),
        (
            "rtx4090-workstation",
            ["--scenario", "training", "--model", "resnet50", "--dataset-size", "1281167"],
            0,
        ),
        ("laptop", ["--scenario", "inference"], 3),
    ],
)
def test_require_fit_gates(cli: Cli, machine: str, args: list[str], expected: int) -> None:
    code, out, err = recommend(cli, machine, *args, "--require-fit", "--json")
    assert code == expected, err
    assert json.loads(out)["verdict"]["fits_here"] == {0: True, 1: False, 3: None}[expected]
    if expected:
        assert "--require-fit" in err


def test_human_output_leads_with_the_verdict(cli: Cli) -> None:
    code, out, _ = recommend(
        cli, "t4-cloud", "--scenario", "inference", "--model", "bert-base", "--qps", "20"
    )
    assert code == 0
    assert out.index("Verdict") < out.index("CRITICAL") < out.index("HW401")
    assert "Estimates" in out


def test_output_file_is_the_json_document(cli: Cli, tmp_path: Path) -> None:
    target = tmp_path / "advice.json"
    code, _, _ = recommend(cli, "apple-m2", "--scenario", "prototyping", "--output", str(target))
    assert code == 0
    assert json.loads(target.read_text())["verdict"]["device"] == "cpu"


def test_contradictory_bench_options_are_usage_errors(cli: Cli) -> None:
    code, out, err = cli(
        "recommend",
        "--scenario",
        "training",
        "--bench-file",
        "x.json",
        "--no-bench",
        "--json",
    )
    assert code == 2
    assert err.count("\n") == 1 and "contradict" in err
    assert json.loads(out)["error"]["exit_code"] == 2


def test_bad_facts_file_is_one_line(cli: Cli, tmp_path: Path) -> None:
    bad = tmp_path / "facts.json"
    bad.write_text('{"schema_version": "1.0", "cpu": {"usable_cores": "many"}}')
    code, _, err = cli("recommend", "--scenario", "training", "--facts", str(bad))
    assert code == 2 and err.count("\n") == 1
    assert str(bad) in err and "cpu.usable_cores" in err


def test_bad_rules_folder_is_one_line_naming_file_rule_and_field(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "mine.yaml").write_text(
        "rules:\n  - id: XX001\n    title: t\n    when: {fact: cpu.featurs.amx_bf16, op: '==', value: true}\n"
        "    message: m\n    source: [T4]\n    rationale: r\n"
    )
    code, _, err = recommend(cli, "laptop", "--scenario", "training", "--rules", str(tmp_path))
    assert code == 2 and err.count("\n") == 1
    assert (
        "mine.yaml:4" in err
        and "rule XX001" in err
        and "when.fact" in err
        and "did you mean 'cpu.features.amx_bf16'" in err
    )


def test_rules_override_changes_the_advice(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "site.yaml").write_text(
        "rules:\n  - id: HW101\n    title: Site policy\n    scenarios: [prototyping]\n    message: use the dev pool\n"
        "    verdict: {device: gpu, priority: 10, summary: Prototype on the shared GPU pool.}\n"
        "    source: [C1]\n    rationale: local policy\n"
    )
    code, out, _ = recommend(
        cli, "laptop", "--scenario", "prototyping", "--rules", str(tmp_path), "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["verdict"]["summary"] == "Prototype on the shared GPU pool." and doc["options"][
        "rules_paths"
    ] == [str(tmp_path)]


def test_rules_list_show_validate(cli: Cli) -> None:
    code, out, _ = cli("rules", "list", "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["schema_version"] == SCHEMA_VERSION and doc["tool"]["name"] == "hwadvisor"
    ids = [r["id"] for r in doc["rules"]]
    assert ids == sorted(ids) and "HW401" in ids
    code, out, _ = cli("rules", "show", "hw401")
    assert code == 0 and "version_gt" in out and "M4:" in out
    rules_dir = Path(__file__).parents[2] / "rules"
    code, out, _ = cli("rules", "validate", str(rules_dir))
    assert code == 0 and "valid" in out


def test_rules_show_unknown_id(cli: Cli) -> None:
    code, _, err = cli("rules", "show", "HW999")
    assert code == 2 and "HW999" in err


def test_rules_explain_shows_each_condition_with_values(cli: Cli) -> None:
    code, out, _ = cli(
        "rules", "explain", "HW401", "--facts", str(FACTS / "t4-cloud.json"), "--json"
    )
    assert code == 0
    doc = json.loads(out)
    assert doc["fires"] is True
    assert doc["nodes"][0]["values"] == {
        "software.torch.cuda": "12.1",
        "gpu.min_cuda_driver": "11.2",
    }
    code, out, _ = cli(
        "rules",
        "explain",
        "HW201",
        "--facts",
        str(FACTS / "laptop.json"),
        "--scenario",
        "inference",
    )
    assert code == 0 and "does not fire" in out and "FALSE" in out


def test_rules_explain_second_pass_rule_sees_the_verdict(
    cli: Cli,
) -> None:
    code, out, _ = cli("rules", "explain", "HW601", "--facts", str(FACTS / "laptop.json"), "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["fires"] is True and doc["nodes"][0]["values"] == {"verdict.moves_to_gpu": True}


def test_a_mac_is_held_to_the_deadline_like_any_gpu(cli: Cli) -> None:
    """The M2's GPU is found in the catalog, so its time estimate meets the deadline."""
    args = ("--scenario", "training", "--model", "resnet50", "--json", "--require-fit")
    code, out, _ = recommend(cli, "apple-m2", *args, "--epochs", "100")
    verdict = json.loads(out)["verdict"]
    assert code == 1 and verdict["fits_here"] is False
    assert "does not finish within the deadline" in " ".join(verdict["fits_reasons"])
    code, out, _ = recommend(cli, "apple-m2", *args, "--dataset-size", "10000", "--epochs", "1")
    assert code == 0 and json.loads(out)["verdict"]["fits_here"] is True
