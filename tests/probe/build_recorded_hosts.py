"""Build the recorded CPU/memory/host fixtures under ``tests/data/hosts/``.

Run from the repository root: ``.venv/bin/python tests/probe/build_recorded_hosts.py
[--record-real]``. ``--record-real`` copies THIS machine's files into
``epyc-milan-kvm/`` (only on the machine it was first recorded on; the committed copy is
the record). The other hosts are built from the one-processor ``/proc/cpuinfo`` blocks in
``tests/data/cpuinfo/`` (real machines, from archspec) expanded to a full topology; each
folder's ``NOTES.md`` says what is recorded and what is built. ``expected.json`` is
written here by hand, from the machine's description, never from the probe's output.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HOSTS = HERE.parent / "data" / "hosts"
CPUINFO = HERE.parent / "data" / "cpuinfo"
GIB = 1024**3
KIB = 1024


def write(root: Path, rel: str, text: str) -> None:
    """Write ``text`` at ``root/rel``, creating folders."""
    path = root / rel.lstrip("/")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def cpulist(cpus: list[int]) -> str:
    """Kernel list form of sorted CPU ids."""
    out: list[str] = []
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


@dataclass
class Synthetic:
    """A machine built from one recorded cpuinfo block."""

    name: str
    source: str  # file in tests/data/cpuinfo
    sockets: int
    cores: int  # per socket
    threads: int  # per core
    l1d: str
    l1i: str
    l2: str
    l3: str | None  # per socket
    mem_total_kib: int
    mem_avail_kib: int
    machine: str = "x86_64"
    add_flags: tuple[str, ...] = ()
    drop_flags: tuple[str, ...] = ()
    cpufreq_khz: tuple[int | None, int] | None = None  # (base or None, max)
    affinity: list[int] | None = None
    cgroup: dict[str, str] = field(default_factory=dict)  # rel path -> text
    self_cgroup: str = "0::/\n"
    extra_files: dict[str, str] = field(default_factory=dict)
    host: dict[str, Any] = field(default_factory=dict)
    expected: dict[str, Any] = field(default_factory=dict)
    notes: str = ""

    @property
    def logical(self) -> int:
        return self.sockets * self.cores * self.threads

    def place(self, cpu: int) -> tuple[int, int, int]:
        """(socket, core, thread) of a CPU id, enumerated as Linux does on x86."""
        per_thread = self.sockets * self.cores
        thread, rest = divmod(cpu, per_thread)
        socket, core = divmod(rest, self.cores)
        return socket, core, thread

    def siblings(self, socket: int, core: int) -> list[int]:
        per_thread = self.sockets * self.cores
        return [t * per_thread + socket * self.cores + core for t in range(self.threads)]

    def socket_cpus(self, socket: int) -> list[int]:
        return sorted(c for c in range(self.logical) if self.place(c)[0] == socket)


def _flags_line(block: str, spec: Synthetic) -> str:
    def fix(match: re.Match[str]) -> str:
        flags = [f for f in match.group(2).split() if f not in spec.drop_flags]
        flags += [f for f in spec.add_flags if f not in flags]
        return match.group(1) + " ".join(flags)

    return re.sub(r"^((?:flags|Features)\s*:\s*)(.*)$", fix, block, flags=re.MULTILINE)


def cpuinfo_text(spec: Synthetic) -> str:
    """The full /proc/cpuinfo: the recorded block once per logical CPU, ids rewritten."""
    raw = (CPUINFO / spec.source).read_text(encoding="utf-8").strip("\n")
    raw = "\n".join(line for line in raw.splitlines() if not line.startswith("vmx flags"))
    block = _flags_line(raw, spec)
    out = []
    for cpu in range(spec.logical):
        socket, core, _ = spec.place(cpu)
        apic = (socket * spec.cores + core) * spec.threads + spec.place(cpu)[2]
        values = {
            "processor": str(cpu),
            "physical id": str(socket),
            "core id": str(core),
            "siblings": str(spec.cores * spec.threads),
            "cpu cores": str(spec.cores),
            "apicid": str(apic),
            "initial apicid": str(apic),
        }
        text = block
        for key, value in values.items():
            text = re.sub(
                rf"^({re.escape(key)}\s*:\s*).*$", rf"\g<1>{value}", text, flags=re.MULTILINE
            )
        out.append(text)
    return "\n\n".join(out) + "\n\n"


def build_synthetic(spec: Synthetic) -> None:
    """Write a synthetic host folder from ``spec``."""
    root = HOSTS / spec.name
    if root.exists():
        shutil.rmtree(root)
    write(root, "proc/cpuinfo", cpuinfo_text(spec))
    free = spec.mem_avail_kib // 2
    write(
        root,
        "proc/meminfo",
        f"MemTotal:       {spec.mem_total_kib} kB\nMemFree:        {free} kB\n"
        f"MemAvailable:   {spec.mem_avail_kib} kB\nBuffers:          102400 kB\n"
        f"Cached:         {free // 2} kB\nSwapTotal:             0 kB\n",
    )
    allowed = spec.affinity if spec.affinity is not None else list(range(spec.logical))
    write(root, "proc/self/status", f"Name:\tpython3\nCpus_allowed_list:\t{cpulist(allowed)}\n")
    write(root, "proc/self/cgroup", spec.self_cgroup)
    cpu_dir = "sys/devices/system/cpu"
    everything = cpulist(list(range(spec.logical)))
    for name in ("online", "possible", "present"):
        write(root, f"{cpu_dir}/{name}", everything + "\n")
    for cpu in range(spec.logical):
        socket, core, _ = spec.place(cpu)
        sib = cpulist(sorted(spec.siblings(socket, core)))
        topo = f"{cpu_dir}/cpu{cpu}/topology"
        write(root, f"{topo}/physical_package_id", f"{socket}\n")
        write(root, f"{topo}/core_id", f"{core}\n")
        write(root, f"{topo}/core_cpus_list", sib + "\n")
        write(root, f"{topo}/thread_siblings_list", sib + "\n")
        caches = [
            ("1", "Data", spec.l1d, sib),
            ("1", "Instruction", spec.l1i, sib),
            ("2", "Unified", spec.l2, sib),
        ]
        if spec.l3:
            caches.append(("3", "Unified", spec.l3, cpulist(spec.socket_cpus(socket))))
        for k, (level, kind, size, shared) in enumerate(caches):
            d = f"{cpu_dir}/cpu{cpu}/cache/index{k}"
            write(root, f"{d}/level", level + "\n")
            write(root, f"{d}/type", kind + "\n")
            write(root, f"{d}/size", size + "\n")
            write(root, f"{d}/shared_cpu_list", shared + "\n")
        if spec.cpufreq_khz:
            pol = f"{cpu_dir}/cpufreq/policy{cpu}"
            if spec.cpufreq_khz[0] is not None:
                write(root, f"{pol}/base_frequency", f"{spec.cpufreq_khz[0]}\n")
            write(root, f"{pol}/cpuinfo_max_freq", f"{spec.cpufreq_khz[1]}\n")
    for socket in range(spec.sockets):
        write(
            root,
            f"sys/devices/system/node/node{socket}/cpulist",
            cpulist(spec.socket_cpus(socket)) + "\n",
        )
    for rel, text in {**spec.cgroup, **spec.extra_files}.items():
        write(root, rel, text)
    host = {
        "system": "Linux",
        "machine": spec.machine,
        "release": "6.8.0-generic",
        "hostname": spec.name,
    }
    host.update(spec.host)
    host.setdefault("affinity", allowed)
    write(root, "host.json", json.dumps(host, indent=1) + "\n")
    write(root, "expected.json", json.dumps(spec.expected, indent=1) + "\n")
    write(root, "NOTES.md", f"# {spec.name}\n\n{spec.notes.strip()}\n")


def main() -> None:
    """Build every synthetic host; record this machine with ``--record-real``."""
    from recorded_specs import SPECS  # type: ignore[import-not-found]

    if "--record-real" in sys.argv:
        from record_real import record_real  # type: ignore[import-not-found]

        record_real(HOSTS / "epyc-milan-kvm")
    for spec in SPECS:
        build_synthetic(spec)
        print("built", spec.name)


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
