"""The user's model code runs contained (issue 44, class 1): prints stay off stdout,
every way the code can end is one line and exit 2, a build that hangs meets a deadline,
and the child dies with hwadvisor on Ctrl-C and SIGTERM alike.

The model files are written by each test; the child is real
(``hwadvisor.estimate.workload.contained``), and the autouse fixture in
tests/conftest.py fails any test that leaves a process behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

NOISY = """
import torch
print("printed at import")
class Noisy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(8, 4)
    def forward(self, x):
        print("printed in forward")
        return self.fc(x)
def build():
    print("printed in build")
    return Noisy()
"""

ENDINGS = """
import os, sys
def exit0():
    sys.exit(0)
def exit_msg():
    sys.exit("goodbye")
def hard_exit():
    os._exit(0)
def raises():
    raise ValueError("bad weights")
"""

HANGS = """
import os, time
def build():
    with open(os.environ["READY_FILE"] + ".part", "w") as f:
        f.write(str(os.getpid()))
    os.rename(os.environ["READY_FILE"] + ".part", os.environ["READY_FILE"])
    time.sleep(120)
"""

ESTIMATE = ["estimate", "--no-bench", "--on", "t4", "--input-shape", "8", "--json"]


def _model(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "model.py"
    path.write_text(text)
    return path


@pytest.mark.slow  # two children with torch (counting, --measure): about 10 s
def test_prints_stay_off_stdout(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Prints at import, in build() and in forward() (counting, then --measure) leave
    stdout one JSON document."""
    model = _model(tmp_path, NOISY)
    result = cli(*ESTIMATE, "--measure", "--model", f"{model}:build")
    assert result.code == 0, result.err
    doc = json.loads(result.out)  # nothing before or after the document
    assert "printed" not in result.out + result.err
    assert any(e.get("measured") for e in doc["estimates"])


@pytest.mark.parametrize(
    ("callable_", "needle"),
    [
        pytest.param("exit0", "called sys.exit(0)", marks=pytest.mark.slow),
        ("exit_msg", "called sys.exit('goodbye')"),
        pytest.param(
            "hard_exit",
            "ended its process with exit status 0 before answering",
            marks=pytest.mark.slow,
        ),
        pytest.param("raises", "ValueError: bad weights", marks=pytest.mark.slow),
    ],
)
def test_every_ending_of_user_code_is_one_line_and_exit_2(
    tmp_path: Path, cli: Callable[..., Any], callable_: str, needle: str
) -> None:
    """sys.exit(0) was exit 0 with no output, sys.exit("msg") exit 1 (a failed gate's
    code); now each is exit 2, and an --output from before is left as it was."""
    model = _model(tmp_path, ENDINGS)
    out = tmp_path / "out.json"
    out.write_text("before")
    result = cli(*ESTIMATE, "--model", f"{model}:{callable_}", "--output", str(out))
    assert result.code == 2, result.err
    (line,) = result.error_lines()
    assert needle in line, line
    assert json.loads(result.out)["error"]["exit_code"] == 2
    assert out.read_text() == "before"


@pytest.mark.slow  # waits out an 8 s deadline
def test_a_build_that_hangs_meets_its_deadline(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline is a handshake: the child says it is in build() (its ready file)
    before the clock matters; the run ends within the deadline plus start-up."""
    model = _model(tmp_path, HANGS)
    ready = tmp_path / "ready"
    monkeypatch.setenv("READY_FILE", str(ready))
    monkeypatch.setenv("HWADVISOR_MODEL_TIMEOUT", "8")
    started = time.monotonic()
    result = cli(*ESTIMATE, "--model", f"{model}:build")
    assert result.code == 2, result.err
    (line,) = result.error_lines()
    assert "did not finish within 8 s (killed)" in line
    assert ready.exists(), "the deadline expired before build() ran: nothing was exercised"
    assert time.monotonic() - started < 8 + 10
    assert not Path(f"/proc/{ready.read_text()}").exists() or _state(int(ready.read_text())) in "ZX"


def _state(pid: int) -> str:
    status = Path(f"/proc/{pid}/status")
    try:
        return status.read_text().split("State:")[1].split()[0]
    except (OSError, IndexError):
        return "X"


def _wait_for(path: Path, proc: subprocess.Popen[str], within_s: float = 60.0) -> int:
    deadline = time.monotonic() + within_s
    while not path.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            _out, err = proc.communicate()
            pytest.fail(f"the model never reached build(): {err[-2000:]}")
        time.sleep(0.02)  # polling for the handshake file, not timing anything
    return int(path.read_text())


@pytest.mark.parametrize(
    ("signum", "to_group", "code"),
    [
        pytest.param(signal.SIGINT, True, 130, marks=pytest.mark.slow),
        pytest.param(signal.SIGTERM, False, 143, marks=pytest.mark.slow),
    ],
    ids=["ctrl-c", "sigterm"],
)
def test_the_child_dies_with_hwadvisor(
    tmp_path: Path,
    as_at_a_terminal: Callable[[], None],
    signum: int,
    to_group: bool,
    code: int,
) -> None:
    """The signal lands mid-work: once the child says it is inside build(). Ctrl-C goes
    to the terminal's whole group, SIGTERM (``timeout``, ``kill``) to hwadvisor alone;
    either way the child, in its own session, is killed and nothing is left running."""
    model = _model(tmp_path, HANGS)
    ready = tmp_path / "ready"
    env = {**os.environ, "READY_FILE": str(ready)}
    env.pop("HWADVISOR_DEBUG", None)
    args = [*ESTIMATE, "--model", f"{model}:build"]
    proc = subprocess.Popen(
        [sys.executable, "-m", "hwadvisor", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        start_new_session=True,
        preexec_fn=as_at_a_terminal,
    )
    try:
        child = _wait_for(ready, proc)
        if to_group:
            os.killpg(proc.pid, signum)
        else:
            os.kill(proc.pid, signum)
        _out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == code, err
    assert "Traceback" not in err
    deadline = time.monotonic() + 5
    while _state(child) not in "ZX" and time.monotonic() < deadline:
        time.sleep(0.02)  # the kill is asynchronous; waiting for it to land, bounded
    assert _state(child) in "ZX", f"the model's child {child} outlived hwadvisor"


def test_a_model_value_past_255_characters_is_one_line(cli: Callable[..., Any]) -> None:
    result = cli(*ESTIMATE, "--model", "x" * 300 + ".py:build")
    assert result.code == 2
    (line,) = result.error_lines()
    assert "over the limit of 255" in line
