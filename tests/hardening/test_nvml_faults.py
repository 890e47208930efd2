"""Broken NVIDIA stacks, end to end through ``hwadvisor check`` (SPEC §8).

The unit tests in tests/probe/ drive the NVML probe function; here the whole command
runs, as a provisioning script would run it: exit 0 within the ``--timeout`` deadline,
a facts document valid against the published schema, the GPU probe marked with the
reason, and the CPU, memory and host facts still there.

- The stand-in ``libnvidia-ml.so.1`` (C, built for this run) hangs in ``nvmlInit``,
  segfaults, reports a driver/library mismatch, or answers for one GPU with most
  functions missing; ``LD_LIBRARY_PATH`` makes the real pynvml in the child load it.
- The recordings in tests/data/nvml/ replay library missing, driver not loaded,
  NotSupported everywhere (WSL2), a GPU lost mid-query, a hang and a crash inside a
  device query, through ``HWADVISOR_FAKE_NVML``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.schemas import schema_for

RECORDINGS = Path(__file__).parents[1] / "data" / "nvml"
#: Start-up, the other probes and the 1 s reap of a killed child, on a slow CI machine.
SLACK_S = 6.0


@cache
def _validator(name: str) -> Any:
    """A compiled validator: ``jsonschema.validate`` re-checks the schema itself on every
    call, about 0.2 s here, which would dominate these tests."""
    schema = schema_for(name)
    return jsonschema.validators.validator_for(schema)(schema)


def _facts_ok(doc: dict[str, Any]) -> dict[str, Any]:
    """The document validates, and the non-GPU facts survived; returns the NVIDIA probe."""
    _validator("facts").validate(doc)
    probes = {p["name"]: p for p in doc["probes"]}
    assert probes["cpu"]["status"] == "ok" and doc["cpu"]["logical_cores"]
    assert probes["memory"]["status"] == "ok" and doc["memory"]["total_bytes"]
    assert doc["host"]["python"]
    record: dict[str, Any] = probes["gpu.nvidia"]
    return record


#: The deadline where the child hangs: nothing is expected before it, so it can be short
#: (wherever the child is when it expires, starting or hung, it is killed), but long
#: enough for the child to reach the hang (about 0.3 s here), which each test checks.
#: Where the child does not hang, the deadline is long: it must never cut a healthy
#: answer short.
HANG_S = 1.0
NO_HANG_S = 30.0


def reached(log: Path, mode: str, deadline: float) -> None:
    """The stand-in library was loaded and its ``mode`` entered (its log says so): the
    fault was exercised, not stopped earlier (at "no device", say). A hang the child
    did not reach within a short deadline on a slow machine skips, with the reason."""
    said = log.read_text() if log.exists() else ""
    if f"init {mode} " in said:
        return
    if mode == "hang":
        pytest.skip(
            f"the NVML child did not reach nvmlInit within {deadline:g} s on this machine: "
            "the hang was not exercised"
        )
    pytest.fail(f"the stand-in NVML library was never entered (log: {said!r})")


@pytest.mark.parametrize(
    ("mode", "status", "needle", "gpus"),
    [
        ("hang", "timeout", f"no complete answer within {HANG_S:g} s", 0),
        ("segv", "error", "SIGSEGV", 0),
        ("mismatch", "error", "version mismatch", 0),
        ("one", "ok", "FunctionNotFound", 1),
    ],
    ids=["hang", "segv", "mismatch", "one"],
)
def test_check_survives_the_standin_library(
    standin_nvml: Path,
    proc: Callable[..., Any],
    mode: str,
    status: str,
    needle: str,
    gpus: int,
    tmp_path: Path,
) -> None:
    log = tmp_path / "nvml.log"
    env = {
        "LD_LIBRARY_PATH": str(standin_nvml),
        "STANDIN_NVML_MODE": mode,
        "STANDIN_NVML_LOG": str(log),
        "HWADVISOR_NVML": "force",
    }
    deadline = HANG_S if mode == "hang" else NO_HANG_S
    result = proc(["check", "--json", "--timeout", f"{deadline:g}"], env=env, timeout=60)
    assert result.code == 0, result.err
    assert result.err == ""
    reached(log, mode, deadline)
    if mode == "hang":
        assert result.seconds < HANG_S + SLACK_S
    record = _facts_ok(json.loads(result.out))
    assert record["status"] == status
    assert needle in (record["error"] or "")
    assert len(json.loads(result.out)["gpus"]) == gpus


@pytest.mark.slow  # waits out a hung driver's deadline; check's own hang test stays quick
def test_hung_driver_bounds_export_too(
    standin_nvml: Path, proc: Callable[..., Any], tmp_path: Path
) -> None:
    """Every command that probes takes the deadline: export's --timeout as well."""
    log = tmp_path / "nvml.log"
    env = {
        "LD_LIBRARY_PATH": str(standin_nvml),
        "STANDIN_NVML_MODE": "hang",
        "STANDIN_NVML_LOG": str(log),
        "HWADVISOR_NVML": "force",
    }
    args = ["export", "--format", "nfd", "--timeout", f"{HANG_S:g}", "--json"]
    result = proc(args, env=env, timeout=60)
    assert result.code == 0, result.err
    reached(log, "hang", HANG_S)
    assert result.seconds < HANG_S + SLACK_S
    assert "hwadvisor.io/" in json.loads(result.out)["content"]


def _wait_for_file(path: Path, within_s: float = 60.0) -> str:
    """The text of ``path`` once it exists (a handshake: the hang has begun)."""
    deadline = time.monotonic() + within_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared"
        time.sleep(0.01)  # polling for the file, not timing anything
    return path.read_text()


@pytest.mark.parametrize(
    ("signum", "to_group", "code", "stderr"),
    [
        (signal.SIGINT, True, 130, "hwadvisor: error: interrupted\n"),
        (signal.SIGTERM, False, 143, ""),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_interrupted_during_a_hung_nvml_init_kills_the_child(
    standin_nvml: Path,
    tmp_path: Path,
    as_at_a_terminal: Callable[[], None],
    signum: int,
    to_group: bool,
    code: int,
    stderr: str,
) -> None:
    """Ctrl-C reaches the whole foreground group; `timeout 5 hwadvisor check` sends
    SIGTERM to hwadvisor alone. The NVML child runs in its own session, so hwadvisor must
    kill it itself, or a hung driver call outlives the command. The signal is sent once
    the stand-in says it is hung in nvmlInit (its ready file), not after a sleep."""
    ready = tmp_path / "hung"
    env = {
        **os.environ,
        "LD_LIBRARY_PATH": str(standin_nvml),
        "STANDIN_NVML_MODE": "hang",
        "STANDIN_NVML_READY": str(ready),
        "HWADVISOR_NVML": "force",
    }
    child = subprocess.Popen(
        [sys.executable, "-m", "hwadvisor", "check", "--json", "--timeout", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=as_at_a_terminal,
    )
    try:
        nvml_child = int(_wait_for_file(ready))
        if to_group:
            os.killpg(child.pid, signum)
        else:
            os.kill(child.pid, signum)
        out, err = child.communicate(timeout=30)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert (child.returncode, err) == (code, stderr), out[-2000:]
    if code == 130:
        assert json.loads(out)["error"]["exit_code"] == 130
    status = Path(f"/proc/{nvml_child}/status")
    state = status.read_text().split("State:")[1].split()[0] if status.exists() else "gone"
    assert state in ("gone", "Z", "X"), f"NVML child {nvml_child} still running ({state})"


#: The recordings of broken stacks (the healthy ones are checked in tests/probe/).
BROKEN = [
    "library_missing",
    "driver_not_loaded",
    "version_mismatch",
    "wsl2_not_supported",
    "gpu_lost",
    "hang_in_device",
    "crash_in_device",
]


@pytest.mark.parametrize("recording", [f"{name}.json" for name in BROKEN], ids=BROKEN)
def test_check_with_each_recorded_nvidia_stack(
    recording: str, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Each broken stack through the full command: exit 0, valid facts, the probe status
    and reason the recording expects. The recording is replayed in the NVML child even
    without /dev/nvidia* (``HWADVISOR_FAKE_NVML`` skips the device check); each
    expected reason is one only the replay gives, and a recorded hang says it began
    (``HWADVISOR_FAKE_NVML_READY``)."""
    data = json.loads((RECORDINGS / recording).read_text())
    monkeypatch.setenv("HWADVISOR_FAKE_NVML", str(RECORDINGS / recording))
    ready = tmp_path / "hung"
    monkeypatch.setenv("HWADVISOR_FAKE_NVML_READY", str(ready))
    hangs = data["expected"]["status"] == "timeout"
    deadline = HANG_S if hangs else NO_HANG_S
    started = time.monotonic()
    result = cli("check", "--json", "--timeout", f"{deadline:g}")
    assert result.code == 0, result.err
    assert time.monotonic() - started < deadline + SLACK_S
    record = _facts_ok(json.loads(result.out))
    expected = data["expected"]
    assert record["status"] == expected["status"]
    for needle in expected.get("error_contains", []):
        assert needle in (record["error"] or "")
    assert "no NVIDIA driver or device found" not in (record["error"] or "")
    if hangs and not ready.exists():
        pytest.skip(f"the replay did not reach its hang within {deadline:g} s on this machine")
