"""NVIDIA GPUs through NVML, read in a child process under a deadline.

What it reports is what ``nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,memory.total,
memory.free,compute_cap,driver_version,pcie.link.gen.current,pcie.link.width.current,
power.limit,temperature.gpu,utilization.gpu --format=csv`` and ``nvidia-smi nvlink -s``
print, plus the architecture and tensor-core types derived from the compute capability.

Fast path: on a machine with no NVIDIA device node, driver or WSL library, the probe
records ``absent`` after a few ``stat`` calls, without importing ``pynvml`` or starting a
process. Otherwise :mod:`~hwadvisor.probe.nvml_child` runs the queries and this module
turns its answer into :class:`~hwadvisor.models.facts.Gpu` facts and one probe status:
``ok``, ``absent`` (library missing, driver not loaded), ``denied``, ``error`` (version
mismatch, crash with the signal's name) or ``timeout`` (GPUs read before the deadline are
kept).

Environment (read through ``seams.system.env``): ``HWADVISOR_NVML=force`` runs the child
even when no device is visible, ``HWADVISOR_NVML=off`` skips the probe, and
``HWADVISOR_FAKE_NVML=recording.json`` makes the child replay a recording (a test seam).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from hwadvisor.models.facts import Gpu
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe.gpu_arch import nvidia_architecture, nvidia_supports, parse_compute_capability
from hwadvisor.probe.runner import ProbeLog, ProbeSkip
from hwadvisor.probe.seams import Seams

PROBE = "gpu.nvidia"
MODE_ENV = "HWADVISOR_NVML"
FAKE_ENV = "HWADVISOR_FAKE_NVML"

#: Files whose presence means an NVIDIA driver or device may be there.
NATIVE_MARKERS = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version")
#: WSL2 exposes the GPU through /dev/dxg and ships NVML in /usr/lib/wsl/lib.
WSL_MARKERS = ("/dev/dxg", "/usr/lib/wsl/lib/libnvidia-ml.so.1")

# Fatal NVML errors -> (status, reason).
_FATAL: dict[str, tuple[ProbeStatus, str]] = {
    "LibraryNotFound": (
        ProbeStatus.ABSENT,
        "NVML library libnvidia-ml.so.1 not found (no NVIDIA driver installed here)",
    ),
    "DriverNotLoaded": (
        ProbeStatus.ABSENT,
        "NVIDIA kernel driver not loaded (NVML: DriverNotLoaded)",
    ),
    "LibRmVersionMismatch": (
        ProbeStatus.ERROR,
        "NVIDIA driver/library version mismatch (NVML: LibRmVersionMismatch): reboot or reload the nvidia kernel module",
    ),
    "NoPermission": (ProbeStatus.DENIED, "NVML refused access (NoPermission)"),
    "BindingMissing": (ProbeStatus.ABSENT, "nvidia-ml-py (pynvml) is not installed"),
}


def nvidia_visible(seams: Seams) -> str | None:
    """The first file that shows an NVIDIA stack (device node, driver, WSL library), or None."""
    fs = seams.fs
    for path in NATIVE_MARKERS:
        if fs.exists(path):
            return path
    if all(fs.exists(p) for p in WSL_MARKERS):
        return WSL_MARKERS[1]
    return None


def gpu_from_record(rec: dict[str, Any]) -> Gpu:
    """One child record -> a :class:`Gpu` with architecture and ``supports`` derived.

    The record crossed a process boundary, so it is validated into the :class:`Gpu`
    (raising pydantic's ``ValidationError``); pydantic is imported only here, once a GPU
    answered.
    """
    cc = parse_compute_capability(rec.get("compute_capability"))
    data = {
        **rec,
        "vendor": "nvidia",
        "architecture": nvidia_architecture(cc),
        "supports": nvidia_supports(cc),
    }
    return Gpu.model_validate(data)


def gpus_from_records(
    records: Sequence[dict[str, Any]], notes: list[str] | None = None
) -> list[Gpu]:
    """Validate the child's records; a malformed field is left null and named in a note.

    A wrong type or an impossible value (a utilization of 255 %) loses that field only;
    a record that still fails without its bad fields keeps just its index.
    """
    from pydantic import ValidationError

    gpus: list[Gpu] = []
    for pos, rec in enumerate(records):
        raw = rec.get("index")
        index = raw if isinstance(raw, int) else pos
        try:
            gpus.append(gpu_from_record(rec))
            continue
        except ValidationError as exc:
            bad = sorted({str(e["loc"][0]) for e in exc.errors() if e["loc"]} - {"index"})
        described = ", ".join(f"{name}={rec.get(name)!r}"[:80] for name in bad)
        try:
            gpus.append(gpu_from_record({k: v for k, v in rec.items() if k not in bad}))
            note = f"GPU {index}: malformed NVML fields left null: {described}"
        except ValidationError as exc:
            gpus.append(Gpu(index=index, vendor="nvidia"))
            note = f"GPU {index}: malformed NVML record ({exc.error_count()} bad fields)"
        if notes is not None:
            notes.append(note)
    return gpus


def unknown_fields_note(records: Sequence[dict[str, Any]]) -> list[str]:
    """Say why fields are null: ``GPU 0,1: NotSupported: utilization_percent, ...``."""
    by_error: dict[tuple[str, tuple[str, ...]], list[str]] = defaultdict(list)
    for rec in records:
        errors = rec.get("errors") or {}
        grouped: dict[str, list[str]] = defaultdict(list)
        for fld, name in errors.items():
            grouped[str(name)].append(str(fld))
        for name, fields in grouped.items():
            by_error[(name, tuple(sorted(fields)))].append(str(rec.get("index")))
    return [
        f"GPU {','.join(idx)}: {name}: {', '.join(fields)}"
        for (name, fields), idx in by_error.items()
    ]


def _outcome(
    result: Any, timeout: float, records: list[dict[str, Any]], notes: list[str]
) -> tuple[ProbeStatus, str | None]:
    n = len(records)
    if result.timed_out:
        how = (
            "killed, but it would not end (stuck in the kernel?) and was abandoned"
            if result.abandoned
            else "killed"
        )
        return (
            ProbeStatus.TIMEOUT,
            f"NVML gave no complete answer within {timeout:g} s ({how}); {n} GPU(s) read before the deadline",
        )
    if result.fatal:
        status, reason = _FATAL.get(
            result.fatal, (ProbeStatus.ERROR, f"NVML: {result.fatal}: {result.fatal_message}")
        )
        return status, reason
    if not result.done:
        if result.signal_name:
            return (
                ProbeStatus.ERROR,
                f"NVML child crashed with {result.signal_name} after reading {n} GPU(s)",
            )
        if result.returncode:
            tail = result.stderr_tail.splitlines()[-1] if result.stderr_tail else "no message"
            return ProbeStatus.ERROR, f"NVML child exited with status {result.returncode}: {tail}"
        return ProbeStatus.ERROR, "NVML child gave no result (unreadable output)"
    extra = notes + unknown_fields_note(records)
    if result.bad_lines:
        extra.append(f"{result.bad_lines} unreadable line(s) from the NVML child")
    return ProbeStatus.OK, "; ".join(extra) or None


def probe_nvidia(seams: Seams, log: ProbeLog, *, timeout: float) -> list[Gpu]:
    """NVIDIA GPUs via NVML in a child process, at most ``timeout`` s (plus a 1 s reap)."""
    gpus: list[Gpu] = []
    with log.step(PROBE, source="nvml") as st:
        env = seams.system.env
        mode = env.get(MODE_ENV, "").strip().lower()
        fake = env.get(FAKE_ENV, "")
        if mode == "off":
            raise ProbeSkip(ProbeStatus.ABSENT, f"NVML probe disabled by {MODE_ENV}=off")
        if mode != "force" and not fake:
            marker = nvidia_visible(seams)
            if marker is None:
                raise ProbeSkip(ProbeStatus.ABSENT, "no NVIDIA driver or device found")
            if not seams.system.is_real:
                raise ProbeSkip(
                    ProbeStatus.UNSUPPORTED,
                    f"recorded host shows {marker} but holds no NVML answers",
                )
        st.source = f"nvml recording {fake}" if fake else "nvml (child process)"
        # Imported only past the fast path: a machine without NVIDIA pays nothing for it.
        from hwadvisor.probe.nvml_process import child_env, run_child

        run = seams.nvml_child or run_child
        result = run(timeout, child_env(fake or None))
        notes = list(result.notes)
        gpus = gpus_from_records(result.gpus, notes)
        st.status, st.error = _outcome(result, timeout, result.gpus, notes)
    return gpus


def probe_in_process(nvml: Any, log: ProbeLog) -> list[Gpu]:
    """The same probe over an NVML-like object in this process, without a child or deadline.

    For tests and recordings (``FakeNvml``): statuses and notes are exactly those of
    :func:`probe_nvidia`. Never call it with the real ``pynvml``: a hung driver would hang
    the caller.
    """
    from hwadvisor.probe.nvml_process import ChildResult
    from hwadvisor.probe.nvml_query import NvmlUnavailable, query_gpus

    gpus: list[Gpu] = []
    with log.step(PROBE, source="nvml (in process)") as st:
        result = ChildResult()
        try:
            result.gpus, result.notes = query_gpus(nvml)
            result.done = True
        except NvmlUnavailable as exc:
            result.fatal, result.fatal_message = exc.name, exc.message
        notes = list(result.notes)
        gpus = gpus_from_records(result.gpus, notes)
        st.status, st.error = _outcome(result, 0.0, result.gpus, notes)
    return gpus
