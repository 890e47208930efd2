"""AMD GPUs from sysfs, without ROCm: what ``rocm-smi --showmeminfo vram --showbus`` and
``rocminfo | grep gfx`` would say.

Each ``/sys/class/drm/cardN/device`` with PCI vendor ``0x1002`` and a VRAM size is a GPU
(integrated APUs without ``mem_info_vram_total`` are skipped). The KFD topology
(``/sys/class/kfd/kfd/topology/nodes/*/properties``) gives the gfx target and compute
units; a node is matched to its card by PCI location. A gfx target that is found does not
mean the installed ROCm supports it: ROCm lists the targets it was built for.
"""

from __future__ import annotations

import re

from hwadvisor.models.facts import Gpu
from hwadvisor.models.plain import ProbeStatus
from hwadvisor.probe.gpu_arch import amd_architecture, amd_supports, gfx_name
from hwadvisor.probe.runner import ProbeLog, ProbeSkip
from hwadvisor.probe.seams import HostFS, Seams

PROBE = "gpu.amd"
DRM = "/sys/class/drm"
KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
AMD_VENDOR = "0x1002"
_CARD_RE = re.compile(r"^card\d+$")

#: PCI device id -> marketing name, for cards whose sysfs has no ``product_name``.
#: Source: the PCI ID repository (pci-ids.ucw.cz), vendor 1002.
_DEVICE_NAMES = {
    "0x74a1": "AMD Instinct MI300X",
    "0x74a0": "AMD Instinct MI300A",
    "0x740c": "AMD Instinct MI250X / MI250",
    "0x740f": "AMD Instinct MI210",
    "0x738c": "AMD Instinct MI100",
    "0x744c": "AMD Radeon RX 7900 XTX / XT",
}


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip(), 0) if text else None
    except ValueError:
        return None


def _kfd_nodes(fs: HostFS) -> list[dict[str, int]]:
    """The GPU nodes of the KFD topology, each as its ``properties`` key/value pairs."""
    nodes = []
    for node in fs.listdir(KFD_NODES):
        text = fs.read(f"{KFD_NODES}/{node}/properties") or ""
        props: dict[str, int] = {}
        for line in text.splitlines():
            key, _, value = line.strip().partition(" ")
            num = _int(value)
            if key and num is not None:
                props[key] = num
        if props.get("gfx_target_version", 0) > 0:
            nodes.append(props)
    return nodes


def _location_id(bus_id: str) -> tuple[int, int] | None:
    """``0000:c1:00.0`` -> (domain, KFD location_id = bus << 8 | device << 3 | function)."""
    m = re.match(r"^([0-9a-fA-F]+):([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$", bus_id)
    if not m:
        return None
    domain, bus, dev, fn = (int(g, 16) for g in m.groups())
    return domain, (bus << 8) | (dev << 3) | fn


def _match_node(nodes: list[dict[str, int]], bus_id: str | None) -> dict[str, int] | None:
    loc = _location_id(bus_id) if bus_id else None
    if loc is not None:
        for node in nodes:
            if node.get("domain", 0) == loc[0] and node.get("location_id") == loc[1]:
                return node
    # Without a location match, one gfx target shared by every node is still the answer.
    targets = {n["gfx_target_version"] for n in nodes}
    return nodes[0] if len(targets) == 1 else None


def _bus_id(fs: HostFS, dev: str) -> str | None:
    for line in (fs.read(f"{dev}/uevent") or "").splitlines():
        if line.startswith("PCI_SLOT_NAME="):
            return line.split("=", 1)[1].strip().lower() or None
    return None


def _card_gpu(fs: HostFS, card: str, index: int, nodes: list[dict[str, int]]) -> Gpu | None:
    dev = f"{DRM}/{card}/device"
    if (fs.read_first_line(f"{dev}/vendor") or "").lower() != AMD_VENDOR:
        return None
    total = _int(fs.read_first_line(f"{dev}/mem_info_vram_total"))
    if not total:
        return None  # an APU's small carve-out, or a card whose driver did not bind
    used = _int(fs.read_first_line(f"{dev}/mem_info_vram_used"))
    bus_id = _bus_id(fs, dev)
    node = _match_node(nodes, bus_id)
    gfx = gfx_name(node["gfx_target_version"]) if node else None
    cus = None
    if node and node.get("simd_count") and node.get("simd_per_cu"):
        cus = node["simd_count"] // node["simd_per_cu"]
    device_id = (fs.read_first_line(f"{dev}/device") or "").lower()
    name = fs.read_first_line(f"{dev}/product_name") or _DEVICE_NAMES.get(device_id)
    return Gpu(
        index=index,
        uuid=fs.read_first_line(f"{dev}/unique_id") or None,
        pci_bus_id=bus_id,
        vendor="amd",
        name=name or None,
        memory_total_bytes=total,
        memory_free_bytes=total - used if used is not None else None,
        compute_capability=gfx,
        architecture=amd_architecture(gfx),
        multiprocessors=cus,
        supports=amd_supports(gfx),
        driver_version=fs.read_first_line("/sys/module/amdgpu/version") or None,
    )


def probe_amd(seams: Seams, log: ProbeLog, *, start_index: int) -> list[Gpu]:
    """AMD GPUs found in sysfs, numbered from ``start_index``."""
    gpus: list[Gpu] = []
    with log.step(PROBE, source=f"{DRM}, {KFD_NODES}") as st:
        fs = seams.fs
        cards = [c for c in fs.listdir(DRM) if _CARD_RE.match(c)]
        nodes: list[dict[str, int]] | None = None
        for card in cards:
            if (fs.read_first_line(f"{DRM}/{card}/device/vendor") or "").lower() != AMD_VENDOR:
                continue
            nodes = _kfd_nodes(fs) if nodes is None else nodes
            gpu = _card_gpu(fs, card, start_index + len(gpus), nodes)
            if gpu is not None:
                gpus.append(gpu)
        if not gpus:
            raise ProbeSkip(ProbeStatus.ABSENT, "no AMD GPU in /sys/class/drm")
        if any(g.compute_capability is None for g in gpus):
            st.error = (
                "gfx target unknown for some GPUs (no KFD topology: amdgpu without ROCm's kfd?)"
            )
    return gpus
