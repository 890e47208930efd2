"""A grid of recorded machines x workloads, and a reading of each advice against its table.

:func:`contradictions` reads one advice document the way a user reads the terminal: the
verdict (class, "fits this machine", plan, sentence) beside the rows of the estimate
table (fits, time, serving figures). It recomputes each row's feasibility from the rows'
own fields, not from the verdict's machinery, and lists every place where the two say
different things.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from hwadvisor.catalog import DeviceKind, load_devices
from hwadvisor.models.advice import Advice, Alternative, DeviceClass
from hwadvisor.models.options import RunOptions, WorkloadOptions
from hwadvisor.models.workload import Budget, Scenario

FACTS = Path(__file__).parents[1] / "data" / "facts"
MACHINES = (
    "laptop",
    "rtx4090-workstation",
    "rtx3090x2-workstation",
    "a100-cloud",
    "t4-cloud",
    "cpu-server-amx",
    "h100x8-nvlink",
    "apple-m2",
)


@dataclass(frozen=True)
class Job:
    """One workload as a user asks for it."""

    name: str
    scenario: Scenario
    options: WorkloadOptions


JOBS = (
    Job("resnet50-train", Scenario.TRAINING, WorkloadOptions(model="resnet50")),
    Job("bert-infer-low", Scenario.INFERENCE, WorkloadOptions(model="bert-base", qps=1)),
    Job("bert-infer-high", Scenario.INFERENCE, WorkloadOptions(model="bert-base", qps=2000)),
    Job("yolov5n-edge", Scenario.EDGE, WorkloadOptions(model="yolov5n")),
    Job("llama3-8b-serve", Scenario.INFERENCE, WorkloadOptions(model="llama-3-8b")),
    Job(
        "llama2-70b-serve",
        Scenario.INFERENCE,
        WorkloadOptions(model="llama-2-70b", quant="fp16"),
    ),
    Job("mixtral-20rps", Scenario.INFERENCE, WorkloadOptions(model="mixtral-8x7b", qps=20)),
    Job("llama3-8b-lora", Scenario.TRAINING, WorkloadOptions(model="llama-3-8b", method="lora")),
    Job("llama3-8b-qlora", Scenario.TRAINING, WorkloadOptions(model="llama-3-8b", method="qlora")),
    Job("llama3-8b-full", Scenario.TRAINING, WorkloadOptions(model="llama-3-8b", method="full")),
    Job("llama2-70b-lora", Scenario.TRAINING, WorkloadOptions(model="llama-2-70b", method="lora")),
    Job(
        "params-7b-train",
        Scenario.TRAINING,
        WorkloadOptions(params=7_000_000_000, seq_len=2048, batch_size=8, dataset_size=100_000),
    ),
)


def run_options(machine: str, job: Job, budget: Budget = Budget.NORMAL) -> RunOptions:
    """``recommend --facts <machine> --no-bench`` with the job's options."""
    return RunOptions(
        workload=job.options,
        facts_file=str(FACTS / f"{machine}.json"),
        no_bench=True,
        budget=budget,
    )


def _class(gpus: int, device: str) -> DeviceClass:
    entry = load_devices().get(device.removeprefix("local:"))
    if device == "here" or (entry is not None and entry.kind is DeviceKind.CPU):
        return DeviceClass.CPU
    return DeviceClass.MULTI_GPU if gpus > 1 else DeviceClass.GPU


def _fits(row: Alternative) -> bool | None:
    return row.fits_planned if row.fits_planned is not None else row.memory_fit


def _meets(advice: Advice, row: Alternative) -> bool | None:
    """The row meets the job's requirement, from its own figures (None: cannot tell)."""
    wl = advice.workload
    if advice.scenario in (Scenario.TRAINING, Scenario.DISTRIBUTED) and row.time_s is not None:
        return row.time_s <= wl.deadline_hours * 3600.0 * (1.0 + 1e-9)
    return True


def _here_row(advice: Advice) -> Alternative | None:
    here = advice.estimates.here
    if here is None:
        return None
    return Alternative(
        device="here",
        name="this machine's CPU",
        gpus=1,
        time_s=here.total_time_s,
        memory_fit=here.fits,
        fits_planned=here.fits_planned,
        serving=here.serving,
    )


def rows(advice: Advice) -> list[tuple[DeviceClass, Alternative]]:
    """Every row of the table with its device class (this machine's CPU first)."""
    here = _here_row(advice)
    out = [(DeviceClass.CPU, here)] if here is not None else []
    out += [(_class(alt.gpus, alt.device), alt) for alt in advice.estimates.alternatives]
    return out


def contradictions(advice: Advice) -> list[str]:
    """Where the verdict says something its own table does not (empty: none)."""
    v = advice.verdict
    found: list[str] = []
    table = rows(advice)
    feasible = {
        cls
        for cls, row in table
        if _fits(row) is True and _meets(advice, row) is not False and cls is not None
    }
    if "usual choice" in v.summary:
        found.append(f"falls back to a usual choice: {v.summary!r}")
    judged = advice.scenario not in (Scenario.PROTOTYPING, Scenario.PREPROCESSING, Scenario.EDGE)
    if judged and feasible and v.device not in feasible:
        found.append(
            f"recommends {v.device.value} but no {v.device.value} row fits and meets the "
            f"job; {sorted(c.value for c in feasible)} do"
        )
    if v.device is DeviceClass.CPU:
        here = next((r for c, r in table if r.device == "here"), None)
        if here is not None and v.fits_here is True and _fits(here) is False:
            found.append("says the CPU here fits, and its row says it does not")
    if v.device is not DeviceClass.CPU and v.fits_here is True:
        local = [r for c, r in table if c is v.device and r.device.startswith("local:")]
        if local and all(_fits(r) is False for r in local):
            found.append(f"says this machine fits, and its {v.device.value} rows do not")
    if v.plan is not None and v.plan.device is not None:
        named = [r for _, r in table if r.device == v.plan.device]
        planned = any(r.plan is not None and r.plan.text == v.plan.text for r in named)
        big = [r for r in named if r.gpus >= v.plan.gpus]
        if named and not planned and all(_fits(r) is False for r in big):
            found.append(f"names plan {v.plan.text!r}, whose row does not fit")
    option = v.option
    if advice.scenario in (Scenario.PROTOTYPING, Scenario.PREPROCESSING, Scenario.EDGE):
        pass  # the documents' rules decide these alone; the table does not judge them
    elif option is not None:
        row = next((r for _, r in table if r.device == option.device), None)
        if row is None:
            found.append(f"chose {option.device}, which is not a row of the table")
        elif option.here != (row.device == "here" or row.device.startswith("local:")):
            found.append(f"calls {option.device} {'here' if option.here else 'elsewhere'}")
        if not option.here and "this machine's" in v.summary:
            found.append(
                f"chose {option.device} elsewhere, and the sentence speaks of this machine"
            )
        if v.plan is not None and v.plan.device != option.device:
            found.append(f"plan on {v.plan.device}, option on {option.device}")
        counts = {int(n) for n in re.findall(r"(\d+) × ", v.summary)}
        if v.plan is not None and counts - {v.plan.gpus}:
            found.append(f"the sentence names {sorted(counts)} GPUs, the plan {v.plan.gpus}")
        if option.here and v.fits_here is False:
            found.append("chose this machine, and says it does not fit")
    elif feasible:
        found.append("names no option while rows fit and meet the job")
    has_time = any(r.time_s is not None for _, r in table)
    for f in advice.findings:
        if has_time and "no time estimate" in f.message.lower():
            found.append(f"{f.rule} says there is no time estimate beside a table of times")
    return found
