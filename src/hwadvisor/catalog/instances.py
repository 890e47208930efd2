"""The instance catalog: cloud instance types, the catalog devices they carry, dated prices.

The shipped ``data/instances.csv`` has SkyPilot's catalog columns (``InstanceType,
AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price, SpotPrice, Region``) and
ours: ``Cloud``, ``DeviceId`` (the catalog device: the GPU, x ``AcceleratorCount``, or
for a CPU instance its processor), ``CpuModel`` (the processor as the cloud names it),
``PriceDate``, ``Source`` and ``Note`` (why a row is unpriced, or what to know about it).
Prices are USD per hour, Linux; an empty price means unpriced, never free.

``hwadvisor prices update`` keeps a current, dated catalog in the user cache
(:mod:`hwadvisor.catalog.price_cache`); when present it replaces the shipped rows of the
instance types it lists. A user's ``--prices FILE`` (a SkyPilot catalog CSV, a gpuhunt
export, or a file of our own format) is laid over both; see
:mod:`hwadvisor.catalog.price_files`. The rows and their cells are read by
:mod:`hwadvisor.catalog.instance_rows` (re-exported here). Every problem in a file is one
:class:`~hwadvisor.errors.CatalogError` naming the file, the line and the column.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.catalog.instance_rows import (
    MAX_PRICE_FILE_BYTES,
    OWN_COLUMNS,
    SHIPPED,
    SKYPILOT_COLUMNS,
    STALE_AFTER_DAYS,
    UPDATE_COMMAND,
    Cells,
    Instance,
    cell_error,
    check_columns,
    parse_own,
    parse_price_date,
)
from hwadvisor.errors import CatalogError

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry

__all__ = [
    "MAX_PRICE_FILE_BYTES",
    "OWN_COLUMNS",
    "SHIPPED",
    "SKYPILOT_COLUMNS",
    "STALE_AFTER_DAYS",
    "UPDATE_COMMAND",
    "Cells",
    "Instance",
    "InstanceCatalog",
    "cell_error",
    "check_columns",
    "cpu_share",
    "instance_device",
    "load_instances",
    "nodes_for",
    "parse_own",
    "parse_price_date",
    "price_age_days",
    "stale_summary",
    "stale_warning",
]


@dataclass(frozen=True)
class InstanceCatalog:
    """The instances by type, and what a user's price file left out (reason -> rows)."""

    instances: tuple[Instance, ...]
    skipped: Mapping[str, int] = field(default_factory=dict)
    files: tuple[str, ...] = (SHIPPED,)

    def find(self, name: str, region: str | None = None) -> Instance:
        """The instance type ``name`` (any case), cheapest region first; unknown -> did-you-mean."""
        from hwadvisor.catalog.loader import did_you_mean

        key = name.lower()
        rows = [i for i in self.instances if i.instance_type.lower() == key]
        if region is not None:
            rows = [i for i in rows if i.region.lower() == region.lower()]
        if not rows:
            spelled = {i.instance_type.lower(): i.instance_type for i in self.instances}
            hint = did_you_mean(key, sorted(spelled))
            for low, orig in spelled.items():
                hint = hint.replace(f" {low}?", f" {orig}?").replace(f" {low} or", f" {orig} or")
            inside = [orig for low, orig in spelled.items() if key in low][:3]
            if not hint and inside:
                hint = f" (did you mean {' or '.join(inside)}?)"
            where = f" in region {region}" if region else ""
            raise CatalogError(
                f"unknown instance type '{name}'{where}{hint}; see `hwadvisor catalog instances`"
            )
        return min(rows, key=_price_key)

    def offering(self, device_id: str, count: int = 1) -> list[Instance]:
        """Instances carrying ``count`` or more of ``device_id`` (GPU) or that processor (CPU).

        Where no instance carries ``count`` GPUs, the job runs on several nodes: the
        instances with the most of them (a cluster is built of full nodes, e.g. 8 x
        p5.48xlarge for 64 H100s; :func:`nodes_for` counts them)."""
        need = 0 if count < 1 else count
        mine = [i for i in self.instances if i.device_id == device_id]
        one = [i for i in mine if i.is_cpu or i.accelerator_count >= need]
        gpus = [i.accelerator_count for i in mine if not i.is_cpu]
        if one or not gpus or max(gpus) < MIN_NODE_GPUS:
            return one
        return [i for i in mine if not i.is_cpu and i.accelerator_count == max(gpus)]


#: Fewest GPUs an instance has to be a node of a multi-node job (a cluster of one-GPU
#: instances is not how a job past one node is run).
MIN_NODE_GPUS = 4


def nodes_for(inst: Instance, count: int) -> int:
    """Instances of ``inst`` a job on ``count`` GPUs needs: one, or as many full nodes as
    hold them (a CPU instance: one)."""
    if inst.is_cpu or count <= inst.accelerator_count:
        return 1
    return -(-count // inst.accelerator_count)


def _price_key(inst: Instance) -> tuple[int, float, str]:
    return (0 if inst.price is not None else 1, inst.price or 0.0, inst.region)


@lru_cache(maxsize=1)
def _shipped() -> tuple[Instance, ...]:
    from hwadvisor.catalog import load_devices

    text = (
        resources.files("hwadvisor.catalog")
        .joinpath("data")
        .joinpath("instances.csv")
        .read_text("utf-8")
    )
    return tuple(parse_own(text, SHIPPED, load_devices()))


def load_instances(
    prices: str | Path | None = None,
    *,
    devices: Mapping[str, DeviceEntry] | None = None,
    cached: bool = True,
) -> InstanceCatalog:
    """The shipped instances, with the dated catalog ``hwadvisor prices update`` keeps in
    the user cache over them (unless ``cached`` is false), then a user's price file (each
    layer's instance types replace the ones below)."""
    from hwadvisor.catalog import load_devices

    rows = _shipped()
    files: tuple[str, ...] = (SHIPPED,)
    skipped: Mapping[str, int] = {}
    if cached:
        from hwadvisor.catalog.price_cache import read_cached

        kept = read_cached(devices or load_devices())
        if kept is not None:
            rows, files = _over(rows, kept.instances), (*files, kept.path)
    if prices is not None:
        from hwadvisor.catalog.price_files import read_price_file

        theirs, skipped = read_price_file(Path(prices), devices or load_devices())
        rows, files = _over(rows, theirs), (*files, str(prices))
    return InstanceCatalog(instances=rows, skipped=skipped, files=files)


def _over(below: Iterable[Instance], above: Iterable[Instance]) -> tuple[Instance, ...]:
    """``above`` laid over ``below``: an instance type in both is ``above``'s alone."""
    above = tuple(above)
    replaced = {i.instance_type.lower() for i in above}
    return tuple(i for i in below if i.instance_type.lower() not in replaced) + above


# -- stale prices --------------------------------------------------------------------------


def price_age_days(inst: Instance, today: date | None = None) -> int | None:
    """Days between the price's date and ``today``; None for an unpriced row."""
    if inst.price_date is None or (inst.price is None and inst.spot_price is None):
        return None
    return ((today or date.today()) - parse_price_date(inst.price_date)).days


def stale_warning(inst: Instance, today: date | None = None) -> str | None:
    """A warning when the price of ``inst`` is older than a year, naming its date."""
    age = price_age_days(inst, today)
    if age is None or age <= STALE_AFTER_DAYS:
        return None
    return (
        f"the price of {inst.instance_type} is dated {inst.price_date}, {age / 365.25:.1f} years "
        f"old: refresh it with `{UPDATE_COMMAND}` (or --prices FILE)"
    )


def stale_summary(instances: Iterable[Instance], today: date | None = None) -> str | None:
    """One warning line for a listing: how many prices are stale, and the oldest date."""
    stale = [i for i in instances if stale_warning(i, today)]
    if not stale:
        return None
    oldest = min(stale, key=lambda i: parse_price_date(i.price_date or "9999-12"))
    return (
        f"{len(stale)} prices are more than a year old (the oldest: {oldest.instance_type}, "
        f"dated {oldest.price_date}); refresh them with `{UPDATE_COMMAND}` (or --prices FILE)"
    )


# -- what an instance runs on --------------------------------------------------------------

#: vCPUs are hardware threads. The x86 types of AWS, Google Cloud, Azure and Alibaba Cloud
#: give two per physical core (SMT / Hyper-Threading on), so 2 vCPUs are one core; an
#: entry's ``threads / cores`` says how many threads its cores run.
SMT_NOTE = "vCPUs are hardware threads: threads/cores of the processor per core (2 on x86 clouds)"


def cpu_share(
    entry: DeviceEntry, vcpus: int, memory_gib: float | None = None, *, ident: str | None = None
) -> DeviceEntry:
    """The part of a CPU ``entry`` that ``vcpus`` vCPUs get: their cores' share of it.

    The peaks, the memory bandwidth (a fair share of the socket's channels: a small
    instance may draw more while its neighbours are idle, and is never promised it) and
    the board power scale with the cores; memory is the instance's own when given.
    """
    if not entry.cores:
        raise CatalogError(f"CPU entry {entry.id} states no core count; cannot price {vcpus} vCPUs")
    smt = (entry.threads or entry.cores) / entry.cores
    cores = vcpus / smt
    share = cores / entry.cores
    peaks = entry.peaks_tflops.model_copy(
        update={
            k: (v * share if v is not None else None)
            for k, v in entry.peaks_tflops.model_dump().items()
        }
    )
    memory = int(memory_gib * 1024**3) if memory_gib else int(entry.memory_bytes * share)
    power = entry.board_power_w or entry.tdp_watts
    return entry.model_copy(
        update={
            "id": ident or f"{entry.id}@{vcpus}vcpu",
            "name": f"{vcpus} vCPUs ({cores:g} core{'' if cores == 1 else 's'}) of {entry.name}",
            "peaks_tflops": peaks,
            "memory_bytes": max(memory, 1),
            "bandwidth_gb_s": entry.bandwidth_gb_s * share,
            "board_power_w": power * share if power else None,
            "tdp_watts": entry.tdp_watts * share if entry.tdp_watts else None,
            "cores": max(1, round(cores)),
            "threads": vcpus,
            "sockets": max(1, math.ceil(share - 1e-9)),
            "notes": f"{entry.notes + ' ' if entry.notes else ''}Scaled to {vcpus} vCPUs: {SMT_NOTE}.",
        }
    )


def instance_device(inst: Instance, devices: Mapping[str, DeviceEntry]) -> tuple[DeviceEntry, int]:
    """The catalog device an instance runs a job on, and how many: GPU x count, or its vCPUs."""
    entry = devices.get(inst.device_id)
    if entry is None:
        raise CatalogError(f"instance {inst.instance_type}: unknown device '{inst.device_id}'")
    if not inst.is_cpu:
        return entry, inst.accelerator_count
    if not inst.vcpus:
        raise CatalogError(f"CPU instance {inst.instance_type} states no vCPUs")
    return cpu_share(entry, inst.vcpus, inst.memory_gib, ident=inst.instance_type), 1
