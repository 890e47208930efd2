"""Loading the user's own model: ``module:callable`` or ``path/to/file.py:callable``."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError


def looks_like_user_model(spec: str) -> bool:
    """Whether ``spec`` names a callable (``x:y``) rather than a catalog id."""
    return ":" in spec


def check_spec(spec: str) -> None:
    """What can be told of ``spec`` without running any of the user's code: its form, a
    model file that is not there, a top-level module that is not installed. One
    UsageError line each, as :func:`load_callable` says them (so a mistyped name costs no
    child process and no torch import)."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise UsageError(f"model '{spec}' must be module:callable or file.py:callable")
    if target.endswith(".py") or "/" in target or "\\" in target:
        if not Path(target).is_file():
            raise UsageError(f"model file '{Path(target)}' does not exist")
        return
    top = target.split(".")[0]
    try:
        found = top in sys.modules or importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise UsageError(f"model '{spec}': module '{target}' not found ({top})")


def load_callable(spec: str) -> Callable[[], Any]:
    """The callable named by ``spec``; any failure is one UsageError line.

    The user's code runs here (importing it is the point): errors it raises are reported
    with their type and message, not a traceback.
    """
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise UsageError(f"model '{spec}' must be module:callable or file.py:callable")
    if target.endswith(".py") or "/" in target or "\\" in target:
        module = _load_file(Path(target), spec)
    else:
        try:
            module = importlib.import_module(target)
        except ModuleNotFoundError as exc:
            raise UsageError(f"model '{spec}': module '{target}' not found ({exc.name})") from exc
        except Exception as exc:  # the user's module raised while importing
            raise _import_failed(spec, exc) from exc
    fn = getattr(module, attr, None)
    if fn is None or not callable(fn):
        raise UsageError(f"model '{spec}': '{attr}' is not a callable in {target}")
    return fn


def _load_file(path: Path, spec: str) -> Any:
    if not path.is_file():
        raise UsageError(f"model file '{path}' does not exist")
    name = f"_hwadvisor_user_model_{abs(hash(str(path.resolve())))}"
    loader_spec = importlib.util.spec_from_file_location(name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise UsageError(f"model file '{path}' cannot be imported as Python")
    module = importlib.util.module_from_spec(loader_spec)
    # Registered so that dataclasses and pickling inside the user's file work.
    sys.modules[name] = module
    try:
        loader_spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop(name, None)
        raise _import_failed(spec, exc) from exc
    return module


def _import_failed(spec: str, exc: Exception) -> UsageError:
    return UsageError(f"model '{spec}': importing it raised {type(exc).__name__}: {exc}")
