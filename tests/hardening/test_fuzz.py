"""Property tests over the CLI: fuzzed facts documents, rules files and argument lists.

The properties, for every generated input:

- the exit code is one of SPEC §4's 0, 1, 2, 3 (130 needs a Ctrl-C, which nothing here sends);
- nothing escapes as an exception: ``main`` would print "internal error" for a bug of
  ours, and that text never appears;
- a failure is exactly one stderr line starting ``hwadvisor: error:`` and, under
  ``--json``, a JSON error document on stdout with the same exit code;
- a success under ``--json`` is strict JSON (no NaN / Infinity) and, for the documents
  with a published schema (facts, advice, estimate), validates against it.

Budgets: the "ci" profile runs 60 examples per property (about 20 s in all on a 2-core
machine); ``HYPOTHESIS_PROFILE=long`` runs 2,000 per property for a local soak, and
docs/reliability.md records what that run found. The rules-file and bench properties
take seconds each (the bench measures for real), so they are marked ``slow``: the
default run leaves them out and CI runs them in its second step (``pytest -m slow``).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import typer.main
import yaml
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from hwadvisor.cli import get_app
from hwadvisor.engine.guidance import GUIDANCE
from hwadvisor.engine.paths import registry
from hwadvisor.models.rules import Op
from hwadvisor.models.schemas import schema_for
from hwadvisor.models.workload import Scenario

DATA = Path(__file__).parents[1] / "data"
FACT_FILES = sorted((DATA / "facts").glob("*.json"))
BASE_DOCS = {p.name: json.loads(p.read_text()) for p in FACT_FILES}
MODELS = DATA / "models"

# The default run (scripts/test) takes 40 examples of each fuzz, CI's second step
# (HWADVISOR_HYPOTHESIS=thorough) 300, HYPOTHESIS_PROFILE=long 2,000.
settings.register_profile(
    "hardening-ci",
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "hardening-thorough",
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "hardening-long",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
FUZZ = settings.get_profile(
    "hardening-long"
    if os.environ.get("HYPOTHESIS_PROFILE") == "long"
    else "hardening-thorough"
    if os.environ.get("HWADVISOR_HYPOTHESIS") == "thorough"
    else "hardening-ci"
)
SCHEMAS = {"recommend": "advice", "estimate": "estimate", "check": "facts", "bench": "bench"}
#: The benchmark measures for real, so it gets fewer examples: about 2 s each in CI.
BENCH_FUZZ = settings(FUZZ, max_examples=max(12, FUZZ.max_examples // 10))
ALLOWED_CODES = {0, 1, 2, 3}


@cache
def _validator(name: str) -> Any:
    """A compiled validator: ``jsonschema.validate`` re-checks the schema itself on every
    call, about 0.2 s here, which would dominate these tests."""
    schema = schema_for(name)
    return jsonschema.validators.validator_for(schema)(schema)


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"{name} in a JSON document")


def judge(result: Any, args: list[str]) -> None:
    """The properties every run must have (module docstring)."""
    wants_json = "--json" in args
    # Shown by --hypothesis-show-statistics: how often each command got each exit code.
    event(f"{' '.join(args[:2]) if args[0] == 'rules' else args[0]}: exit {result.code}")
    assert result.code in ALLOWED_CODES, (result.code, args, result.err)
    assert "internal error" not in result.err and "Traceback" not in result.err, (args, result.err)
    # Warnings and notes (a stale price, say) may come before the error line.
    lines = [
        ln
        for ln in result.error_lines()
        if not ln.startswith(("hwadvisor: warning:", "hwadvisor: note:"))
    ]
    if result.code in (2, 3) and lines and lines[0].startswith("hwadvisor: error:"):
        # fleet says "no report could be ranked" after printing its (valid) ranking.
        assert len(lines) == 1, (args, lines)
        if wants_json and "no report could be ranked" not in lines[0]:
            doc = json.loads(result.out)
            assert doc["error"]["exit_code"] == result.code, (args, doc)
        return
    if result.code in (1, 3) and "--require-fit" in args:
        # Warnings (stale prices, notes) may come first; the gate's own line must be there.
        said = [
            ln
            for ln in result.err.splitlines()
            if not ln.startswith(("hwadvisor: warning:", "hwadvisor: note:"))
        ]
        assert said and said[0].startswith("hwadvisor: --require-fit:"), result.err
    else:
        assert result.code == 0, (result.code, args, result.err)
    if wants_json and result.out.strip():
        doc = json.loads(result.out, parse_constant=_refuse_constant)
        name = SCHEMAS.get(args[0])
        if name and isinstance(doc, dict) and "error" not in doc:
            _validator(name).validate(doc)


# Hostile values ----------------------------------------------------------------------

HOSTILE_NUMBERS = [
    0, -1, 1, 2**31, 2**63, 10**30, -(10**30), 1e308, -1e308, 1e-300, 0.5, -0.0,
    float("nan"), float("inf"), float("-inf"),
]  # fmt: skip
json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from(HOSTILE_NUMBERS),
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=40),
    st.sampled_from(["", "1.0", "2.0", "x" * 5000, "\x00", "\u202e", "{cpu.model}", "null"]),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            out += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):
            out += _paths(value, (*prefix, i))
    return out


def _same_type(value: Any) -> st.SearchStrategy[Any]:
    """A hostile value of the same JSON type as ``value`` (None may become anything)."""
    if isinstance(value, bool):
        return st.booleans()
    if isinstance(value, int):
        return st.one_of(st.sampled_from([0, -1, 1, 2**63, 10**30, -(10**30)]), st.integers())
    if isinstance(value, float):
        return st.floats(allow_nan=False, allow_infinity=False)
    if isinstance(value, str):
        return st.one_of(
            st.text(max_size=30), st.sampled_from(["", "x" * 5000, "\x00", "{cpu.model}"])
        )
    if isinstance(value, list):
        return st.lists(json_scalars, max_size=3)
    if isinstance(value, dict):
        return st.just(value)
    return json_scalars


@st.composite
def facts_documents(draw: st.DrawFn) -> str:
    """A saved facts document, corrupted by a few random edits (or left whole)."""
    doc = json.loads(json.dumps(BASE_DOCS[draw(st.sampled_from(sorted(BASE_DOCS)))]))
    for _ in range(draw(st.integers(0, 4))):
        paths = _paths(doc)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        *parents, last = path
        node: Any = doc
        for key in parents:
            node = node[key]
        # "same-type" keeps the document valid but odd (negative sizes, zero cores, huge
        # clocks, control characters in names), so the advice itself gets exercised.
        action = draw(
            st.sampled_from(["same-type", "same-type", "replace", "delete", "add", "version"])
        )
        if action == "same-type":
            node[last] = draw(_same_type(node[last]))
        elif action == "replace":
            node[last] = draw(json_values)
        elif action == "delete":
            del node[last]
        elif action == "add" and isinstance(node, dict):
            node[draw(st.text(min_size=1, max_size=12))] = draw(json_values)
        elif action == "version":
            doc["schema_version"] = draw(
                st.one_of(
                    st.sampled_from(["1.0", "1.99", "2.0", "0.9", "1", "", "a.b"]), json_scalars
                )
            )
    text = json.dumps(doc)  # NaN / Infinity literals included, as a careless writer would
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]  # truncated
    return text


# Facts documents ----------------------------------------------------------------------

FACTS_READERS = [
    ["recommend", "--json", "--no-bench", "--scenario", "training", "--facts"],
    ["recommend", "--json", "--no-bench", "--scenario", "inference", "--model", "bert-base", "--facts"],
    ["rules", "explain", "HW301", "--json", "--facts"],
    ["export", "--format", "nfd", "--json", "--from"],
    ["export", "--format", "prometheus", "--json", "--from"],
    ["fleet", "--json", "--scenario", "training", "--model", "resnet50", "--"],
]  # fmt: skip


@FUZZ
@given(text=facts_documents(), reader=st.sampled_from(FACTS_READERS))
def test_fuzzed_facts_documents(
    text: str, reader: list[str], cli: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    path = tmp_path_factory.mktemp("facts") / "facts.json"
    path.write_text(text)
    args = [*reader, str(path)]
    judge(cli(*args), args)


# Rules files --------------------------------------------------------------------------

FACT_PATHS = sorted(registry())
leaf_values = st.one_of(
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.lists(st.one_of(st.text(max_size=8), st.integers()), max_size=5),
    st.none(),
)


def conditions() -> st.SearchStrategy[Any]:
    leaf = st.fixed_dictionaries(
        {
            "fact": st.one_of(st.sampled_from(FACT_PATHS), st.text(max_size=20)),
            "op": st.one_of(st.sampled_from([o.value for o in Op]), st.text(max_size=4)),
        },
        optional={"value": leaf_values, "ref": st.sampled_from(FACT_PATHS)},
    )
    return st.recursive(
        leaf,
        lambda inner: st.one_of(
            st.fixed_dictionaries({"all": st.lists(inner, max_size=3)}),
            st.fixed_dictionaries({"any": st.lists(inner, max_size=3)}),
            st.fixed_dictionaries({"not": inner}),
        ),
        max_leaves=5,
    )


placeholders = st.sampled_from(
    ["{cpu.model}", "{cpu.usable_cores:.1f}", "{memory.total_bytes|gib}", "{{", "}}", "{", "}",
     "{nope.path}", "{0}", "{cpu.model!r}", "${HOME}", "__import__('os')", "{cpu.model.__class__}"]
)  # fmt: skip
messages = st.lists(st.one_of(placeholders, st.text(max_size=10)), max_size=5).map("".join)


@st.composite
def rule_entries(draw: st.DrawFn) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "id": draw(st.one_of(st.from_regex(r"\AHX[0-9]{3}\Z"), st.text(max_size=8))),
        "title": draw(st.text(min_size=1, max_size=30)),
        "when": draw(conditions()),
        "message": draw(messages),
        "severity": draw(st.sampled_from(["info", "warning", "critical", "fatal"])),
        "source": draw(st.lists(st.sampled_from([*sorted(GUIDANCE), "Z9"]), max_size=3)),
        "rationale": draw(st.text(max_size=20)),
    }
    scenarios = [s.value for s in Scenario]
    if draw(st.booleans()):
        rule["scenarios"] = draw(st.lists(st.sampled_from([*scenarios, "party"]), max_size=3))
    for key in draw(st.lists(st.sampled_from(sorted(rule)), max_size=1)):
        del rule[key]  # a required field missing, sometimes
    if draw(st.integers(0, 9)) == 0:
        rule[draw(st.text(min_size=1, max_size=8))] = draw(json_scalars)  # an unknown field
    return rule


@st.composite
def rules_files(draw: st.DrawFn) -> str:
    entries = draw(st.lists(rule_entries(), min_size=1, max_size=3))
    text = yaml.safe_dump({"description": "fuzzed", "rules": entries}, allow_unicode=True)
    if draw(st.integers(0, 9)) == 0:
        text = text[: draw(st.integers(0, len(text)))]
    return text


@pytest.mark.slow  # seconds of fuzzing: run by the second CI step, `pytest -m slow`
@FUZZ
@given(text=rules_files(), scenario=st.sampled_from([s.value for s in Scenario]))
def test_fuzzed_rules_files(
    text: str, scenario: str, cli: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("rules")
    (folder / "fuzz.yaml").write_text(text)
    validate = ["rules", "validate", "--json", str(folder)]
    checked = cli(*validate)
    judge(checked, validate)
    assert checked.code in (0, 2)
    advise = ["recommend", "--json", "--no-bench", "--scenario", scenario]
    advise += ["--facts", str(FACT_FILES[0]), "--rules", str(folder)]
    advised = cli(*advise)
    judge(advised, advise)
    # validate is the gate: what it accepts, recommend runs with; what it refuses, too.
    assert (advised.code == 0) == (checked.code == 0), (checked.err, advised.err)


# Argument lists -----------------------------------------------------------------------

#: Options that would run real work (the benchmark, real training steps) or write
#: outside the test's folder; the fuzzer leaves them out.
SLOW_OR_OUTSIDE = {"--bench", "--measure", "--seed-cache", "--cache", "--quick"}
COMMANDS = ["recommend", "estimate", "fleet", "export", "check", "catalog", "schema", "rules"]


def _options(leave_out: set[str]) -> dict[tuple[str, ...], list[tuple[str, bool]]]:
    """(command path) -> [(option, takes a value)], read from the real typer app."""
    root = typer.main.get_command(get_app())
    found: dict[tuple[str, ...], list[tuple[str, bool]]] = {}
    for name, command in root.commands.items():  # type: ignore[attr-defined]
        subs = getattr(command, "commands", None)
        for path, cmd in (
            [((name, s), c) for s, c in subs.items()] if subs else [((name,), command)]
        ):
            found[path] = [
                (opt, not getattr(p, "is_flag", False))
                for p in cmd.params
                if getattr(p, "param_type_name", "") == "option"
                for opt in p.opts
                if opt.startswith("--") and opt not in leave_out
            ]
    return found


# bench runs the real benchmark: it has a property of its own (test_fuzzed_bench_arguments).
OPTIONS = {k: v for k, v in _options(SLOW_OR_OUTSIDE).items() if k != ("bench",)}
BAD_FILE = DATA / "nvml" / "README.md"
VALUES = [
    "0", "-1", "1", "3", "32", "nan", "inf", "-inf", "1e308", "1e-300", "1e400", "1.5",
    "99999999999999999999", "abc", "", " ", "3,224,224", ",,", "1,2", "3x32x32", "-", "--json",
    "resnet50", "bert-base", "gpt2-small", "t4", "a100-80gb", "here", "training", "inference",
    "edge", "fp16", "int8", "sgd", "low", "cluster", "nfd", "ansible", "prometheus",
    "hwadvisor.io", "nvidia.com", "HW101", "hw301", "devices", "models", "facts", "rules",
    "os:getcwd", "no_such_mod:build", "/nonexistent.py:build", f"{MODELS / 'broken.py'}:build",
    str(FACT_FILES[0]), str(BAD_FILE), "/nonexistent", str(DATA / "facts"),
]  # fmt: skip
value_pool = st.one_of(
    st.sampled_from(VALUES),
    st.text(max_size=12),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers().map(str),
)
POSITIONALS = {
    ("catalog",): st.sampled_from(["devices", "models", "nope"]),
    ("schema",): st.sampled_from(["facts", "bench", "advice", "estimate", "rules", "nope"]),
    ("rules", "show"): st.sampled_from(["HW101", "HW999", "hw201", ""]),
    ("rules", "explain"): st.sampled_from(["HW101", "HW301", "HW999"]),
    ("rules", "validate"): st.sampled_from([str(DATA.parents[1] / "rules"), "/nonexistent", str(BAD_FILE)]),
    ("fleet",): st.sampled_from([str(p) for p in FACT_FILES] + [str(BAD_FILE)]),
}  # fmt: skip


#: Options whose value is a file the command writes.
WRITES = frozenset({"--output", "--html"})


@st.composite
def argument_lists(draw: st.DrawFn, out_dir: str) -> list[str]:
    path = draw(st.sampled_from(sorted(OPTIONS)))
    args = list(path)
    if path in POSITIONALS:
        args.append(draw(POSITIONALS[path]))
    for opt, takes_value in draw(
        st.lists(st.sampled_from(OPTIONS[path] or [("--json", False)]), max_size=5)
    ):
        if opt in WRITES:  # a file the command writes goes to the test's own folder
            args += [
                opt,
                draw(st.sampled_from([f"{out_dir}/out.json", "/proc/out.json", f"{out_dir}/x/y"])),
            ]
        elif takes_value:
            args += [opt, draw(value_pool)]
        else:
            args.append(opt)
    # Keep the run short and on saved data: no benchmark (rules explain measures too, as
    # recommend does: 5-17 s a run here), no probing for recommend.
    if (
        (path[0] in ("recommend", "estimate") or path == ("rules", "explain"))
        and "--no-bench" not in args
        and "--bench-file" not in args
    ):
        args.append("--no-bench")
    if path[0] == "recommend" and "--facts" not in args:
        args += ["--facts", str(FACT_FILES[0])]
    if path[0] == "recommend" and "--scenario" not in args and "-s" not in args:
        args += ["--scenario", draw(st.sampled_from([s.value for s in Scenario]))]
    if draw(st.booleans()) and "--json" not in args:
        args.append("--json")
    return args


@FUZZ
@given(data=st.data())
def test_fuzzed_argument_lists(
    data: st.DataObject, cli: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    out_dir = str(tmp_path_factory.mktemp("out"))
    args = data.draw(argument_lists(out_dir))
    # --model with a real user file would count it with torch (seconds): tested elsewhere.
    assume(
        not any(
            a.endswith(".py:build") and "broken" not in a and "nonexistent" not in a for a in args
        )
    )
    judge(cli(*args), args)


BENCH_OPTIONS = _options({"--help"})[("bench",)]
DEVICES = ["cpu", "all", "cuda", "cuda:0", "cuda:7", "cuda:-1", "cuda:x", "mps", "xpu", "xpu:1",
           "CPU", "tpu", "cpu:0", "cuda:99999999999999999999"]  # fmt: skip
#: A valid budget above this is cut to it: a longer run would only measure longer.
MAX_FUZZED_BUDGET_S = 2.0


def _short(budget: str) -> str:
    try:
        value = float(budget)
    except ValueError:
        return budget
    return (
        str(MAX_FUZZED_BUDGET_S) if math.isfinite(value) and value > MAX_FUZZED_BUDGET_S else budget
    )


@st.composite
def bench_argument_lists(draw: st.DrawFn, out_dir: str) -> list[str]:
    args = ["bench"]
    for opt, takes_value in draw(st.lists(st.sampled_from(BENCH_OPTIONS), max_size=4)):
        if opt == "--device":
            args += [opt, draw(st.one_of(st.sampled_from(DEVICES), value_pool))]
        elif opt in ("--budget", "--seconds"):  # the same option, two names
            args += [opt, _short(draw(value_pool))]
        elif opt in WRITES:
            args += [
                opt,
                draw(st.sampled_from([f"{out_dir}/b.json", "/proc/b.json", f"{out_dir}/x/y"])),
            ]
        elif takes_value:
            args += [opt, draw(value_pool)]
        else:
            args.append(opt)
    if not any(a in ("--budget", "--seconds") for a in args):
        args += ["--budget", str(MAX_FUZZED_BUDGET_S)]
    if draw(st.booleans()) and "--json" not in args:
        args.append("--json")
    return args


@pytest.mark.slow  # seconds of fuzzing: run by the second CI step, `pytest -m slow`
@BENCH_FUZZ
@given(data=st.data())
def test_fuzzed_bench_arguments(
    data: st.DataObject, cli: Callable[..., Any], tmp_path_factory: pytest.TempPathFactory
) -> None:
    """bench measures for real: hostile devices and budgets are one line and exit 2, and
    every run that measures gives a bench document that validates."""
    pytest.importorskip("torch")
    args = data.draw(bench_argument_lists(str(tmp_path_factory.mktemp("bench"))))
    judge(cli(*args), args)


def test_the_fuzzer_knows_every_command() -> None:
    """A new command or option is fuzzed without editing this file."""
    assert {p[0] for p in OPTIONS} >= set(COMMANDS)
    assert ("--qps", True) in OPTIONS[("recommend",)]
    assert math.isnan(float("nan"))  # the pool's "nan" parses as NaN, as typer sees it
