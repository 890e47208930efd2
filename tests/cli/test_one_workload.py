"""One set of workload options: ``rules explain ID`` with ``recommend``'s options explains
exactly the rules ``recommend`` fired.

``recommend``, ``estimate``, ``fleet`` and ``rules explain`` take the workload options of
one list (``cli/_options.py``), and the three that read a machine take the same machine,
guidance and price options; the pipeline gathers their inputs one way
(``pipeline.commands._bench_for``). For saved machines, scenarios and workloads, every
rule is explained with the options of a ``recommend --json`` run, and the rules explained
as firing are the rules that run fired (its findings and checklist steps).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer

from hwadvisor.cli import get_app
from hwadvisor.cli._options import GUIDANCE, MACHINE, PRICING, WORKLOAD, names

#: The shared runner (``tests/conftest.py``): ``cli(*args)`` -> (code, out, err).
Cli = Callable[..., Any]

FACTS = Path(__file__).parents[1] / "data" / "facts"

#: (machine, scenario, workload, budget and team options): each a recommend run. Three
#: are marked slow (each run explains every rule that applies: ~40 commands).
RUNS = [
    ("laptop", "training", ["-m", "resnet50", "--precision", "amp", "--batch-size", "64"]),
    ("t4-cloud", "inference", ["-m", "bert-base", "--qps", "50", "--latency-ms", "20"]),
    (
        "h100x8-nvlink",
        "training",
        ["--params", "30B", "--seq-len", "2048", "--precision", "bf16", "--budget", "low"],
    ),
    ("arm-edge", "edge", ["-m", "yolov5n", "--latency-ms", "50"]),
    pytest.param(
        "cpu-server-amx",
        "inference",
        ["-m", "resnet50", "--batch-size", "8", "--team", "new"],
        marks=pytest.mark.slow,
    ),
    pytest.param(
        "rtx4090-workstation",
        "distributed",
        ["-m", "gpt2", "--seq-len", "512"],
        marks=pytest.mark.slow,
    ),
    pytest.param(
        "apple-m2",
        "prototyping",
        ["-m", "vit-b16", "--team", "experienced", "--budget", "high"],
        marks=pytest.mark.slow,
    ),
]


def _command(*path: str) -> Any:
    node = typer.main.get_command(get_app())
    for name in path:
        node = node.commands[name]  # type: ignore[attr-defined]
    return node


def _options(command: Any) -> set[str]:
    return {param.name for param in command.params}


def test_the_four_commands_take_one_set_of_workload_options() -> None:
    workload = set(names(WORKLOAD))
    for path in (["recommend"], ["estimate"], ["fleet"], ["rules", "explain"]):
        assert workload <= _options(_command(*path)), " ".join(path)
    machine = set(names(MACHINE, GUIDANCE, PRICING))
    for path in (["recommend"], ["estimate"], ["rules", "explain"]):
        assert machine <= _options(_command(*path)), " ".join(path)


def test_every_shared_option_is_a_field_of_its_typed_options() -> None:
    """The CLI builds the typed options from the shared parameters: each workload and
    pricing parameter is a field (``--deadline`` is ``deadline_hours``), and each field
    is a parameter."""
    from dataclasses import fields

    from hwadvisor.cli._common import _FIELD_OF
    from hwadvisor.models.options import PricingOptions, WorkloadOptions

    for group, cls in ((WORKLOAD, WorkloadOptions), (PRICING, PricingOptions)):
        given = {_FIELD_OF.get(name, name) for name in names(group)}
        assert given == {f.name for f in fields(cls)}, group.title


def test_recommend_and_rules_explain_spell_every_shared_option_alike() -> None:
    def spelled(command: Any) -> dict[str, tuple[str, ...]]:
        return {p.name: tuple(p.opts) for p in command.params}

    rec, exp = spelled(_command("recommend")), spelled(_command("rules", "explain"))
    shared = set(rec) & set(exp) - {"help"}
    assert set(names(WORKLOAD, MACHINE, GUIDANCE, PRICING)) <= shared
    assert {n: rec[n] for n in shared} == {n: exp[n] for n in shared}


@pytest.mark.parametrize(("machine", "scenario", "workload"), RUNS)
def test_rules_explain_fires_exactly_what_recommend_fired(
    cli: Cli, machine: str, scenario: str, workload: list[str]
) -> None:
    options = ["--facts", str(FACTS / f"{machine}.json"), "-s", scenario, *workload, "--no-bench"]
    advice = cli("recommend", *options, "--json")
    assert advice.code == 0, advice.err
    doc = advice.json()
    fired = {f["rule"] for f in doc["findings"]} | {m["rule"] for m in doc["migration"]}
    assert fired, "a run that fires nothing checks nothing"
    explained = set()
    # A rule meant for other scenarios never fires here (explain says so without
    # evaluating it); every rule meant for this scenario is evaluated.
    listed = cli("rules", "list", "--scenario", scenario, "--json").json()["rules"]
    for rule in (r["id"] for r in listed):
        result = cli("rules", "explain", rule, *options, "--json")
        assert result.code == 0, f"{rule}: {result.err}"
        if result.json()["fires"]:
            explained.add(rule)
    assert explained == fired, (
        f"explained as firing but not fired: {sorted(explained - fired)}; "
        f"fired but explained as not firing: {sorted(fired - explained)}"
    )


def test_rules_explain_refuses_a_bench_file_with_no_bench(cli: Cli, tmp_path: Path) -> None:
    bench = tmp_path / "bench.json"
    bench.write_text("{}")
    result = cli("rules", "explain", "HW111", "--bench-file", str(bench), "--no-bench")
    assert result.code == 2
    assert result.error_lines() == [
        "hwadvisor: error: --bench-file and --no-bench contradict each other; give one"
    ]
