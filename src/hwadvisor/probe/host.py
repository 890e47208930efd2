"""The host probe: OS, kernel, Python, hypervisor, container and ``/dev/shm``.

Command-line equivalents: ``cat /etc/os-release``, ``uname -r``, ``systemd-detect-virt``
(which reads the same DMI files and cpuinfo flag as here) and ``df -B1 /dev/shm``.
"""

from __future__ import annotations

import json
import os

from hwadvisor.models.facts import Host
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import Seams

# DMI sys_vendor / product_name substrings -> hypervisor (as systemd-detect-virt names them).
_DMI_HYPERVISORS: tuple[tuple[str, str], ...] = (
    ("KVM", "kvm"),
    ("QEMU", "qemu"),
    ("Amazon EC2", "amazon"),
    ("Google", "kvm"),
    ("OpenStack", "kvm"),
    ("VMware", "vmware"),
    ("innotek", "oracle"),
    ("VirtualBox", "oracle"),
    ("Xen", "xen"),
    ("Microsoft Corporation", "microsoft"),
    ("Parallels", "parallels"),
    ("Bochs", "bochs"),
)
_CLOCKSOURCE = "/sys/devices/system/clocksource/clocksource0"
# (marker in /proc/1/cgroup, runtime), most specific first.
_CGROUP_RUNTIMES = (
    ("kubepods", "kubernetes"),
    ("docker", "docker"),
    ("libpod", "podman"),
    ("lxc", "lxc"),
)


def os_name(seams: Seams) -> str | None:
    """``PRETTY_NAME`` from ``/etc/os-release`` on Linux, else the system and release."""
    if seams.system.system == "Linux":
        for path in ("/etc/os-release", "/usr/lib/os-release"):
            for line in (seams.fs.read(path) or "").splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "PRETTY_NAME":
                    return value.strip().strip("\"'") or None
        return "Linux"
    return f"{seams.system.system} {seams.system.release}".strip() or None


def virtualization(seams: Seams) -> str | None:
    """The hypervisor's name, ``wsl``, ``vm`` for an unnamed one, or None on bare metal.

    A guest's CPU sets the ``hypervisor`` flag; the paravirtual ``kvm-clock`` clocksource
    says KVM (also in micro-VMs without DMI tables); otherwise DMI names the hypervisor,
    and without DMI the answer is ``vm``.
    """
    osrelease = (seams.fs.read_first_line("/proc/sys/kernel/osrelease") or "").lower()
    if "microsoft" in osrelease or "wsl" in osrelease:
        return "wsl"
    xen = seams.fs.read_first_line("/sys/hypervisor/type")
    if xen:
        return xen.lower()
    dmi = " ".join(
        seams.fs.read_first_line(f"/sys/class/dmi/id/{name}") or ""
        for name in ("sys_vendor", "product_name")
    )
    cpuinfo = seams.fs.read("/proc/cpuinfo") or ""
    in_guest = any(
        line.startswith("flags") and "hypervisor" in line.split() for line in cpuinfo.splitlines()
    )
    if not in_guest:
        return None
    # A KVM guest offers the paravirtual kvm-clock, with or without DMI tables.
    clocks = seams.fs.read_first_line(f"{_CLOCKSOURCE}/available_clocksource") or ""
    if "kvm-clock" in clocks.split():
        return "kvm"
    for marker, name in _DMI_HYPERVISORS:
        if marker in dmi:
            return name
    return "vm"


def container(seams: Seams) -> str | None:
    """The container runtime this process runs in, or None."""
    env = seams.system.env
    if env.get("KUBERNETES_SERVICE_HOST"):
        return "kubernetes"
    if seams.fs.exists("/run/.containerenv"):
        return "podman"
    if seams.fs.exists("/.dockerenv"):
        return "docker"
    cgroups = seams.fs.read("/proc/1/cgroup") or ""
    for marker, runtime in _CGROUP_RUNTIMES:
        if marker in cgroups:
            return runtime
    # systemd-nspawn, podman and LXC export "container=<name>" to PID 1.
    return env.get("container") or None


def shm_bytes(seams: Seams) -> int | None:
    """Size of ``/dev/shm``: statvfs on the real machine, ``host.json`` on a recorded one."""
    if seams.system.is_real:
        try:
            st = os.statvfs("/dev/shm")
        except (OSError, AttributeError):
            return None
        return st.f_frsize * st.f_blocks or None
    try:
        data = json.loads(seams.fs.read("/host.json") or "{}")
    except ValueError:
        return None
    value = data.get("shm_bytes") if isinstance(data, dict) else None
    return value if isinstance(value, int) and value > 0 else None


def probe_host(seams: Seams, log: ProbeLog) -> Host:
    """Probe the host; never raises (each part that fails is left null)."""
    os_text = runtime = virt = None
    shm = None
    with log.step("host", source="/etc/os-release"):
        os_text = os_name(seams)
        runtime = container(seams)
        shm = shm_bytes(seams)
    with log.step("host.virtualization", source="/sys/class/dmi/id"):
        virt = virtualization(seams)
    return Host(
        hostname=seams.system.hostname or None,
        os=os_text,
        kernel=seams.system.release or None,
        python=seams.system.python or None,
        virtualization=virt,
        container=runtime,
        shm_bytes=shm,
    )
