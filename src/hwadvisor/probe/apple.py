"""Apple Silicon GPUs: one unified-memory GPU on an arm64 Mac, without importing torch.

On macOS the chip's name comes from ``sysctl -n machdep.cpu.brand_string`` (run only on
a real Mac, with a timeout). Metal lets one process use at most
``recommendedMaxWorkingSetSize`` of the unified memory, typically about 65-75% of RAM
(``torch.mps.recommended_max_memory()`` reports it); without importing torch or Metal we
estimate it as 75% of RAM and say so in the probe record. Linux on Apple Silicon (Asahi)
has no Metal, so the GPU is recorded as ``unsupported`` for deep learning.
"""

from __future__ import annotations

from hwadvisor.models.facts import Gpu, GpuSupports, Memory
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe.runner import ProbeLog, ProbeSkip
from hwadvisor.probe.seams import Seams

PROBE = "gpu.apple"
#: Share of RAM taken as Metal's working-set limit (an estimate; see the module docstring).
WORKING_SET_SHARE = 0.75
_DT_COMPATIBLE = ("/proc/device-tree/compatible", "/sys/firmware/devicetree/base/compatible")
SYSCTL_TIMEOUT_S = 2.0


def _chip_name() -> str | None:
    """The chip's marketing name from sysctl (``Apple M2 Max``); None when it cannot be had."""
    import subprocess

    try:
        out = subprocess.run(
            ["sysctl", "-n", "machdep.cpu.brand_string"],
            capture_output=True,
            text=True,
            timeout=SYSCTL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() or None


def _asahi(seams: Seams) -> bool:
    """Whether the device tree says this Linux machine is an Apple Silicon Mac."""
    for path in _DT_COMPATIBLE:
        text = seams.fs.read(path)
        if text and any(entry.startswith("apple,") for entry in text.split("\x00")):
            return True
    return False


def probe_apple(seams: Seams, log: ProbeLog, memory: Memory, *, start_index: int) -> list[Gpu]:
    """The Apple GPU of an arm64 Mac (unified memory), or none with the reason recorded."""
    gpus: list[Gpu] = []
    with log.step(PROBE, source="platform") as st:
        system, machine = seams.system.system, seams.system.machine.lower()
        if system == "Linux":
            if _asahi(seams):
                raise ProbeSkip(
                    ProbeStatus.UNSUPPORTED,
                    "Apple Silicon under Linux (Asahi): no Metal, so no MPS",
                )
            raise ProbeSkip(ProbeStatus.ABSENT, "not a Mac")
        if system != "Darwin":
            raise ProbeSkip(ProbeStatus.ABSENT, "not a Mac")
        if machine not in ("arm64", "aarch64"):
            raise ProbeSkip(ProbeStatus.ABSENT, "Intel Mac: no Apple Silicon GPU")
        st.source = "sysctl machdep.cpu.brand_string" if seams.system.is_real else "recorded host"
        name = _chip_name() if seams.system.is_real else None
        total = memory.total_bytes
        gpus.append(
            Gpu(
                index=start_index,
                vendor="apple",
                name=name or "Apple Silicon GPU",
                memory_total_bytes=int(total * WORKING_SET_SHARE) if total else None,
                architecture="Apple Silicon",
                # MPS runs fp16 on every Apple GPU; bf16 depends on the chip and macOS, so unknown.
                supports=GpuSupports(fp16=True, bf16=None, tf32=False, fp8=False, int8_tensor=None),
                unified_memory=True,
            )
        )
        st.error = (
            f"memory_total_bytes is an estimate: {WORKING_SET_SHARE:.0%} of RAM "
            "(Metal's recommendedMaxWorkingSetSize is typically 65-75%)"
            if total
            else "memory unknown: RAM size not read"
        )
    return gpus
