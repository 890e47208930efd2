"""The CPU probe on systems without ``/proc`` (macOS, Windows): py-cpuinfo and psutil.

py-cpuinfo takes about a second (it times the clock), which is why Linux never uses it.
Both are imported here, lazily, only when this path runs.
"""

from __future__ import annotations

from typing import Any

from hwadvisor.models.facts import Cpu
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe.cpu_build import finish_cpu
from hwadvisor.probe.runner import ProbeLog, ProbeSkip
from hwadvisor.probe.seams import Seams


def _hz_to_mhz(value: Any) -> float | None:
    # py-cpuinfo gives (hz, 0) tuples; psutil gives MHz floats.
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (int, float)):
        return float(value[0]) / 1e6 or None
    return None


def probe_cpu_other(seams: Seams, log: ProbeLog) -> Cpu:
    """Probe the CPU through py-cpuinfo and psutil; fields they lack stay null."""
    f: dict[str, Any] = {"architecture": seams.system.machine or None}
    with log.step("cpu", source="py-cpuinfo") as st:
        try:
            import cpuinfo
        except ImportError as exc:
            raise ProbeSkip(ProbeStatus.ABSENT, f"py-cpuinfo not installed: {exc}") from exc
        info: dict[str, Any] = cpuinfo.get_cpu_info()
        f["vendor"] = info.get("vendor_id_raw") or None
        f["model"] = info.get("brand_raw") or None
        f["flags"] = sorted(set(info.get("flags", [])))
        f["base_mhz"] = _hz_to_mhz(info.get("hz_advertised"))
        st.source = "py-cpuinfo"
    with log.step("cpu.topology", source="psutil") as st:
        import psutil

        f["logical_cores"] = psutil.cpu_count(logical=True)
        f["physical_cores"] = psutil.cpu_count(logical=False)
        freq = psutil.cpu_freq()
        if freq is not None and freq.max:
            f["max_mhz"] = float(freq.max)
    aff = seams.system.affinity
    f["affinity_cores"] = len(aff) if aff else None
    f["usable_cores"] = f["affinity_cores"] or f.get("logical_cores")
    return finish_cpu(f)
