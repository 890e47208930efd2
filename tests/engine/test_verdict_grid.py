"""The verdict follows its table on a grid of recorded machines x workloads (issue 40).

Eight machines (a laptop, an RTX 4090 workstation, two RTX 3090s, an A100 cloud VM, a T4
cloud VM, a CPU server, an 8 x H100 node, an Apple M2) x twelve workloads (ResNet-50
training; BERT inference at low and high QPS; YOLOv5n at the edge; Llama-3-8B and
Llama-2-70B serving; Mixtral at 20 requests/s; LoRA, QLoRA and full fine-tuning of an 8B
model; LoRA of a 70B model; a bare 7B training job), each through ``recommend --facts
... --no-bench`` at every budget. :func:`~tests.engine.verdict_grid.contradictions` reads
each advice against its own rows.
"""

from __future__ import annotations

import pytest
from tests.engine.verdict_grid import JOBS, MACHINES, Job, contradictions, run_options

from hwadvisor.models.advice import DeviceClass
from hwadvisor.models.workload import Budget
from hwadvisor.pipeline import recommend


@pytest.mark.parametrize(
    "budget",
    # The normal budget in the quick suite; the other two in the slow step.
    [pytest.param(b, marks=[] if b is Budget.NORMAL else [pytest.mark.slow]) for b in Budget],
    ids=lambda b: b.value,
)
@pytest.mark.parametrize("machine", MACHINES)
def test_no_verdict_contradicts_its_table(machine: str, budget: Budget) -> None:
    found = {}
    for job in JOBS:
        advice = recommend(scenario=job.scenario, options=run_options(machine, job, budget)).advice
        if c := contradictions(advice):
            found[job.name] = c
    assert not found, found


def _advice(machine: str, name: str, budget: Budget = Budget.NORMAL):  # type: ignore[no-untyped-def]
    job: Job = next(j for j in JOBS if j.name == name)
    return recommend(scenario=job.scenario, options=run_options(machine, job, budget)).advice


def test_a_70b_model_in_fp16_is_several_gpus_not_the_cpu() -> None:
    v = _advice("a100-cloud", "llama2-70b-serve").verdict
    assert v.device is DeviceClass.MULTI_GPU
    assert v.plan is not None and v.plan.gpus > 1
    assert "usual choice" not in v.summary


def test_what_is_here_is_preferred_when_it_does_the_job() -> None:
    v = _advice("h100x8-nvlink", "llama2-70b-serve").verdict
    assert v.option is not None and v.option.here and v.fits_here is True


def test_the_budget_chooses_among_what_works() -> None:
    normal = _advice("laptop", "resnet50-train", Budget.NORMAL).verdict.option
    high = _advice("laptop", "resnet50-train", Budget.HIGH).verdict.option
    assert normal is not None and high is not None
    assert normal.usd is not None and high.usd is not None
    assert normal.usd <= high.usd
    assert high.time_s is not None and normal.time_s is not None
    assert high.time_s <= normal.time_s
