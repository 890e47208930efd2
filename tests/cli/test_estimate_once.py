"""``estimate`` estimates each row once: its table and its guidance share the rows.

The guidance weighs this machine, single catalog GPUs, an 8-GPU node and (under
``--budget low``) older generations; where those meet the table's devices, the rows the
table estimated are taken (``pipeline.rows.Rows``), and the guidance is the one it gives
estimating every row afresh.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hwadvisor.estimate
from hwadvisor.models.options import WorkloadOptions
from hwadvisor.models.workload import Budget, Scenario
from hwadvisor.pipeline import estimate, guidance, load_facts, workload_for

FACTS = Path(__file__).parents[1] / "data" / "facts"


@pytest.fixture
def estimated(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Every (device, GPU count) the estimator is asked for, in order."""
    real = hwadvisor.estimate.estimate_workload
    asked: list[tuple[str, int]] = []

    def counting(workload: Any, *, on: list[str], gpus: int = 1, **kw: Any) -> Any:
        asked.extend((d.lower(), gpus) for d in on)
        return real(workload, on=on, gpus=gpus, **kw)

    monkeypatch.setattr(hwadvisor.estimate, "estimate_workload", counting)
    return asked


@pytest.mark.parametrize(
    ("machine", "options", "budget"),
    [
        ("t4-cloud", WorkloadOptions(model="resnet50"), Budget.LOW),
        ("h100x8-nvlink", WorkloadOptions(params=7_000_000_000, seq_len=2048), Budget.NORMAL),
        ("laptop", WorkloadOptions(model="bert-base", qps=50.0, task="infer"), Budget.LOW),
    ],
)
def test_each_row_is_estimated_once_and_the_guidance_is_unchanged(
    estimated: list[tuple[str, int]], machine: str, options: WorkloadOptions, budget: Budget
) -> None:
    facts_file = str(FACTS / f"{machine}.json")
    report = estimate(workload=options, facts_file=facts_file, budget=budget)
    assert estimated, "nothing was estimated"
    assert len(estimated) == len(set(estimated)), sorted(estimated)
    # the table's devices the guidance also weighs were not estimated again
    assert ("here", 1) in estimated
    assert ("t4", 1) in estimated

    facts = load_facts(facts_file)
    afresh = guidance(
        workload_for(None, options),
        facts=facts,
        bench=facts.bench,
        scenario=report.scenario or Scenario.TRAINING,
        budget=budget,
        team=None,
    )
    assert report.guidance == afresh
