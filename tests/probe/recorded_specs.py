"""The synthetic recorded hosts: topology, limits and the facts each must produce.

Expected values are worked out by hand from each description (e.g. usable cores =
min(affinity, ceil(quota)); peak = cores × GHz × FLOPs/cycle of REFERENCE.md), so a
probe bug shows as a mismatch rather than being copied into the fixture.
"""

from __future__ import annotations

from build_recorded_hosts import GIB, KIB, Synthetic

_KVM = {
    "sys/devices/system/clocksource/clocksource0/available_clocksource": "kvm-clock tsc acpi_pm \n",
    "sys/class/dmi/id/sys_vendor": "QEMU\n",
    "sys/class/dmi/id/product_name": "Standard PC (Q35 + ICH9, 2009)\n",
}
_UBUNTU = {"etc/os-release": 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n'}

SPR = Synthetic(
    name="spr-amx-kvm",
    source="linux-unknown-sapphirerapids",
    sockets=1, cores=8, threads=1,
    l1d="48K", l1i="32K", l2="2048K", l3="107520K",
    mem_total_kib=32_827_676, mem_avail_kib=31_100_000,
    add_flags=("hypervisor",), drop_flags=("vmx", "smx"),
    self_cgroup="0::/user.slice/user-1000.slice/session-3.scope\n",
    cgroup={
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory hugetlb pids rdma misc\n",
        "sys/fs/cgroup/user.slice/cpu.max": "max 100000\n",
        "sys/fs/cgroup/user.slice/memory.max": "max\n",
        "sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope/memory.max": "max\n",
    },
    extra_files={**_KVM, **_UBUNTU, "proc/1/cgroup": "0::/init.scope\n"},
    host={"shm_bytes": 16 * GIB},
    expected={
        "cpu": {
            "vendor": "Intel", "model": "Intel(R) Xeon(R) Platinum 8480+",
            "architecture": "x86_64", "microarchitecture": "sapphirerapids",
            "sockets": 1, "physical_cores": 8, "logical_cores": 8, "affinity_cores": 8,
            "cgroup_quota_cores": None, "usable_cores": 8,
            "base_mhz": 2000.0, "max_mhz": None, "numa_nodes": 1,
            "l2_bytes": 2048 * KIB, "l3_bytes": 107520 * KIB,
            "features": {
                "avx2": True, "fma": True, "avx512f": True, "avx512_vnni": True,
                "avx512_bf16": True, "avx512_fp16": True, "avx_vnni": True,
                "amx_tile": True, "amx_bf16": True, "amx_int8": True, "amx_fp16": False,
                "neon": False, "sve": False,
            },
            # 8 cores x 2.0 GHz x 64 (AVX-512, 2 FMA) / 1024 (AMX bf16) / 2048 (AMX int8)
            "peak_gflops": {"fp32": 1024.0, "bf16": 16384.0, "int8": 32768.0},
        },
        "memory": {"total_bytes": 32_827_676 * KIB, "available_bytes": 31_100_000 * KIB, "cgroup_limit_bytes": None},
        "host": {"virtualization": "kvm", "container": None, "os": "Ubuntu 22.04.4 LTS", "shm_bytes": 16 * GIB},
    },
    notes="""
A Sapphire Rapids KVM guest with 8 vCPUs (1 socket, 8 cores, no SMT) and AMX. Built, not
recorded: the processor block is `tests/data/cpuinfo/linux-unknown-sapphirerapids` (a
bare-metal Xeon Platinum 8480+) repeated 8 times with processor/core/apic ids rewritten,
the `hypervisor` flag added and `vmx`/`smx` removed (as a guest without nested
virtualisation shows them). Sysfs topology, caches (48K L1d, 2M L2, 105M L3 as the host
part has), cgroup v2 files, DMI and the kvm-clock clocksource are written to match.
""",
)  # fmt: skip

LAPTOP = Synthetic(
    name="laptop-avx2",
    source="linux-ubuntu18.04-broadwell",
    sockets=1, cores=2, threads=2,
    l1d="32K", l1i="32K", l2="256K", l3="3072K",
    mem_total_kib=8_029_532, mem_avail_kib=5_123_456,
    cpufreq_khz=(2_200_000, 2_700_000),
    self_cgroup="0::/user.slice/user-1000.slice/user@1000.service/app.slice/app-gnome-terminal.scope\n",
    cgroup={
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
        "sys/fs/cgroup/user.slice/memory.max": "max\n",
        "sys/fs/cgroup/user.slice/user-1000.slice/memory.max": "max\n",
        "sys/fs/cgroup/user.slice/user-1000.slice/cpu.max": "max 100000\n",
    },
    extra_files={
        "etc/os-release": 'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 18.04.6 LTS"\n',
        "proc/1/cgroup": "0::/init.scope\n",
        "sys/devices/system/clocksource/clocksource0/available_clocksource": "tsc hpet acpi_pm \n",
    },
    expected={
        "cpu": {
            "vendor": "Intel", "microarchitecture": "broadwell", "architecture": "x86_64",
            "sockets": 1, "physical_cores": 2, "logical_cores": 4, "affinity_cores": 4,
            "usable_cores": 4, "cgroup_quota_cores": None,
            "base_mhz": 2200.0, "max_mhz": 2700.0, "numa_nodes": 1,
            "l2_bytes": 256 * KIB, "l3_bytes": 3072 * KIB,
            "features": {"avx2": True, "fma": True, "avx512f": False, "amx_tile": False, "neon": False},
            # SMT siblings share the FMA units: 2 physical cores x 2.7 GHz (turbo) x 32
            "peak_gflops": {"fp32": 172.8, "bf16": 172.8, "int8": 345.6},
            "amx_note": None,
        },
        "memory": {"total_bytes": 8_029_532 * KIB, "cgroup_limit_bytes": None},
        "host": {"virtualization": None, "container": None, "os": "Ubuntu 18.04.6 LTS"},
    },
    notes="""
A dual-core AVX2 laptop with SMT (Core i5-5200U, 2 cores / 4 threads). Built from
`tests/data/cpuinfo/linux-ubuntu18.04-broadwell` repeated 4 times with ids rewritten;
cpufreq policies give the nominal 2.2 GHz base and 2.7 GHz turbo of that part (Intel's
product page); cgroup v2 user slices without limits.
""",
)  # fmt: skip

ARM = Synthetic(
    name="arm-sve-server",
    source="linux-amazon-neoverse_v1",
    machine="aarch64",
    sockets=1, cores=64, threads=1,
    l1d="64K", l1i="64K", l2="1024K", l3="32768K",
    mem_total_kib=130_502_316, mem_avail_kib=127_000_000,
    cpufreq_khz=(None, 2_600_000),
    cgroup={"sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n"},
    extra_files={"etc/os-release": 'PRETTY_NAME="Amazon Linux 2023"\n', "proc/1/cgroup": "0::/init.scope\n"},
    expected={
        "cpu": {
            "vendor": "ARM", "model": "Neoverse-V1", "architecture": "aarch64",
            "microarchitecture": "neoverse_v1",
            "sockets": 1, "physical_cores": 64, "logical_cores": 64, "usable_cores": 64,
            "max_mhz": 2600.0, "base_mhz": None, "l2_bytes": 1024 * KIB, "l3_bytes": 32 * 1024 * KIB,
            "features": {
                "neon": True, "fma": True, "sve": True, "sve2": False, "i8mm": True, "bf16": True,
                "sme": False, "avx2": False, "avx512f": False,
            },
            # 64 x 2.6 GHz x 32 (2x256-bit SVE); bf16 2x; int8 via i8mm 8x
            "peak_gflops": {"fp32": 5324.8, "bf16": 10649.6, "int8": 42598.4},
        },
        "memory": {"total_bytes": 130_502_316 * KIB, "cgroup_limit_bytes": None},
        "host": {"container": None, "virtualization": None},
    },
    notes="""
An Arm Neoverse V1 server with SVE (an AWS Graviton3-class part: 64 cores, 2.6 GHz, 1 MiB
L2 per core, 32 MiB L3). Built from `tests/data/cpuinfo/linux-amazon-neoverse_v1` repeated
64 times. cpufreq has `cpuinfo_max_freq` only, as Arm cpufreq drivers write no
`base_frequency`. No DMI files, so virtualization is not detectable (expected null).
""",
)  # fmt: skip

CG2 = Synthetic(
    name="container-cgv2-1.5cpu",
    source="linux-rocky8.5-zen4",
    sockets=1, cores=4, threads=2,
    l1d="32K", l1i="32K", l2="1024K", l3="32768K",
    mem_total_kib=32_803_692, mem_avail_kib=29_000_000,
    add_flags=("hypervisor",),
    # The host's cgroup namespace leaks into the path, which the container's mount lacks:
    # the probe must fall back to the mount root.
    self_cgroup="0::/system.slice/docker-4f1c2a9e.scope\n",
    cgroup={
        "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
        "sys/fs/cgroup/cpu.max": "150000 100000\n",
        "sys/fs/cgroup/memory.max": f"{4 * GIB}\n",
        "sys/fs/cgroup/memory.current": f"{GIB}\n",
        "sys/fs/cgroup/memory.stat": f"anon 700000000\nfile 300000000\ninactive_file {256 * 1024 * KIB}\nactive_file 1000\n",
    },
    extra_files={**_KVM, ".dockerenv": "", "proc/1/cgroup": "0::/\n",
                 "etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'},
    host={"env": {"container": "docker"}},
    expected={
        "cpu": {
            "vendor": "AMD", "microarchitecture": "zen4", "logical_cores": 8, "physical_cores": 4,
            "affinity_cores": 8, "cgroup_quota_cores": 1.5, "usable_cores": 2,
            "base_mhz": 2400.0, "max_mhz": None,
            "features": {"avx512f": True, "avx512_bf16": True, "avx512_vnni": True, "amx_tile": False},
            # ceil(1.5) = 2 cores x 2.4 GHz x 32 (Zen 4: AVX-512 on one FMA); bf16 2x; VNNI 4x
            "peak_gflops": {"fp32": 153.6, "bf16": 307.2, "int8": 614.4},
        },
        # available = min(29e6 KiB, 4 GiB - (1 GiB - 256 MiB)) = 3.25 GiB
        "memory": {"total_bytes": 32_803_692 * KIB, "cgroup_limit_bytes": 4 * GIB,
                   "available_bytes": 3 * GIB + 256 * 1024 * KIB},
        "host": {"container": "docker", "virtualization": "kvm"},
    },
    notes="""
A Docker container on a cgroup v2 host, limited to 1.5 CPUs (`cpu.max` "150000 100000")
and 4 GiB of memory, inside an 8-vCPU Zen 4 KVM guest. Built from
`tests/data/cpuinfo/linux-rocky8.5-zen4` (EPYC 9654) repeated 8 times (4 cores x 2
threads) with the `hypervisor` flag added. `/proc/self/cgroup` names the host's path,
which does not exist under the container's mount, to test the fall-back to the root.
""",
)  # fmt: skip

CG1 = Synthetic(
    name="container-cgv1",
    source="linux-centos7-cascadelake",
    sockets=1, cores=8, threads=2,
    l1d="32K", l1i="32K", l2="1024K", l3="36608K",
    mem_total_kib=65_808_000, mem_avail_kib=60_000_000,
    self_cgroup=(
        "11:memory:/docker/0123abcd\n10:cpu,cpuacct:/docker/0123abcd\n9:cpuset:/docker/0123abcd\n"
        "1:name=systemd:/docker/0123abcd\n0::/system.slice/containerd.service\n"
    ),
    cgroup={
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us": "200000\n",
        "sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us": "100000\n",
        "sys/fs/cgroup/cpuset/cpuset.cpus": "0-15\n",
        "sys/fs/cgroup/memory/memory.limit_in_bytes": f"{8 * GIB}\n",
        "sys/fs/cgroup/memory/memory.usage_in_bytes": f"{2 * GIB}\n",
        "sys/fs/cgroup/memory/memory.stat": f"cache 900000000\ninactive_file 4096\ntotal_inactive_file {512 * 1024 * KIB}\n",
    },
    extra_files={"proc/1/cgroup": "11:memory:/docker/0123abcd\n10:cpu,cpuacct:/docker/0123abcd\n",
                 "etc/os-release": 'PRETTY_NAME="CentOS Linux 7 (Core)"\n'},
    expected={
        "cpu": {
            "vendor": "Intel", "microarchitecture": "cascadelake", "logical_cores": 16,
            "physical_cores": 8, "affinity_cores": 16, "cgroup_quota_cores": 2.0, "usable_cores": 2,
            "base_mhz": 2400.0,
            "features": {"avx512f": True, "avx512_vnni": True, "avx512_bf16": False},
            # 2 cores x 2.4 GHz (from the model name) x 64 (Platinum: 2 FMA); VNNI 4x
            "peak_gflops": {"fp32": 307.2, "bf16": 307.2, "int8": 1228.8},
        },
        # available = min(60e6 KiB, 8 GiB - (2 GiB - 512 MiB)) = 6.5 GiB
        "memory": {"cgroup_limit_bytes": 8 * GIB, "available_bytes": 6 * GIB + 512 * 1024 * KIB},
        "host": {"container": "docker", "os": "CentOS Linux 7 (Core)"},
    },
    notes="""
A Docker container on a cgroup v1 host with a CFS quota of 200000/100000 (2 CPUs) and an
8 GiB memory limit, on 16 host CPUs (1 socket, 8 cores x 2 threads). Built from
`tests/data/cpuinfo/linux-centos7-cascadelake` (Xeon Platinum 8260M) repeated 16 times.
`cpu` and `cpuacct` are co-mounted as `cpu,cpuacct`; `/proc/self/cgroup` names
`/docker/<id>`, absent under the mounts, so the mount roots apply. No `/.dockerenv`: the
container is told from `/proc/1/cgroup`.
""",
)  # fmt: skip

M2 = Synthetic(
    name="apple-m2-asahi",
    source="linux-asahi-m2",
    machine="aarch64",
    sockets=1, cores=8, threads=1,
    l1d="128K", l1i="192K", l2="16384K", l3=None,
    mem_total_kib=15_946_072, mem_avail_kib=12_000_000,
    cpufreq_khz=(None, 3_504_000),
    extra_files={"etc/os-release": 'PRETTY_NAME="Fedora Linux Asahi Remix 40"\n'},
    expected={
        "cpu": {
            "vendor": "Apple", "model": "Apple M2", "microarchitecture": "m2", "architecture": "aarch64",
            "logical_cores": 8, "physical_cores": 8, "usable_cores": 8, "l3_bytes": None,
            "max_mhz": 3504.0,
            "features": {"neon": True, "fma": True, "sve": False, "sve2": False, "sme": False,
                         "i8mm": True, "bf16": True},
            # 8 x 3.504 GHz x 16 (NEON floor); bf16 2x; i8mm 8x
            "peak_gflops": {"fp32": 448.5, "bf16": 897.0, "int8": 3588.1},
        },
        "host": {"os": "Fedora Linux Asahi Remix 40", "virtualization": None},
    },
    notes="""
An Apple M2 running Asahi Linux (8 cores: 4 performance + 4 efficiency, no SMT). Built from
`tests/data/cpuinfo/linux-asahi-m2` repeated 8 times. Simplified: every core gets the
performance cluster's caches and the 3.504 GHz maximum clock; no cgroup files (the
cgroup probe then reports absent).
""",
)  # fmt: skip

SPECS = [SPR, LAPTOP, ARM, CG2, CG1, M2]
