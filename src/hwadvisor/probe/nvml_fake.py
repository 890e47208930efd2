"""A stand-in for the ``pynvml`` module that replays recorded NVML answers (a test seam).

A recording (``tests/data/nvml/<name>.json``, format in that folder's README) holds, per
query, the value NVML returned or the name of the error it raised. :class:`FakeNvml`
offers the ``pynvml`` functions that :func:`~hwadvisor.probe.nvml_query.query_gpus`
calls and raises ``pynvml``'s own error classes, so the same code runs against it as
against a real driver.

The child process uses it instead of ``pynvml`` when ``HWADVISOR_FAKE_NVML`` names a
recording; besides values and errors, a recording may then ask a query to ``hang``
(sleep until killed) or ``crash`` (kill the child with a signal), so the parent's
deadline and crash handling can be tested for real. These two only ever act inside the
child process.

A hang is a handshake, not a guess at timing: when ``HWADVISOR_FAKE_NVML_READY`` names a
file, the hanging child writes its pid there first, so a test waits for that file rather
than sleeping. A hang also ends by itself after :data:`HANG_LIMIT_S` (the process exits),
so a child that a broken test failed to kill cannot outlive the test run by long.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pynvml

#: Constants query_gpus reads from the module.
NVML_FEATURE_ENABLED = pynvml.NVML_FEATURE_ENABLED
NVML_NVLINK_MAX_LINKS = pynvml.NVML_NVLINK_MAX_LINKS
NVML_TEMPERATURE_GPU = pynvml.NVML_TEMPERATURE_GPU
NVML_DEVICE_MIG_ENABLE = pynvml.NVML_DEVICE_MIG_ENABLE


def nvml_error(name: str) -> pynvml.NVMLError:
    """An instance of ``pynvml.NVMLError_<name>`` (e.g. ``NotSupported``)."""
    cls = getattr(pynvml, f"NVMLError_{name}", None)
    if cls is None:
        raise ValueError(f"unknown NVML error name {name!r}")
    err: pynvml.NVMLError = cls()
    return err


#: Names a file the child writes its pid to when it starts to hang (the handshake).
READY_ENV = "HWADVISOR_FAKE_NVML_READY"
#: The longest a hang lasts before the child exits by itself (status 70), unkilled.
HANG_LIMIT_S = 60.0


def hang(limit_s: float = HANG_LIMIT_S) -> None:
    """Stand for a driver call that never returns: say so (see :data:`READY_ENV`), then
    sleep until killed, or exit the process after ``limit_s``."""
    ready = os.environ.get(READY_ENV)
    if ready:  # written whole, then renamed: the waiting test never reads half a pid
        part = Path(f"{ready}.part")
        part.write_text(str(os.getpid()), encoding="utf-8")
        os.replace(part, ready)
    time.sleep(limit_s)
    os._exit(70)


def _answer(value: Any) -> Any:
    """Return a recorded value, or act on a recorded error / hang / crash."""
    if isinstance(value, dict):
        if "error" in value:
            raise nvml_error(str(value["error"]))
        if value.get("hang"):
            hang()
        if "crash" in value:
            os.kill(os.getpid(), getattr(signal, str(value["crash"])))
            time.sleep(5)  # the signal is delivered before this returns
    return value


class FakeNvml:
    """Replays one recording; functions named and shaped as in ``pynvml``."""

    NVMLError = pynvml.NVMLError
    NVML_FEATURE_ENABLED = NVML_FEATURE_ENABLED
    NVML_NVLINK_MAX_LINKS = NVML_NVLINK_MAX_LINKS
    NVML_TEMPERATURE_GPU = NVML_TEMPERATURE_GPU
    NVML_DEVICE_MIG_ENABLE = NVML_DEVICE_MIG_ENABLE

    def __init__(self, recording: dict[str, Any]) -> None:
        self.recording = recording
        defaults = recording.get("device_defaults", {})
        self.devices: list[dict[str, Any]] = [
            {**defaults, **dev} for dev in recording.get("devices", [])
        ]
        self.system: dict[str, Any] = recording.get("system", {})
        self.initialised = False

    @classmethod
    def from_file(cls, path: str | Path) -> FakeNvml:
        """Load a recording from a JSON file."""
        return cls(json.loads(Path(path).read_text(encoding="utf-8")))

    def _dev(self, handle: int, key: str) -> Any:
        if not self.initialised:
            raise nvml_error("Uninitialized")
        dev = self.devices[handle]
        if key not in dev:
            raise nvml_error("NotSupported")
        return _answer(dev[key])

    # -- library ------------------------------------------------------------------
    def nvmlInit(self) -> None:
        _answer(self.recording.get("init"))
        self.initialised = True

    def nvmlShutdown(self) -> None:
        self.initialised = False

    def nvmlSystemGetDriverVersion(self) -> str:
        return str(_answer(self.system.get("driver_version", {"error": "NotSupported"})))

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return int(_answer(self.system.get("cuda_driver_version", {"error": "NotSupported"})))

    def nvmlDeviceGetCount(self) -> int:
        _answer(self.recording.get("count_error"))
        return len(self.devices)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        if not 0 <= index < len(self.devices):
            raise nvml_error("InvalidArgument")
        _answer(self.devices[index].get("handle"))
        return index

    # -- per device ---------------------------------------------------------------
    def nvmlDeviceGetUUID(self, handle: int) -> str:
        return str(self._dev(handle, "uuid"))

    def nvmlDeviceGetPciInfo(self, handle: int) -> SimpleNamespace:
        # pynvml returns a ctypes struct whose busId is bytes; keep that shape.
        return SimpleNamespace(busId=str(self._dev(handle, "pci_bus_id")).encode())

    def nvmlDeviceGetName(self, handle: int) -> str:
        return str(self._dev(handle, "name"))

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        mem = self._dev(handle, "memory")
        return SimpleNamespace(
            total=mem["total"], free=mem["free"], used=mem.get("used", mem["total"] - mem["free"])
        )

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:
        major, minor = self._dev(handle, "compute_capability")
        return int(major), int(minor)

    def nvmlDeviceGetAttributes(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(**self._dev(handle, "attributes"))

    def nvmlDeviceGetCurrPcieLinkGeneration(self, handle: int) -> int:
        return int(self._dev(handle, "pcie_gen_current"))

    def nvmlDeviceGetMaxPcieLinkGeneration(self, handle: int) -> int:
        return int(self._dev(handle, "pcie_gen_max"))

    def nvmlDeviceGetCurrPcieLinkWidth(self, handle: int) -> int:
        return int(self._dev(handle, "pcie_width_current"))

    def nvmlDeviceGetMaxPcieLinkWidth(self, handle: int) -> int:
        return int(self._dev(handle, "pcie_width_max"))

    def nvmlDeviceGetNvLinkState(self, handle: int, link: int) -> int:
        states = self._dev(handle, "nvlink_states")
        if link >= len(states):
            raise nvml_error("InvalidArgument")  # what NVML says past the last link
        return int(_answer(states[link]))

    def nvmlDeviceGetMigMode(self, handle: int) -> tuple[int, int]:
        current, pending = self._dev(handle, "mig_mode")
        return int(current), int(pending)

    def nvmlDeviceGetEnforcedPowerLimit(self, handle: int) -> int:
        return int(self._dev(handle, "power_limit_mw"))

    def nvmlDeviceGetPowerManagementLimit(self, handle: int) -> int:
        return int(self._dev(handle, "power_management_limit_mw"))

    def nvmlDeviceGetTemperature(self, handle: int, sensor: int) -> int:
        return int(self._dev(handle, "temperature_c"))

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        util = self._dev(handle, "utilization")
        return SimpleNamespace(gpu=util["gpu"], memory=util.get("memory", 0))
