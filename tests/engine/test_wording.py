"""What the rules say reads true: no template text shows through, inference advice never
talks about training, and a message follows its own numbers.

Two kinds of check. Over real runs (every saved machine, every scenario, several
workloads, budgets and teams) each rendered finding, checklist step and verdict sentence
is free of "unknown", "None", braces and clause brackets. Over every rule's text, with a
value for every placeholder, a rule that can speak to an inference job says nothing of
training there.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import pytest

from hwadvisor.engine import load_rules
from hwadvisor.engine.run import applies
from hwadvisor.engine.template import pieces, placeholders, render
from hwadvisor.models.options import RunOptions, WorkloadOptions
from hwadvisor.models.workload import INFERENCE_SCENARIOS, Budget, Scenario, Team
from hwadvisor.pipeline import recommend

FACTS = sorted((Path(__file__).parents[1] / "data" / "facts").glob("*.json"))
WORKLOADS: list[dict[str, Any]] = [
    {"model": "resnet50"},
    {"model": "bert-base", "qps": 50.0, "latency_ms": 20.0},
    {"model": "resnet50", "qps": 2.0},
    {"params": 7_000_000_000, "seq_len": 2048},
    {},
]
#: Budget and team pairs, taken in turn so every team rule gets its chance.
OPTIONS = [(Budget.NORMAL, None), (Budget.LOW, Team.NEW), (Budget.HIGH, Team.EXPERIENCED)]
#: Text a template must never leave in a message.
LEAKS = re.compile(r"\bunknown\b|\bNone\b|[{}]|\[\[|\]\]")
#: Words of training advice, out of place in advice for serving a model.
TRAINING = re.compile(
    r"\btrain\w*|converg\w*|\bepochs?\b|gradient\w*|optimi[sz]er|loss scaling|GradScaler",
    re.IGNORECASE,
)


def _advice(scenario: Scenario, workload: dict[str, Any], facts: Path, n: int) -> Any:
    """The advice for ``workload`` on the saved machine, at the n-th budget and team."""
    budget, team = OPTIONS[n % len(OPTIONS)]
    options = RunOptions(
        workload=WorkloadOptions(**workload),
        budget=budget,
        team=team,
        facts_file=str(facts),
        no_bench=True,
    )
    return recommend(scenario=scenario, options=options).advice


def _texts(scenario: Scenario, workload: dict[str, Any], facts: Path, n: int) -> list[str]:
    advice = _advice(scenario, workload, facts, n)
    return (
        [f"{f.rule}: {f.message}" for f in advice.findings]
        + [f"{m.rule}: {m.step}" for m in advice.migration]
        + [f"verdict {advice.verdict.rule or '(default)'}: {advice.verdict.summary}"]
    )


@pytest.mark.parametrize("facts", FACTS, ids=lambda p: p.stem)
def test_no_template_text_shows_through_in_any_run(facts: Path) -> None:
    leaks = []
    for n, (scenario, w) in enumerate(itertools.product(Scenario, range(len(WORKLOADS)))):
        for text in _texts(scenario, WORKLOADS[w], facts, n):
            if LEAKS.search(text):
                leaks.append(f"{scenario.value} {WORKLOADS[w]}: {text}")
    assert not leaks, "\n".join(leaks)


@pytest.mark.parametrize("facts", FACTS, ids=lambda p: p.stem)
def test_advice_for_inference_runs_never_mentions_training(facts: Path) -> None:
    said = []
    for n, (scenario, w) in enumerate(itertools.product(INFERENCE_SCENARIOS, range(4))):
        for text in _texts(scenario, WORKLOADS[w], facts, n):
            if TRAINING.search(text):
                said.append(f"{scenario.value} {WORKLOADS[w]}: {text}")
    assert not said, "\n".join(said)


#: ONNX export and INT8 through a CPU runtime: advice for CNNs, encoders and small models.
ONNX_ADVICE = re.compile(r"ONNX|OpenVINO|quantize_dynamic|NNCF|INT8 quantization")
#: Language-model jobs: their formats are the LLM estimates' (AWQ, GPTQ, FP8, GGUF).
LLM_RUNS: list[tuple[Scenario, dict[str, Any]]] = [
    (Scenario.INFERENCE, {"model": "llama-2-70b"}),
    (Scenario.INFERENCE, {"model": "llama-3-8b", "task": "serve", "qps": 0.1}),
    (Scenario.TRAINING, {"model": "llama-3-8b", "method": "lora"}),
]


@pytest.mark.parametrize("facts", FACTS, ids=lambda p: p.stem)
def test_advice_for_a_language_model_never_says_onnx_or_int8_quantization(facts: Path) -> None:
    said = []
    for n, (scenario, workload) in enumerate(LLM_RUNS):
        for text in _texts(scenario, workload, facts, n):
            if ONNX_ADVICE.search(text):
                said.append(f"{scenario.value} {workload}: {text}")
    assert not said, "\n".join(said)


#: Training runs whose rows hold their times in different fields: a total time, a time
#: per step only (fine-tuning without --dataset-size), serving figures, nothing at all.
TIMED_RUNS: list[dict[str, Any]] = [
    {"model": "resnet50"},
    {"model": "llama-3-8b", "method": "lora"},
    {"model": "llama-3-8b", "task": "serve"},
    {"params": 7_000_000_000},
]
NO_TIME = re.compile(r"no (total )?time\b|no time estimate", re.IGNORECASE)


@pytest.mark.parametrize("facts", FACTS, ids=lambda p: p.stem)
def test_no_time_is_said_only_where_no_row_shows_one(facts: Path) -> None:
    said = []
    for n, workload in enumerate(TIMED_RUNS):
        advice = _advice(Scenario.TRAINING, workload, facts, n)
        here, alts = advice.estimates.here, advice.estimates.alternatives
        # The rows the advice's tables show: the estimate table's time column and the
        # serving table's time to first token.
        rows = [*([here] if here else []), *alts]
        times = [here.total_time_s] if here else []
        times += [a.time_s for a in alts]
        times += [r.serving.ttft_s for r in rows if r.serving is not None]
        if all(t is None for t in times):
            continue
        said += [
            f"{workload}: {f.rule} {f.title}: {f.message}"
            for f in advice.findings
            if NO_TIME.search(f.title) or NO_TIME.search(f.message)
        ]
    assert not said, "\n".join(said)


def _every_value(text: str, task: str) -> dict[str, Any]:
    """A context giving every placeholder of ``text`` a value, for a job of ``task``."""
    ctx: dict[str, Any] = {ph.path: 1 for ph in placeholders(text)}
    ctx["workload.task"] = task
    return ctx


RULES = load_rules([]).sorted()
FOR_INFERENCE = [r for r in RULES if any(applies(r, s) for s in INFERENCE_SCENARIOS)]


@pytest.mark.parametrize("rule", FOR_INFERENCE, ids=lambda r: r.id)
@pytest.mark.parametrize("task", ["infer", "serve"])
def test_every_rule_that_serves_inference_says_nothing_of_training_there(
    rule: Any, task: str
) -> None:
    found = TRAINING.search(rule.title)
    assert found is None, f"{rule.id}'s title tells an inference job about {found.group(0)!r}"
    texts = [rule.message] + ([rule.verdict.summary] if rule.verdict else [])
    for text in texts:
        said = render(text, _every_value(text, task))
        assert said.strip(), f"{rule.id} says nothing at all for an inference job"
        found = TRAINING.search(said)
        assert found is None, f"{rule.id} tells an inference job about {found.group(0)!r}: {said}"


def test_training_clauses_are_said_for_training() -> None:
    with_clause = [r for r in RULES if "workload.task=train" in r.message]
    assert with_clause, "no rule keeps training advice in a clause"
    for rule in with_clause:
        train = render(rule.message, _every_value(rule.message, "train"))
        finetune = render(rule.message, _every_value(rule.message, "finetune"))
        infer = render(rule.message, _every_value(rule.message, "infer"))
        assert train == finetune != infer, f"{rule.id} says the same to training and inference"


def test_hw607_does_not_call_more_gpu_memory_smaller() -> None:
    rule = next(r for r in RULES if r.id == "HW607")
    for ram in (8 * 2**30, 23.5 * 2**30, 512 * 2**30):
        said = render(rule.message, {"memory.total_bytes": ram, "workload.task": "train"})
        assert "much smaller" not in said and "16-80 GB" in said, said


# The clauses themselves. ---------------------------------------------------------------


def test_a_clause_with_an_unknown_value_is_left_out() -> None:
    text = "asked: {workload.qps:g} QPS[[ within {workload.latency_ms:g} ms]]."
    assert render(text, {"workload.qps": 2.0}) == "asked: 2 QPS."
    assert render(text, {"workload.qps": 2.0, "workload.latency_ms": 50}) == (
        "asked: 2 QPS within 50 ms."
    )
    # Outside a clause an unknown value is still said to be unknown.
    assert render(text, {"workload.latency_ms": 50}) == "asked: unknown QPS within 50 ms."


def test_a_guarded_clause_follows_its_fact() -> None:
    text = "Fix:[[workload.task=train|finetune: accumulate]][[workload.task=infer: quantize]][[x!=true: (x off)]]."
    assert render(text, {"workload.task": "train", "x": True}) == "Fix: accumulate."
    assert render(text, {"workload.task": "finetune", "x": True}) == "Fix: accumulate."
    assert render(text, {"workload.task": "infer", "x": False}) == "Fix: quantize (x off)."
    assert render(text, {}) == "Fix:."  # an unknown guard drops its clause


def test_dropped_clauses_leave_no_stray_punctuation() -> None:
    text = "CPU ([[{a} cores]][[, {b} of memory]]): here:[[ copy {a} GB/s]][[, triad {b} GB/s]]."
    assert render(text, {"b": 3}) == "CPU (3 of memory): here: triad 3 GB/s."
    assert render(text, {}) == "CPU: here:."
    assert render("Serve it (model.half()).", {}) == "Serve it (model.half())."


def test_guard_paths_are_read_like_placeholders() -> None:
    found = placeholders("a [[workload.task=train: {estimate.here.memory_bytes|gib}]]")
    assert [p.path for p in found] == ["workload.task", "estimate.here.memory_bytes"]
    assert [p.clause for p in pieces("a [[b]] c")] == [False, True, False]


@pytest.mark.parametrize("bad", ["a [[ b", "a ]] b", "[[ [[ b ]] ]]", "[[ {a.b|evil} ]]"])
def test_malformed_clauses_are_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        placeholders(bad)
