"""The user's own model code, run in a contained child process.

Importing ``file.py:callable`` or ``module:callable``, building the model, counting it
and ``--measure`` run the user's code, which may print, call ``sys.exit``, loop, sleep,
allocate without end or raise anything. None of that may reach this process, so all of
it runs in one child (``python -m hwadvisor.estimate.workload.contained``) that:

- reads its request as JSON on stdin and writes its answer as JSON on the stdout it was
  started with; everything the user's code prints (``print``, C-level writes to fd 1 or
  2) goes to the child's stderr, which this process captures and keeps out of its own
  streams, so stdout carries only the document;
- runs under a deadline (:func:`deadline_s`, ``HWADVISOR_MODEL_TIMEOUT``), past which
  its whole process group is killed;
- runs under an address-space limit (``resource.setrlimit(RLIMIT_AS)`` in the child,
  :func:`address_limit`), so a model too large for this machine fails there;
- dies with this process: it runs in its own session, and is killed (with its group)
  when this process is interrupted (Ctrl-C) or terminated (SIGTERM raises
  ``SystemExit(143)`` while we wait), and on Linux the kernel kills it if this process
  dies any other way (``PR_SET_PDEATHSIG``).

Any way the user's code ends (an exception, ``sys.exit(0)``, ``sys.exit("msg")``,
``os._exit``, a signal, the deadline, the memory limit) is one :class:`UsageError`
line (exit 2); hwadvisor's own errors raised there (a broken torch is exit 3) keep their
kind. A ``KeyboardInterrupt`` the code raises is an interrupt (exit 130).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from typing import Any

from hwadvisor.errors import HwadvisorError, MissingDependencyError, UsageError
from hwadvisor.optional import MISSING_TORCH
from hwadvisor.processes import terminate_raises

#: Environment variable: seconds the child may run (import, build, count or measure).
DEADLINE_ENV = "HWADVISOR_MODEL_TIMEOUT"
#: The default deadline: importing torch and the model, counting it on fake tensors and,
#: where those cannot run it, a real run at batches 1 and 2 per precision counted.
DEFAULT_DEADLINE_S = 300.0
#: The longest deadline the environment may ask for.
MAX_DEADLINE_S = 3600.0
#: Virtual address space the child may map beyond the memory available now: importing
#: torch alone maps about 1.5 GiB it never touches (its libraries, thread stacks).
ADDRESS_SLACK = 4 << 30
#: How long a killed child's reap is waited for.
REAP_TIMEOUT_S = 2.0
#: What a child may run: task name -> ``module:function`` (imported in the child alone),
#: called with the request's keywords; each returns JSON-ready data.
TASKS = {
    "workload": "hwadvisor.estimate.workload.usermodel:user_workload_data",
    "measure": "hwadvisor.estimate.timing.measure:measure_data",
}
#: Set in the child, so code that would start another child runs in this one instead.
_IN_CHILD = False


def in_child() -> bool:
    """Whether this process is a contained child (the user's code runs here)."""
    return _IN_CHILD


def deadline_s() -> float:
    """The child's deadline: ``HWADVISOR_MODEL_TIMEOUT`` seconds, else the default."""
    raw = os.environ.get(DEADLINE_ENV, "").strip()
    if not raw:
        return DEFAULT_DEADLINE_S
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not 0 < value <= MAX_DEADLINE_S:  # NaN fails too
        raise UsageError(
            f"{DEADLINE_ENV} must be a number of seconds above 0 and at most "
            f"{MAX_DEADLINE_S:g}, not {raw[:40]!r}"
        )
    return value


def address_limit() -> int | None:
    """Bytes of address space the child may map: the memory available now plus the
    slack (None where it cannot be read: no limit is set)."""
    try:
        import psutil

        return int(psutil.virtual_memory().available) + ADDRESS_SLACK
    except Exception:
        return None


def run_contained(task: str, spec: str, /, **kwargs: Any) -> Any:
    """Run ``task`` (one of :data:`TASKS`, called with ``kwargs``) for the model
    ``spec`` in a contained child; its JSON answer, or the error it ended with (see the
    module's docstring)."""
    import importlib.util

    from hwadvisor.estimate.workload.loading import check_spec

    check_spec(spec)  # a missing file or module is said before any child starts
    try:
        found = importlib.util.find_spec("torch") is not None
    except ImportError:
        found = False
    if not found:
        # Said here, where torch is looked for; a torch that fails to import is said by
        # the child, with the same kind (exit 3).
        raise MissingDependencyError(MISSING_TORCH)
    deadline = deadline_s()
    limit = address_limit()
    request = {"task": task, "kwargs": kwargs, "limit": limit, "parent": os.getpid()}
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    env.pop("HWADVISOR_DEBUG", None)  # the child answers in JSON, never with a traceback
    cmd = [sys.executable, "-m", "hwadvisor.estimate.workload.contained"]
    with terminate_raises():
        proc = subprocess.Popen(
            cmd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            start_new_session=True,  # the terminal's Ctrl-C is ours to pass on, as a kill
            close_fds=True,
        )
        try:
            out, err = proc.communicate(json.dumps(request).encode(), timeout=deadline)
        except subprocess.TimeoutExpired:
            _kill(proc)
            raise UsageError(
                f"model '{spec}': did not finish within {deadline:g} s (killed); "
                f"set {DEADLINE_ENV} to allow longer"
            ) from None
        except BaseException:
            _kill(proc)  # Ctrl-C, SIGTERM (SystemExit), or any error while we wait
            raise
        finally:
            _kill_group(proc.pid)  # anything the user's code left running in the group
    return _answer(spec, proc.returncode, out, err, limit)


def _answer(spec: str, code: int, out: bytes, err: bytes, limit: int | None) -> Any:
    """The child's answer, or the error its end means."""
    try:
        answer = json.loads(out.decode("utf-8"))
    except ValueError:
        answer = None
    if isinstance(answer, dict) and "value" in answer:
        return answer["value"]
    if isinstance(answer, dict) and isinstance(answer.get("error"), dict):
        raise _rebuilt(answer["error"], limit)
    if code < 0:
        try:
            how = f"was killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"was killed by signal {-code}"
    else:
        how = f"ended its process with exit status {code}"
    lines = [ln for ln in err.decode("utf-8", errors="replace").splitlines() if ln.strip()]
    said = f"; its last line: {lines[-1].strip()[:200]}" if lines else ""
    raise UsageError(f"model '{spec}': the model's code {how} before answering{said}")


def _rebuilt(error: dict[str, Any], limit: int | None) -> BaseException:
    """The error the child reported, as this process raises it."""
    kind = str(error.get("kind", "usage"))
    message = str(error.get("message", "failed"))
    if kind == "interrupted":
        return KeyboardInterrupt()
    if kind == "memory" and limit is not None:
        message += f" (the child may map {limit / 2**30:.1f} GiB: the memory available plus 4 GiB)"
    # The hierarchy's own classes only: a subclass elsewhere (RealRunFailed) shares its
    # parent's kind and takes other arguments.
    classes = {
        cls.kind: cls
        for cls in _subclasses(HwadvisorError)
        if cls.__module__ == HwadvisorError.__module__
    }
    cls = classes.get(kind, UsageError)
    return cls(message, where=error.get("where"))


def _subclasses(cls: type[HwadvisorError]) -> list[type[HwadvisorError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found.extend(_subclasses(sub))
    return found


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # gone already
        os.killpg(pid, signal.SIGKILL)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the child's group and reap it (bounded)."""
    _kill_group(proc.pid)
    with contextlib.suppress(Exception):
        proc.communicate(timeout=REAP_TIMEOUT_S)


# The child. ------------------------------------------------------------------------------


def _die_with_parent(parent: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (Linux), and leave at
    once if the parent is already gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL), 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def _error(kind: str, message: str, where: str | None = None) -> dict[str, Any]:
    return {"error": {"kind": kind, "message": message, "where": where}}


def _run_task(request: dict[str, Any]) -> dict[str, Any]:
    """The task's answer, or the error it ended with, as JSON-ready data."""
    import importlib

    from hwadvisor.estimate.workload.realrun import one_line

    spec = str(request["kwargs"].get("spec", ""))
    try:
        module, _, name = TASKS[request["task"]].partition(":")
        value = getattr(importlib.import_module(module), name)(**request["kwargs"])
        json.dumps(value)  # JSON-ready, or the error below
        return {"value": value}
    except HwadvisorError as exc:
        return _error(exc.kind, exc.message, exc.where)
    except KeyboardInterrupt:
        return _error("interrupted", "interrupted")
    except SystemExit as exc:
        code = exc.code
        said = f"sys.exit({code!r})" if code is not None else "sys.exit()"
        return _error("usage", f"model '{spec}': the model's code called {said}")
    except MemoryError:
        return _error("memory", f"model '{spec}': the model's code ran out of memory")
    except BaseException as exc:  # the user's own error, as one line
        return _error("usage", f"model '{spec}': the model's code raised {one_line(exc)}")


def main() -> None:
    """The child: bound this process, run the task, write the answer, leave."""
    global _IN_CHILD
    request = json.loads(sys.stdin.buffer.read())
    _die_with_parent(int(request["parent"]))
    limit = request.get("limit")
    if limit is not None:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (int(limit), int(limit)))
    _IN_CHILD = True
    answer_fd = os.dup(1)
    os.dup2(2, 1)  # the user's prints, Python or C, go to the captured stderr
    answer = _run_task(request)
    with contextlib.suppress(Exception):
        sys.stdout.flush()
        sys.stderr.flush()
    data = json.dumps(answer).encode()
    view = memoryview(data)
    while view:
        view = view[os.write(answer_fd, view) :]
    os._exit(0)  # no interpreter teardown: torch's takes a second and helps nothing


if __name__ == "__main__":
    # Through the imported module, so that in_child() reads the flag main() sets.
    from hwadvisor.estimate.workload.contained import main as contained_main

    contained_main()
