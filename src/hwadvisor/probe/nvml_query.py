"""The NVML queries, as a pure function over an NVML-like object.

``query_gpus(nvml)`` takes the ``pynvml`` module (nvidia-ml-py) or a fake with the same
functions and error classes, and returns one plain dict per GPU: what
``nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total,memory.free,compute_cap,
driver_version,pcie.link.gen.current,pcie.link.width.current,power.limit,temperature.gpu,
utilization.gpu`` prints, plus NVLink and MIG state. It runs inside the child process
(:mod:`hwadvisor.probe.nvml_child`) and imports nothing but the standard library, so the
child starts fast and the parent validates the result.

Each field is read on its own: an NVML error leaves that field ``None`` and names the
error in the record's ``errors`` map, never losing the device. A GPU that falls off the
bus mid-query (``GpuIsLost``) keeps what was read and is marked ``lost``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

Record = dict[str, Any]

#: Errors of ``nvmlInit`` that mean "no usable NVIDIA stack here" rather than a fault.
ABSENT_ERRORS = frozenset({"LibraryNotFound", "DriverNotLoaded"})


class NvmlUnavailable(Exception):
    """NVML could not start (``nvmlInit`` or the device count failed); ``name`` says why."""

    def __init__(self, name: str, message: str) -> None:
        super().__init__(message)
        self.name = name
        self.message = message


class _GpuLost(Exception):
    """Internal: the device answered ``GpuIsLost``; stop querying it."""


def error_name(exc: BaseException) -> str:
    """Short NVML error name: ``NVMLError_NotSupported`` -> ``NotSupported``."""
    cls = type(exc).__name__
    return cls.removeprefix("NVMLError_") if cls.startswith("NVMLError_") else cls


def cuda_version_text(value: int | None) -> str | None:
    """NVML's integer CUDA version (12040) -> ``"12.4"``."""
    if not isinstance(value, int) or value <= 0:
        return None
    return f"{value // 1000}.{(value % 1000) // 10}"


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    return str(value).strip("\x00").strip() or None


def normalise_bus_id(value: Any) -> str | None:
    """NVML's ``00000000:18:00.0`` -> sysfs/lspci form ``0000:18:00.0`` (lower case)."""
    text = _text(value)
    if text is None:
        return None
    domain, sep, rest = text.partition(":")
    if not sep:
        return text.lower()
    return f"{int(domain, 16) if _is_hex(domain) else 0:04x}:{rest.lower()}"


def _is_hex(text: str) -> bool:
    try:
        int(text, 16)
    except ValueError:
        return False
    return True


class _Reader:
    """Calls NVML functions for one device, recording each failure by field."""

    def __init__(self, nvml: Any, errors: dict[str, str]) -> None:
        self.nvml = nvml
        self.errors = errors

    def call(self, field: str, fn_name: str, *args: Any) -> Any:
        fn = getattr(self.nvml, fn_name, None)
        if fn is None:
            self.errors.setdefault(field, "FunctionNotFound")
            return None
        try:
            return fn(*args)
        except self.nvml.NVMLError as exc:
            name = error_name(exc)
            if name == "GpuIsLost":
                self.errors[field] = name
                raise _GpuLost(field) from exc
            self.errors[field] = name
            return None

    def first(self, field: str, *fn_names: str, args: tuple[Any, ...] = ()) -> Any:
        """The first of several equivalent queries that answers (current, then max)."""
        for fn_name in fn_names:
            value = self.call(field, fn_name, *args)
            if value is not None:
                self.errors.pop(field, None)
                return value
        return None


def _nvlink_links(reader: _Reader, handle: Any) -> int | None:
    """Count active NVLink links: query link 0, 1, ... until NVML says there are no more."""
    nvml = reader.nvml
    enabled = getattr(nvml, "NVML_FEATURE_ENABLED", 1)
    max_links = int(getattr(nvml, "NVML_NVLINK_MAX_LINKS", 18))
    active = 0
    for link in range(max_links):
        try:
            state = nvml.nvmlDeviceGetNvLinkState(handle, link)
        except nvml.NVMLError as exc:
            name = error_name(exc)
            if name == "GpuIsLost":
                reader.errors["nvlink_active_links"] = name
                raise _GpuLost("nvlink_active_links") from exc
            if link == 0:
                reader.errors["nvlink_active_links"] = name
                return None
            break  # past the last link this GPU has
        if state == enabled:
            active += 1
    return active


def _read_device(reader: _Reader, rec: Record, handle: Any) -> None:
    """Fill ``rec`` field by field; raises :class:`_GpuLost` part-way if the GPU goes."""
    nvml = reader.nvml
    rec["uuid"] = _text(reader.call("uuid", "nvmlDeviceGetUUID", handle))
    pci = reader.call("pci_bus_id", "nvmlDeviceGetPciInfo", handle)
    rec["pci_bus_id"] = normalise_bus_id(getattr(pci, "busId", None)) if pci is not None else None
    rec["name"] = _text(reader.call("name", "nvmlDeviceGetName", handle))
    mem = reader.call("memory", "nvmlDeviceGetMemoryInfo", handle)
    rec["memory_total_bytes"] = int(mem.total) if mem is not None else None
    rec["memory_free_bytes"] = int(mem.free) if mem is not None else None
    cc = reader.call("compute_capability", "nvmlDeviceGetCudaComputeCapability", handle)
    rec["compute_capability"] = f"{int(cc[0])}.{int(cc[1])}" if cc is not None else None
    # NVML gives the SM count only through the attributes API, which answers for MIG
    # device handles; on a whole GPU it is usually NotSupported and the field stays null.
    attrs = reader.call("multiprocessors", "nvmlDeviceGetAttributes", handle)
    sms = getattr(attrs, "multiprocessorCount", None) if attrs is not None else None
    rec["multiprocessors"] = int(sms) if sms else None
    gen = reader.first(
        "pcie_generation",
        "nvmlDeviceGetCurrPcieLinkGeneration",
        "nvmlDeviceGetMaxPcieLinkGeneration",
        args=(handle,),
    )
    rec["pcie_generation"] = int(gen) if gen is not None else None
    width = reader.first(
        "pcie_width",
        "nvmlDeviceGetCurrPcieLinkWidth",
        "nvmlDeviceGetMaxPcieLinkWidth",
        args=(handle,),
    )
    rec["pcie_width"] = int(width) if width is not None else None
    rec["nvlink_active_links"] = _nvlink_links(reader, handle)
    mig = reader.call("mig_enabled", "nvmlDeviceGetMigMode", handle)
    rec["mig_enabled"] = (
        bool(mig[0] == getattr(nvml, "NVML_DEVICE_MIG_ENABLE", 1)) if mig is not None else None
    )
    mw = reader.first(
        "power_limit_watts",
        "nvmlDeviceGetEnforcedPowerLimit",
        "nvmlDeviceGetPowerManagementLimit",
        args=(handle,),
    )
    rec["power_limit_watts"] = round(mw / 1000.0, 3) if mw is not None else None
    temp = reader.call(
        "temperature_c",
        "nvmlDeviceGetTemperature",
        handle,
        getattr(nvml, "NVML_TEMPERATURE_GPU", 0),
    )
    rec["temperature_c"] = float(temp) if temp is not None else None
    util = reader.call("utilization_percent", "nvmlDeviceGetUtilizationRates", handle)
    rec["utilization_percent"] = float(util.gpu) if util is not None else None


def _system(nvml: Any) -> tuple[str | None, str | None, dict[str, str]]:
    errors: dict[str, str] = {}
    reader = _Reader(nvml, errors)
    driver = _text(reader.call("driver_version", "nvmlSystemGetDriverVersion"))
    cuda = reader.first(
        "cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"
    )
    return driver, cuda_version_text(cuda), errors


def query_gpus(
    nvml: Any, emit: Callable[[Record], None] | None = None
) -> tuple[list[Record], list[str]]:
    """Initialise NVML and read every GPU; ``emit`` is called with each record as it is done.

    Raises :class:`NvmlUnavailable` when NVML cannot start (library missing, driver not
    loaded, driver/library version mismatch, ...). Returns the records and notes (a GPU
    lost mid-query, a device whose handle could not be had).
    """
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(error_name(exc), f"nvmlInit failed: {error_name(exc)}") from exc
    try:
        return _query_all(nvml, emit)
    finally:
        # The answers are already read; a failed shutdown changes none of them.
        with contextlib.suppress(nvml.NVMLError):
            nvml.nvmlShutdown()


def _query_all(nvml: Any, emit: Callable[[Record], None] | None) -> tuple[list[Record], list[str]]:
    try:
        count = int(nvml.nvmlDeviceGetCount())
    except nvml.NVMLError as exc:
        raise NvmlUnavailable(
            error_name(exc), f"nvmlDeviceGetCount failed: {error_name(exc)}"
        ) from exc
    driver, cuda, sys_errors = _system(nvml)
    notes = [f"{field}: {name}" for field, name in sys_errors.items()]
    records: list[Record] = []
    for index in range(count):
        errors: dict[str, str] = {}
        rec: Record = {
            "index": index,
            "driver_version": driver,
            "cuda_driver_version": cuda,
            "errors": errors,
        }
        try:
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
        except nvml.NVMLError as exc:
            errors["handle"] = error_name(exc)
            rec["lost"] = error_name(exc) == "GpuIsLost"
            notes.append(f"GPU {index}: no handle ({error_name(exc)}); its facts are unknown")
        else:
            try:
                _read_device(_Reader(nvml, errors), rec, handle)
            except _GpuLost as lost:
                rec["lost"] = True
                notes.append(
                    f"GPU {index} was lost (GpuIsLost) while reading {lost}; kept what was read before"
                )
        records.append(rec)
        if emit is not None:
            emit(rec)
    return records, notes
