"""Child-process entry point of the NVIDIA probe: ``python -m hwadvisor.probe.nvml_child``.

NVML can hang (a broken or half-upgraded driver, a GPU lost from the bus) or crash the
process that calls it, so the parent never calls it itself: it starts this module under a
deadline and reads its stdout. Output is JSON Lines, flushed as it goes so that a parent
that has to kill a hung child keeps the GPUs already read:

- ``{"gpu": {...}}`` per GPU, as :func:`~hwadvisor.probe.nvml_query.query_gpus` reads it;
- then ``{"done": true, "notes": [...]}``, or ``{"fatal": NAME, "message": ...}`` when
  NVML cannot start (``LibraryNotFound``, ``DriverNotLoaded``, ``LibRmVersionMismatch``).

Test seam: when ``HWADVISOR_FAKE_NVML`` names a recording (see ``tests/data/nvml/``), the
child replays it through :class:`~hwadvisor.probe.nvml_fake.FakeNvml` instead of loading
``libnvidia-ml.so.1``.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from hwadvisor.probe.nvml_query import NvmlUnavailable, Record, query_gpus

FAKE_ENV = "HWADVISOR_FAKE_NVML"


def _emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def _load_nvml() -> Any:
    fake = os.environ.get(FAKE_ENV)
    if fake:
        from hwadvisor.probe.nvml_fake import FakeNvml

        return FakeNvml.from_file(fake)
    import pynvml  # nvidia-ml-py; loading the shared library waits for nvmlInit

    return pynvml


def main() -> int:
    """Query NVML and write JSON Lines on stdout; exit 0 unless something unforeseen broke."""
    try:
        nvml = _load_nvml()
    except ImportError as exc:
        _emit(
            {
                "fatal": "BindingMissing",
                "message": f"the NVML binding (nvidia-ml-py) is not installed: {exc}",
            }
        )
        return 0
    except (OSError, ValueError) as exc:
        _emit({"fatal": "FakeUnreadable", "message": f"{FAKE_ENV}: {exc}"})
        return 0

    def gpu_line(rec: Record) -> None:
        _emit({"gpu": rec})

    try:
        _, notes = query_gpus(nvml, emit=gpu_line)
    except NvmlUnavailable as exc:
        _emit({"fatal": exc.name, "message": exc.message})
        return 0
    except Exception as exc:  # any surprise still reaches the parent as one line
        _emit({"fatal": type(exc).__name__, "message": str(exc)})
        return 1
    _emit({"done": True, "notes": notes})
    return 0


if __name__ == "__main__":
    sys.exit(main())
