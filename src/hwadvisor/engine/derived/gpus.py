"""Derived facts over the GPU list: counts, extremes, and "any GPU ..." flags.

GPUs are keyed by UUID in the facts, so rules never address one by index; they read
these aggregates. With no GPU the counts are 0 and the "any" flags false (no GPU is a
known fact); with GPUs whose value is unknown, the aggregate is unknown.
"""

from __future__ import annotations

from collections.abc import Sequence

from hwadvisor.engine.derive import FactType, Registry, known
from hwadvisor.engine.versions import lowest_version, newest_wheel_tag
from hwadvisor.models.facts import Gpu

GPUS: Registry[Sequence[Gpu]] = Registry("the GPU list of the facts document")


def _any(values: list[bool | None]) -> bool | None:
    """True if any is true, false if all are known and false, else unknown (Kleene)."""
    if any(values):
        return True
    return False if all(v is not None for v in values) else None


def _nvidia(gpus: Sequence[Gpu]) -> list[Gpu]:
    return [g for g in gpus if g.vendor.lower() == "nvidia"]


@GPUS.fact("gpu.count", FactType.NUMBER, "number of GPUs found (0 when none)")
def count(gpus: Sequence[Gpu]) -> int:
    """How many GPUs the probe found."""
    return len(gpus)


@GPUS.fact("gpu.nvidia_count", FactType.NUMBER, "number of NVIDIA GPUs")
def nvidia_count(gpus: Sequence[Gpu]) -> int:
    """How many of them are NVIDIA's."""
    return len(_nvidia(gpus))


@GPUS.fact("gpu.name", FactType.STRING, "name of the first GPU")
def first_name(gpus: Sequence[Gpu]) -> str | None:
    """The first GPU's name (messages; the GPUs of a machine are usually alike)."""
    return gpus[0].name if gpus else None


@GPUS.fact("gpu.names", FactType.LIST, "names of all GPUs")
def names(gpus: Sequence[Gpu]) -> list[str]:
    """Every GPU's name, ``unknown`` where the probe had none."""
    return [g.name or "unknown" for g in gpus]


@GPUS.fact("gpu.vendors", FactType.LIST, "vendors of all GPUs")
def vendors(gpus: Sequence[Gpu]) -> list[str]:
    """The vendors present, sorted."""
    return sorted({g.vendor for g in gpus})


@GPUS.fact("gpu.architectures", FactType.LIST, "architectures of all GPUs")
def architectures(gpus: Sequence[Gpu]) -> list[str]:
    """The architectures present, sorted."""
    return sorted({g.architecture for g in gpus if g.architecture})


def _memories(gpus: Sequence[Gpu]) -> list[int] | None:
    """Every GPU's memory, or None when there is no GPU or one's memory is unknown."""
    mems = known(g.memory_total_bytes for g in gpus)
    return mems if gpus and len(mems) == len(gpus) else None


@GPUS.fact("gpu.max_memory_bytes", FactType.NUMBER, "memory of the largest GPU")
def max_memory(gpus: Sequence[Gpu]) -> int | None:
    """The largest GPU's memory."""
    mems = _memories(gpus)
    return max(mems) if mems else None


@GPUS.fact("gpu.min_memory_bytes", FactType.NUMBER, "memory of the smallest GPU")
def min_memory(gpus: Sequence[Gpu]) -> int | None:
    """The smallest GPU's memory."""
    mems = _memories(gpus)
    return min(mems) if mems else None


@GPUS.fact("gpu.total_memory_bytes", FactType.NUMBER, "memory of all GPUs together")
def total_memory(gpus: Sequence[Gpu]) -> int | None:
    """All GPUs' memory together."""
    mems = _memories(gpus)
    return sum(mems) if mems else None


@GPUS.fact("gpu.any_nvlink", FactType.BOOL, "some GPU has an active NVLink")
def any_nvlink(gpus: Sequence[Gpu]) -> bool | None:
    """Some GPU has at least one active NVLink link."""
    return _any(
        [None if g.nvlink_active_links is None else g.nvlink_active_links > 0 for g in gpus]
    )


@GPUS.fact("gpu.min_nvlink_links", FactType.NUMBER, "fewest active NVLink links on any GPU")
def min_nvlink_links(gpus: Sequence[Gpu]) -> int | None:
    """The fewest active links of any GPU, when every GPU's count is known."""
    links = [g.nvlink_active_links for g in gpus]
    known_links = known(links)
    return min(known_links) if gpus and len(known_links) == len(links) else None


@GPUS.fact("gpu.any_mig", FactType.BOOL, "MIG mode is on for some GPU")
def any_mig(gpus: Sequence[Gpu]) -> bool | None:
    """MIG mode is on for some GPU."""
    return _any([g.mig_enabled for g in gpus])


@GPUS.fact(
    "gpu.any_lacks_bf16", FactType.BOOL, "some GPU has no bf16 tensor math (T4, V100, older)"
)
def any_lacks_bf16(gpus: Sequence[Gpu]) -> bool | None:
    """Some GPU cannot run bf16."""
    return _any([None if g.supports.bf16 is None else not g.supports.bf16 for g in gpus])


@GPUS.fact("gpu.all_bf16", FactType.BOOL, "every GPU runs bf16")
def all_bf16(gpus: Sequence[Gpu]) -> bool | None:
    """Every GPU runs bf16 (unknown when one's support is unknown, or no GPU)."""
    bf16 = [g.supports.bf16 for g in gpus]
    return all(bf16) if gpus and all(b is not None for b in bf16) else None


@GPUS.fact("gpu.min_compute_capability", FactType.VERSION, "lowest compute capability (NVIDIA)")
def min_compute_capability(gpus: Sequence[Gpu]) -> object | None:
    """The lowest compute capability of the NVIDIA GPUs."""
    return lowest_version(g.compute_capability for g in _nvidia(gpus))


@GPUS.fact("gpu.min_cuda_driver", FactType.VERSION, "highest CUDA version every GPU's driver runs")
def min_cuda_driver(gpus: Sequence[Gpu]) -> str | None:
    """The CUDA version every GPU's driver runs: the lowest they report."""
    lowest = lowest_version(g.cuda_driver_version for g in gpus)
    return lowest if isinstance(lowest, str) else None


@GPUS.fact("gpu.driver_version", FactType.VERSION, "driver version of the first GPU")
def driver_version(gpus: Sequence[Gpu]) -> str | None:
    """The first GPU's driver (one driver serves every GPU of a machine)."""
    return gpus[0].driver_version if gpus else None


@GPUS.fact(
    "gpu.torch_wheel_tag",
    FactType.STRING,
    "newest torch CUDA wheel tag the driver runs (cu118, cu121, ...)",
)
def torch_wheel_tag(gpus: Sequence[Gpu]) -> str | None:
    """The torch build to install for this driver (catalog ``cuda.yaml``)."""
    driver = min_cuda_driver(gpus)
    return newest_wheel_tag(driver) if driver is not None else None


@GPUS.fact("gpu.min_pcie_generation", FactType.NUMBER, "lowest PCIe generation of any GPU")
def min_pcie_generation(gpus: Sequence[Gpu]) -> int | None:
    """The slowest PCIe link generation among the GPUs."""
    gens = known(g.pcie_generation for g in gpus)
    return min(gens) if gens else None


@GPUS.fact("gpu.unified_memory", FactType.BOOL, "the GPU shares system memory (Apple Silicon)")
def unified_memory(gpus: Sequence[Gpu]) -> bool:
    """A GPU shares the system's memory (false with no GPU)."""
    return any(g.unified_memory for g in gpus)


@GPUS.fact("gpu.max_utilization_percent", FactType.NUMBER, "busiest GPU's utilisation when probed")
def max_utilization(gpus: Sequence[Gpu]) -> float | None:
    """The busiest GPU's utilisation when probed."""
    util = known(g.utilization_percent for g in gpus)
    return max(util) if util else None


@GPUS.fact("gpu.max_temperature_c", FactType.NUMBER, "hottest GPU's temperature when probed")
def max_temperature(gpus: Sequence[Gpu]) -> float | None:
    """The hottest GPU's temperature when probed."""
    temps = known(g.temperature_c for g in gpus)
    return max(temps) if temps else None
