"""A torch that is missing, or installed but failing at import, for every command that
may need it: bench, check --bench, estimate, recommend.

"Fails at import" is a package named ``torch`` on ``PYTHONPATH`` whose ``__init__``
raises, as a torch wheel does when its CUDA runtime or a shared library will not load.
"Missing" is a meta-path finder that refuses ``torch`` (the virtualenv has torch, and
uninstalling it for a test is not an option). Both run as real child processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hwadvisor.models.schemas import schema_for

FACTS = Path(__file__).parents[1] / "data" / "facts" / "laptop.json"
MODELS = Path(__file__).parents[1] / "data" / "models"

BROKEN = {
    "runtime": 'raise RuntimeError("CUDA driver initialization failed")\n',
    "oserror": 'raise OSError("libtorch_cpu.so: cannot open shared object file")\n',
}


def _without_warnings(err: str) -> list[str]:
    """Stderr's lines less the warnings any run may add (prices more than a year old)."""
    return [ln for ln in err.splitlines() if not ln.startswith("hwadvisor: warning:")]


def _torch_raising(folder: Path, body: str) -> dict[str, str]:
    pkg = folder / "torch"
    pkg.mkdir()
    (pkg / "__init__.py").write_text(body)
    return {"PYTHONPATH": str(folder)}


@pytest.fixture
def broken_torch(tmp_path: Path) -> dict[str, str]:
    """Environment that puts a torch failing at import (RuntimeError) first on the path."""
    return _torch_raising(tmp_path, BROKEN["runtime"])


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_bench_names_the_broken_torch(
    kind: str, tmp_path: Path, proc: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    result = proc(["bench", "--json", "--budget", "2"], env=_torch_raising(tmp_path, BROKEN[kind]))
    clean_error(result, 3, "torch is installed but failed to import", wants_json=True)
    assert BROKEN[kind].split('"')[1] in result.err  # the reason torch gave


def test_check_bench_records_the_failure_and_still_exits_0(
    broken_torch: dict[str, str], proc: Callable[..., Any]
) -> None:
    result = proc(["check", "--json", "--bench"], env=broken_torch)
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    jsonschema.validate(doc, schema_for("facts"))
    bench = next(p for p in doc["probes"] if p["name"] == "bench")
    assert bench["status"] == "error" and "failed to import" in bench["error"]
    assert doc["bench"] is None


@pytest.mark.slow  # several child processes, each importing the CLI
def test_estimate_and_recommend_fall_back_to_peaks(
    broken_torch: dict[str, str], proc: Callable[..., Any]
) -> None:
    """Catalog models need no torch: the estimate and the advice still come, with a note."""
    est = proc(["estimate", "--json", "--model", "resnet50", "--on", "here"], env=broken_torch)
    assert est.code == 0, est.err
    jsonschema.validate(json.loads(est.out), schema_for("estimate"))
    rec = proc(
        ["recommend", "--json", "--scenario", "training", "--model", "resnet50"], env=broken_torch
    )
    assert rec.code == 0, rec.err
    jsonschema.validate(json.loads(rec.out), schema_for("advice"))
    said = _without_warnings(rec.err)
    assert said[0].startswith("hwadvisor: note: no microbenchmark (torch is installed but failed")
    assert len(said) == 1


@pytest.mark.parametrize(
    "args",
    [
        ["estimate", "--json", "--no-bench", "--model", "os:getcwd", "--input-shape", "32"],
        ["recommend", "--json", "--no-bench", "--scenario", "training", "--facts", str(FACTS),
         "--model", f"{MODELS / 'mlp.py'}:build", "--input-shape", "32"],
    ],
    ids=["estimate-module-model", "recommend-file-model"],
)  # fmt: skip
def test_user_models_need_torch_and_say_so(
    broken_torch: dict[str, str],
    proc: Callable[..., Any],
    clean_error: Callable[..., None],
    args: list[str],
) -> None:
    """A user's model is counted with torch: a broken torch is exit 3, never the user's
    fault (exit 2) nor an internal error."""
    clean_error(proc(args, env=broken_torch), 3, "failed to import", wants_json=True)


def test_measure_with_broken_torch_is_exit_3(
    broken_torch: dict[str, str], proc: Callable[..., Any], clean_error: Callable[..., None]
) -> None:
    args = ["estimate", "--no-bench", "--model", f"{MODELS / 'mlp.py'}:build"]
    result = proc([*args, "--input-shape", "32", "--measure"], env=broken_torch)
    clean_error(result, 3, "failed to import")


#: Runs the CLI with ``torch`` impossible to import, as on a machine without it.
WITHOUT_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, _NoTorch())
from hwadvisor.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _without_torch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_TORCH, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.slow  # several child processes, each importing the CLI
def test_missing_torch_everywhere() -> None:
    bench = _without_torch("bench", "--json")
    assert bench.returncode == 3 and "Traceback" not in bench.stderr
    assert (
        bench.stderr.strip()
        == "hwadvisor: error: torch is not installed: pip install 'hwadvisor[bench]'"
    )
    assert json.loads(bench.stdout)["error"]["kind"] == "missing_dependency"

    check = _without_torch("check", "--json", "--bench")
    assert check.returncode == 0, check.stderr
    doc = json.loads(check.stdout)
    jsonschema.validate(doc, schema_for("facts"))
    assert next(p for p in doc["probes"] if p["name"] == "bench")["status"] == "absent"

    rec = _without_torch("recommend", "--json", "--scenario", "inference", "--model", "bert-base")
    assert rec.returncode == 0, rec.stderr
    jsonschema.validate(json.loads(rec.stdout), schema_for("advice"))
    assert "Traceback" not in rec.stderr and len(_without_warnings(rec.stderr)) == 1

    user = _without_torch("estimate", "--no-bench", "--model", "os:getcwd", "--input-shape", "3")
    assert user.returncode == 3 and "Traceback" not in user.stderr
    assert (
        user.stderr.strip()
        == "hwadvisor: error: torch is not installed: pip install 'hwadvisor[bench]'"
    )


def _torch_mapped(pid: int, within_s: float = 60.0) -> bool:
    """Wait until process ``pid`` has torch's library mapped (its import is under way)."""
    import time

    maps = Path(f"/proc/{pid}/maps")
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if "libtorch" in maps.read_text():
                return True
        except OSError:
            return False  # gone, or no /proc
        time.sleep(0.02)  # polling for the library, not timing anything
    return False


@pytest.mark.slow
def test_ctrl_c_during_a_real_bench_exits_130_with_a_document(
    as_at_a_terminal: Callable[[], None],
) -> None:
    """SIGINT to the whole group, as a terminal sends it, once the real run has started
    (torch's library is mapped in the process: the handshake): exit 130, one stderr
    line, and on stdout either the partial bench document (``interrupted: true``, valid
    against the schema) or, if torch was still importing, the JSON error document.
    tests/bench/ checks the partial figures with fakes."""
    import os
    import signal

    child = subprocess.Popen(
        [sys.executable, "-m", "hwadvisor", "bench", "--json", "--device", "cpu", "--budget", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=as_at_a_terminal,
    )
    try:
        if not _torch_mapped(child.pid):
            pytest.skip("cannot see the child's mapped libraries (no /proc)")
        os.killpg(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    assert child.returncode == 130
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    doc = json.loads(out)
    if "error" in doc:
        assert doc["error"]["exit_code"] == 130
    else:
        assert doc["interrupted"] is True
        jsonschema.validate(doc, schema_for("bench"))
