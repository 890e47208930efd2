"""The seams through which every probe reads the machine, so tests can fake it.

A probe never opens ``/proc`` or ``/sys`` itself: it asks a :class:`HostFS` rooted at
``/`` on a real machine, or at ``tests/data/hosts/<name>/`` for a recorded one. Facts
that do not live in files (uname, the affinity mask's source of truth on other systems,
environment variables) come from a :class:`SystemInfo`, which a recorded host supplies
from its ``host.json``.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hwadvisor.probe.nvml_process import ChildResult


class HostFS:
    """Read-only view of the machine's files under one root folder."""

    def __init__(self, root: str | Path = "/") -> None:
        self.root = Path(root)

    def _path(self, path: str) -> Path:
        return self.root / path.lstrip("/")

    def read(self, path: str) -> str | None:
        """Text of ``path``, or None when it does not exist.

        ``PermissionError`` propagates so that the probe can record ``denied``; other
        OS errors (a sysfs file that fails on read) read as missing.
        """
        try:
            return self._path(path).read_text(encoding="utf-8", errors="replace")
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            return None
        except PermissionError:
            raise
        except OSError:
            return None

    def read_first_line(self, path: str) -> str | None:
        """First line of ``path``, stripped, or None."""
        text = self.read(path)
        if text is None:
            return None
        return text.strip().splitlines()[0].strip() if text.strip() else ""

    def listdir(self, path: str) -> list[str]:
        """Sorted names in folder ``path``; empty when it is missing or unreadable."""
        try:
            return sorted(os.listdir(self._path(path)))
        except OSError:
            return []

    def exists(self, path: str) -> bool:
        """Whether ``path`` exists (a file, folder or device node)."""
        return os.path.lexists(self._path(path))


@dataclass(frozen=True)
class SystemInfo:
    """Facts that do not come from files: what ``uname``, ``hostname`` and ``env`` say."""

    system: str = field(default_factory=platform.system)
    machine: str = field(default_factory=platform.machine)
    release: str = field(default_factory=platform.release)
    hostname: str = field(default_factory=socket.gethostname)
    python: str = field(default_factory=platform.python_version)
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    affinity: frozenset[int] | None = field(default_factory=lambda: _affinity())
    is_real: bool = True

    @classmethod
    def from_file(cls, path: str | Path) -> SystemInfo:
        """Load a recorded host's ``host.json`` (keys as the fields; all optional)."""
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        aff = data.get("affinity")
        return cls(
            system=data.get("system", "Linux"),
            machine=data.get("machine", "x86_64"),
            release=data.get("release", "unknown"),
            hostname=data.get("hostname", "recorded"),
            python=data.get("python", "3.11.0"),
            env=dict(data.get("env", {})),
            affinity=frozenset(aff) if aff is not None else None,
            is_real=False,
        )


def _affinity() -> frozenset[int] | None:
    getter = getattr(os, "sched_getaffinity", None)
    if getter is None:
        return None
    try:
        return frozenset(getter(0))
    except OSError:
        return None


@dataclass(frozen=True)
class Seams:
    """Everything a probe may read; the real machine by default."""

    fs: HostFS = field(default_factory=HostFS)
    system: SystemInfo = field(default_factory=SystemInfo)
    site_paths: tuple[str, ...] = field(default_factory=lambda: tuple(sys.path))
    #: Runs the NVML child, ``(timeout, env) -> ChildResult``; None runs the real one
    #: (:func:`~hwadvisor.probe.nvml_process.run_child`). Tests pass a fake here.
    nvml_child: Callable[[float, dict[str, str]], ChildResult] | None = None

    @classmethod
    def recorded(cls, folder: str | Path) -> Seams:
        """Seams over a recorded host folder (``proc/``, ``sys/``, ``host.json``)."""
        folder = Path(folder)
        host_json = folder / "host.json"
        system = (
            SystemInfo.from_file(host_json) if host_json.exists() else SystemInfo(is_real=False)
        )
        return cls(fs=HostFS(folder), system=system, site_paths=())
