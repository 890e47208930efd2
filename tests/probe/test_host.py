"""The host probe: OS name, hypervisor, container runtime, /dev/shm."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hwadvisor.probe import host
from hwadvisor.probe.runner import ProbeLog
from hwadvisor.probe.seams import HostFS, Seams, SystemInfo

GUEST = "processor : 0\nflags : fpu avx2 hypervisor\n"
METAL = "processor : 0\nflags : fpu avx2\n"


def seams_with(root: Path, files: dict[str, str], env: dict[str, str] | None = None) -> Seams:
    """Linux seams over ``files`` written under ``root``."""
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    system = SystemInfo(system="Linux", release="6.1.0", hostname="h", env=env or {}, is_real=False)
    return Seams(fs=HostFS(root), system=system, site_paths=())


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        ({"proc/cpuinfo": METAL}, None),
        ({"proc/cpuinfo": GUEST}, "vm"),
        ({"proc/cpuinfo": GUEST, "sys/class/dmi/id/sys_vendor": "VMware, Inc.\n"}, "vmware"),
        (
            {"proc/cpuinfo": GUEST, "sys/class/dmi/id/sys_vendor": "Microsoft Corporation\n"},
            "microsoft",
        ),
        (
            {
                "proc/cpuinfo": GUEST,
                "sys/class/dmi/id/sys_vendor": "QEMU\n",
                "sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock tsc\n",
            },
            "kvm",
        ),
        (
            {
                "proc/cpuinfo": METAL,
                "proc/sys/kernel/osrelease": "5.15.90.1-microsoft-standard-WSL2\n",
            },
            "wsl",
        ),
        ({"proc/cpuinfo": GUEST, "sys/hypervisor/type": "xen\n"}, "xen"),
        # DMI on bare metal names the board maker; without the flag it is not a guest.
        ({"proc/cpuinfo": METAL, "sys/class/dmi/id/sys_vendor": "QEMU\n"}, None),
    ],
)
def test_virtualization(tmp_path: Path, files: dict[str, str], expected: str | None) -> None:
    assert host.virtualization(seams_with(tmp_path, files)) == expected


@pytest.mark.parametrize(
    ("files", "env", "expected"),
    [
        ({}, {}, None),
        ({".dockerenv": ""}, {}, "docker"),
        ({"run/.containerenv": ""}, {}, "podman"),
        ({".dockerenv": ""}, {"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "kubernetes"),
        ({"proc/1/cgroup": "0::/kubepods/burstable/pod1/abc\n"}, {}, "kubernetes"),
        ({"proc/1/cgroup": "4:memory:/docker/0123\n"}, {}, "docker"),
        ({"proc/1/cgroup": "0::/init.scope\n"}, {"container": "systemd-nspawn"}, "systemd-nspawn"),
    ],
)
def test_container(
    tmp_path: Path, files: dict[str, str], env: dict[str, str], expected: str | None
) -> None:
    assert host.container(seams_with(tmp_path, files, env)) == expected


def test_os_release_and_fallbacks(tmp_path: Path) -> None:
    seams = seams_with(
        tmp_path, {"etc/os-release": 'NAME=Debian\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'}
    )
    assert host.os_name(seams) == "Debian GNU/Linux 12 (bookworm)"
    assert host.os_name(seams_with(tmp_path / "empty", {})) == "Linux"
    mac = Seams(
        fs=HostFS(tmp_path), system=SystemInfo(system="Darwin", release="23.4.0", is_real=False)
    )
    assert host.os_name(mac) == "Darwin 23.4.0"


def test_shm_from_host_json_on_a_recorded_host(tmp_path: Path) -> None:
    (tmp_path / "host.json").write_text(json.dumps({"shm_bytes": 64 * 1024**2}))
    assert host.shm_bytes(Seams.recorded(tmp_path)) == 64 * 1024**2
    (tmp_path / "host.json").write_text("not json")
    assert host.shm_bytes(seams_with(tmp_path, {})) is None


def test_probe_host_fills_system_facts(tmp_path: Path) -> None:
    log = ProbeLog()
    facts = host.probe_host(seams_with(tmp_path, {"proc/cpuinfo": METAL}), log)
    assert (facts.hostname, facts.kernel, facts.virtualization, facts.container) == (
        "h",
        "6.1.0",
        None,
        None,
    )
    assert {r.name for r in log.records} == {"host", "host.virtualization"}


def test_real_machine_shm_is_positive() -> None:
    if not Path("/dev/shm").is_dir():
        pytest.skip("no /dev/shm here")
    shm = host.shm_bytes(Seams())
    assert shm is not None and shm > 0
