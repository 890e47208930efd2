"""Bad values on the command line, and outputs that cannot be written.

Every case: the documented exit code (2 for bad input), exactly one stderr line naming
the option or file, no traceback, and under ``--json`` a JSON error document on stdout.
Most run in this process through the real entry point; a sample runs as
``python -m hwadvisor`` to see the stderr a user sees.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.schemas import schema_for

DATA = Path(__file__).parents[1] / "data"
FACTS = str(DATA / "facts" / "laptop.json")
MODELS = DATA / "models"
REC = ["recommend", "--json", "--no-bench", "--facts", FACTS]
TRAIN = [*REC, "--scenario", "training"]
INFER = [*REC, "--scenario", "inference"]
EST = ["estimate", "--json", "--no-bench"]
FLEET = ["fleet", FACTS, "--json"]
EXPLAIN = ["rules", "explain", "HW101", "--json", "--facts", FACTS]

#: (argv, substring of the error line); every one is exit 2.
BAD_VALUES: list[tuple[list[str], str]] = [
    # scenarios and closed choices
    ([*REC, "--scenario", "nonsense"], "--scenario"),
    ([*FLEET, "--scenario", "nonsense"], "--scenario"),
    (["rules", "list", "--json", "--scenario", "nope"], "--scenario"),
    ([*TRAIN, "--precision", "fp64"], "--precision"),
    ([*TRAIN, "--optimizer", "adam"], "--optimizer"),
    ([*TRAIN, "--budget", "huge"], "--budget"),
    ([*TRAIN, "--team", "solo"], "--team"),
    ([*EST, "--model", "resnet50", "--task", "dance"], "--task"),
    (["export", "--json", "--format", "yaml"], "--format"),
    (["schema", "nope"], "nope"),
    (["catalog", "nope", "--json"], "nope"),
    # zero and negative sizes
    ([*TRAIN, "--batch-size", "0"], "--batch-size"),
    ([*TRAIN, "--batch-size", "-5"], "--batch-size"),
    ([*TRAIN, "--params", "0"], "--params"),
    ([*TRAIN, "--params", "-1"], "--params"),
    ([*TRAIN, "--dataset-size", "0"], "--dataset-size"),
    ([*TRAIN, "--seq-len", "-3"], "--seq-len"),
    ([*TRAIN, "--epochs", "0"], "--epochs"),
    ([*EST, "--model", "resnet50", "--gpus", "0"], "--gpus"),
    ([*EST, "--model", "resnet50", "--gpus", "-3"], "--gpus"),
    ([*FLEET, "--batch-size", "0"], "--batch-size"),
    ([*EXPLAIN, "--params", "-1"], "--params"),
    # NaN and infinity
    ([*TRAIN, "--flops-per-sample", "nan"], "--flops-per-sample"),
    ([*TRAIN, "--flops-per-sample", "inf"], "--flops-per-sample"),
    ([*TRAIN, "--epochs", "nan"], "--epochs"),
    ([*TRAIN, "--deadline", "inf"], "--deadline"),
    ([*INFER, "--qps", "-inf"], "--qps"),
    ([*INFER, "--latency-ms", "nan"], "--latency-ms"),
    ([*FLEET, "--deadline", "nan"], "--deadline"),
    ([*EXPLAIN, "--qps", "nan"], "--qps"),
    (["check", "--json", "--timeout", "inf"], "--timeout"),
    (["check", "--json", "--bench-budget", "nan"], "--bench-budget"),
    (["bench", "--json", "--budget", "nan"], "--budget"),
    (["export", "--json", "--format", "nfd", "--from", FACTS, "--expiry", "nan"], "--expiry"),
    # absurd magnitudes
    ([*INFER, "--qps", "1e300"], "--qps must be at most"),
    ([*INFER, "--qps", "1e400"], "--qps"),
    ([*TRAIN, "--params", "99999999999999999999999999"], "--params must be at most"),
    ([*TRAIN, "--flops-per-sample", "1e308"], "--flops-per-sample must be at most"),
    ([*TRAIN, "--epochs", "1e308"], "--epochs must be at most"),
    ([*TRAIN, "--seq-len", "999999999999"], "--seq-len must be at most"),
    ([*TRAIN, "--deadline", "1e300"], "--deadline must be at most"),
    ([*EST, "--params", "99999999999999999999", "--flops-per-sample", "1e308"], "at most"),
    ([*FLEET, "--epochs", "1e300"], "--epochs must be at most"),
    (["bench", "--json", "--budget", "1e308"], "--budget must be at most"),
    (["check", "--json", "--bench-budget", "1e9"], "--bench-budget must be at most"),
    ([*TRAIN, "--model", "resnet50", "--input-shape", "3,999999,999999"], "--input-shape"),
    # models
    ([*TRAIN, "--model", "no-such-model"], "unknown model 'no-such-model'"),
    ([*EST, "--model", "no-such-model"], "unknown model"),
    ([*FLEET, "--model", "no-such-model"], "unknown model"),
    ([*EXPLAIN, "--model", "no-such-model"], "unknown model"),
    ([*TRAIN, "--model", "/nonexistent/net.py:build", "--input-shape", "3,32,32"], "does not exist"),
    ([*TRAIN, "--model", "no_such_module_xyz:build", "--input-shape", "3"], "not found"),
    ([*TRAIN, "--model", f"{MODELS / 'broken.py'}:build", "--input-shape", "3"], "importing it raised"),
    ([*EST, "--model", f"{MODELS / 'broken.py'}:build", "--input-shape", "3"], "importing it raised"),
    ([*TRAIN, "--model", f"{MODELS / 'mlp.py'}:nothing", "--input-shape", "3"], "is not a callable"),
    ([*TRAIN, "--model", "os:getcwd", "--input-shape", "3"], "not a torch.nn.Module"),
    ([*TRAIN, "--model", "os:system", "--input-shape", "3"], "building it raised"),
    ([*TRAIN, "--model", ":", "--input-shape", "3"], "module:callable"),
    ([*TRAIN, "--model", f"{MODELS / 'mlp.py'}:build"], "needs --input-shape"),
    ([*EST, "--model", "resnet50", "--on", "nowhere"], "unknown device or instance type 'nowhere'"),
    # input shapes
    ([*TRAIN, "--model", "resnet50", "--input-shape", "abc"], "--input-shape"),
    ([*TRAIN, "--model", "resnet50", "--input-shape", ",,"], "--input-shape"),
    ([*TRAIN, "--model", "resnet50", "--input-shape", "3,-224,224"], "--input-shape"),
    ([*TRAIN, "--model", "resnet50", "--input-shape", "0,0,0"], "--input-shape"),
    ([*EST, "--model", "resnet50", "--input-shape", "x,y"], "--input-shape"),
    ([*EST, "--model", "resnet50", "--input-shape", "-1"], "--input-shape"),
    ([*FLEET, "--input-shape", "1,,2"], "--input-shape"),
    ([*TRAIN, "--model", f"{MODELS / 'cnn.py'}:build", "--input-shape", "3,2,2"], "forward pass"),
    ([*TRAIN, "--model", f"{MODELS / 'cnn.py'}:build", "--input-shape", "7"], "forward pass"),
    # contradictions, devices, prefixes, unknown things
    ([*TRAIN, "--bench-file", FACTS], "contradict"),
    (["bench", "--json", "--device", "cuda:-1"], "unknown device"),
    (["bench", "--json", "--device", "tpu"], "unknown device"),
    (["export", "--json", "--format", "nfd", "--from", FACTS, "--prefix", "nvidia.com"], "nvidia.com"),
    (["export", "--json", "--format", "nfd", "--from", FACTS, "--expiry", "-1"], "--expiry"),
    (["rules", "show", "NOPE", "--json"], "no rule 'NOPE'"),
    (["rules", "explain", "NOPE", "--json"], "no rule 'NOPE'"),
    (["check", "--json", "--definitely-not-an-option"], "--definitely-not-an-option"),
    (["no-such-command", "--json"], "no-such-command"),
    # deadlines past any use (1e308 s overflowed the NVML child's wait)
    (["check", "--json", "--timeout", "1e308"], "--timeout must be a number of seconds"),
    (["export", "--json", "--format", "nfd", "--timeout", "1e9"], "at most 3600"),
]  # fmt: skip


def _builds_a_user_model(args: list[str]) -> bool:
    """The row names a user model (``file.py:callable`` or ``module:callable``), whose
    import and build run in the contained child: about a second each, for a torch import."""
    model = args[args.index("--model") + 1] if "--model" in args else ""
    return ":" in model and model != ":"


_USER_ROWS = [i for i, (a, _) in enumerate(BAD_VALUES) if _builds_a_user_model(a)]


def _bad_value_params() -> list[Any]:
    """Every row; those that start the child, past the first two, in the slow step."""
    return [
        pytest.param(
            args,
            needle,
            id=f"{i:02d}-{args[0]}",
            marks=[pytest.mark.slow] if i in _USER_ROWS[2:] else [],
        )
        for i, (args, needle) in enumerate(BAD_VALUES)
    ]


@pytest.mark.parametrize(("args", "needle"), _bad_value_params())
def test_bad_value_is_exit_2_one_line(
    args: list[str], needle: str, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    clean_error(cli(*args), 2, needle, wants_json="--json" in args)


#: A sample of the table (indices into BAD_VALUES, about one per command) run in a real
#: process: stderr exactly as a user sees it. 56 builds a model, so torch is imported.
REAL_PROCESS = [0, 30, 43, 48, 56, 72, 77, 78]


@pytest.mark.slow  # a child process each; the same rows run in process by default
@pytest.mark.parametrize("index", REAL_PROCESS)
def test_bad_values_in_a_real_process(
    index: int, proc: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    args, needle = BAD_VALUES[index]
    clean_error(proc(args), 2, needle, wants_json="--json" in args)


def test_huge_but_allowed_values_give_valid_documents(cli: Callable[..., Any]) -> None:
    """At the limits every figure stays a finite number: the documents validate."""

    big = ["--params", "1000000000000000", "--flops-per-sample", "1e21", "--batch-size", "1"]
    big += ["--dataset-size", "1000000000000000", "--epochs", "1000000"]
    for args, schema in (
        ([*TRAIN, *big], "advice"),
        ([*EST, *big, "--on", "t4", "--on", "here"], "estimate"),
        ([*INFER, "--qps", "1e9", "--latency-ms", "1e-300", "--model", "bert-base"], "advice"),
        ([*TRAIN, "--deadline", "1e-300", "--model", "resnet50"], "advice"),
    ):
        result = cli(*args)
        assert result.code == 0, result.err
        doc = json.loads(result.out, parse_constant=_refuse_constant)
        _validator(schema).validate(doc)


@cache
def _validator(name: str) -> Any:
    """A compiled validator: ``jsonschema.validate`` re-checks the schema itself on every
    call, about 0.2 s here, which would dominate these tests."""
    schema = schema_for(name)
    return jsonschema.validators.validator_for(schema)(schema)


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"{name} in a JSON document")


# Outputs that cannot be written ---------------------------------------------------------


@pytest.mark.parametrize(
    "command",
    [
        [*TRAIN, "--model", "resnet50"],
        [*EST, "--model", "resnet50", "--on", "t4"],
        ["export", "--json", "--format", "nfd", "--from", FACTS],
        ["check", "--json"],
        [*FLEET],
    ],
    ids=["recommend", "estimate", "export", "check", "fleet"],
)
def test_output_into_a_missing_or_unwritable_folder(
    command: list[str], tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    missing = tmp_path / "no" / "such" / "out.json"
    clean_error(cli(*command, "--output", str(missing)), 2, str(missing), wants_json=True)
    assert not missing.parent.exists()
    # /proc refuses new files to everyone, root included.
    clean_error(cli(*command, "--output", "/proc/hwadvisor-out.json"), 2, "/proc", wants_json=True)


def _fsize_limit() -> None:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # get EFBIG, not a kill
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


@pytest.mark.parametrize(
    "command",
    [["check", "--json"], [*TRAIN, "--model", "resnet50"]],
    ids=["check", "recommend"],
)
def test_disk_full_on_output_keeps_the_old_file(command: list[str], tmp_path: Path) -> None:
    """RLIMIT_FSIZE makes the kernel refuse the write as a full disk would: exit 2, one
    line, the previous file intact and no dot-file left behind."""
    target = tmp_path / "out.json"
    target.write_text("previous report")
    env = {k: v for k, v in os.environ.items() if k != "HWADVISOR_DEBUG"}
    done = subprocess.run(
        [sys.executable, "-m", "hwadvisor", *command, "--output", str(target)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        preexec_fn=_fsize_limit,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and str(target) in lines[0], lines
    assert json.loads(done.stdout)["error"]["kind"] == "output"
    assert target.read_text() == "previous report"
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_hostile_cache_path_in_the_ansible_fact_is_only_text(
    tmp_path: Path, cli: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    """The fact script runs as root under Ansible: a --cache path full of shell syntax is
    quoted, prints JSON, and runs nothing; a relative or multi-line path is refused."""
    cache = tmp_path / "a'b $(touch CANARY);`touch CANARY`.json"
    script = tmp_path / "hwadvisor.fact"
    result = cli("export", "--format", "ansible", "--cache", str(cache), "--output", str(script))
    assert result.code == 0, result.err
    for present in (False, True):
        if present:
            cache.write_text('{"cached": true}\n')
        done = subprocess.run(
            ["sh", str(script)],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=30,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        assert doc == {"cached": True} if present else "missing or unreadable" in doc["error"]
    assert not (tmp_path / "CANARY").exists()
    for bad in ("relative/cache.json", "/tmp/two\nlines.json"):
        clean_error(cli("export", "--format", "ansible", "--cache", bad), 2, "--cache")


@pytest.mark.parametrize(
    "command",
    [
        ["check"],
        ["check", "--json"],
        ["catalog", "devices"],
        ["recommend", "--no-bench", "--facts", FACTS, "--scenario", "training"],
        [*TRAIN, "--model", "resnet50"],
        ["schema", "facts"],
    ],
    ids=["check", "check-json", "catalog", "recommend", "recommend-json", "schema"],
)
def test_reader_gone_is_exit_0_and_quiet(command: list[str]) -> None:
    """stdout whose reader has gone (`| head` that already exited): no traceback, no
    message, exit 0 (rich's own handler exited 1, the code of a failed gate)."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write the child makes fails with EPIPE
    try:
        done = subprocess.run(
            [sys.executable, "-m", "hwadvisor", *command],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, "")


def test_output_to_devices_pipes_and_links(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """--output at a device (a /dev/null twin made with mknod) or a FIFO: the device
    survives as it was and receives the document (renaming a temporary file over it, as
    root, replaced /dev/null with a plain file). At a symlink, live or dangling: refused
    with one line, exit 2, the link and the file it names untouched (writing through
    it would clobber a file the user did not name)."""
    import stat
    import threading

    real = tmp_path / "real.json"
    real.write_text("old")
    (tmp_path / "link.json").symlink_to(real)
    (tmp_path / "dangling.json").symlink_to(tmp_path / "created.json")
    for name in ("link.json", "dangling.json"):
        result = cli("check", "--json", "--output", str(tmp_path / name))
        assert result.code == 2, (name, result.err)
        (line,) = result.error_lines()
        assert "is a symbolic link" in line and name in line
    assert real.read_text() == "old" and not (tmp_path / "created.json").exists()
    assert (tmp_path / "link.json").is_symlink() and (tmp_path / "dangling.json").is_symlink()
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[str] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_text()), daemon=True)
    reader.start()
    targets = ["fifo"]
    try:
        os.mknod(tmp_path / "null", stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets.append("null")
    except PermissionError:
        pass  # no CAP_MKNOD here: the FIFO still shows the device path
    for name in targets:
        result = cli("check", "--json", "--output", str(tmp_path / name))
        assert result.code == 0, (name, result.err)
    reader.join(timeout=30)
    doc = json.loads(result.out)
    assert json.loads(received[0])["tool"] == doc["tool"]
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    if "null" in targets:
        assert stat.S_ISCHR(os.stat(tmp_path / "null").st_mode)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporaries
