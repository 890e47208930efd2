"""A user's price file (``--prices FILE``): a SkyPilot catalog CSV, a gpuhunt export, or ours.

The format is told by the header:

- our own (the SkyPilot columns plus ``DeviceId``): read as the shipped file is;
- SkyPilot (``InstanceType, AcceleratorName, AcceleratorCount, vCPUs, MemoryGiB, Price,
  SpotPrice, Region``; one CSV per cloud, e.g. ``~/.sky/catalogs/v7/aws/vms.csv``);
- gpuhunt (``instance_name, location, price, cpu, memory, gpu_count, gpu_name,
  gpu_memory, spot``; on-demand and spot offers are separate rows).

Their accelerator spellings (``A100-80GB``, ``A10G``, ``V100-32GB``, ``RTX4090``) map to
catalog device ids; a CPU instance maps to its processor by instance family (``c7i.*`` is
the Xeon Platinum 8488C). A row that maps to nothing in the catalog is skipped and counted
by reason, never fatal; a missing column, a negative price or text where a number belongs
is an error naming the file, the line and the column. SkyPilot's GCP catalog lists a
machine's GPUs apart from its host: a GPU row (no instance type) is added to the host row
with the same accelerator, count and region, and otherwise skipped.
"""

from __future__ import annotations

import csv
import io
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.catalog.instance_rows import (
    MAX_PRICE_FILE_BYTES,
    SKYPILOT_COLUMNS,
    Cells,
    Instance,
    check_columns,
    parse_own,
)
from hwadvisor.errors import CatalogError
from hwadvisor.io import read_limited_text

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry

GPUHUNT_COLUMNS = (
    "instance_name",
    "location",
    "price",
    "cpu",
    "memory",
    "gpu_count",
    "gpu_name",
    "gpu_memory",
    "spot",
)

#: Accelerator spellings of SkyPilot and gpuhunt (upper case, without spaces, '-' or '_')
#: -> catalog id. A name that carries no memory size and comes in two (A100, V100) is
#: refined by the row's GPU memory where the file gives it.
ACCELERATORS = {
    "T4": "t4",
    "L4": "l4",
    "A10": "a10",
    "A10G": "a10g",  # AWS's variant of the A10 (g5), a catalog entry of its own
    "V100": "v100-16gb",
    "V10016GB": "v100-16gb",
    "V10032GB": "v100-32gb",
    "A100": "a100-40gb",
    "A10040GB": "a100-40gb",
    "A10080GB": "a100-80gb",
    "H100": "h100-sxm",
    "H100SXM": "h100-sxm",
    "H100MEGA": "h100-sxm",
    "H100PCIE": "h100-pcie",
    "H200": "h200",
    "L40S": "l40s",
    "RTX3090": "rtx-3090",
    "RTX4090": "rtx-4090",
    "MI300X": "mi300x",
    "H100NVL": "h100-nvl",
    "B200": "b200",
    "L40": "l40",
    "A6000": "rtx-a6000",
    "RTXA6000": "rtx-a6000",
    "RTX5090": "rtx-5090",
    "MI250X": "mi250x",
}
_BY_MEMORY = {("v100-16gb", 32): "v100-32gb", ("a100-40gb", 80): "a100-80gb"}

#: Instance families of CPU types whose processor is in the device catalog. Sources: the
#: clouds' instance pages (AWS C7i/M7i/R7i: Xeon Platinum 8488C; Google Cloud C3: Xeon
#: Platinum 8481C; Alibaba Cloud c7/g7/r7: Xeon Platinum 8369B).
CPU_FAMILIES = {
    "c7i": "xeon-8488c",
    "m7i": "xeon-8488c",
    "r7i": "xeon-8488c",
    "c7i-flex": "xeon-8488c",
    "m7i-flex": "xeon-8488c",
    "c3": "xeon-8481c",
    "ecs.c7": "xeon-8369b",
    "ecs.g7": "xeon-8369b",
    "ecs.r7": "xeon-8369b",
}
_FAMILY = re.compile(r"^(ecs\.[a-z0-9]+|[a-z0-9]+(?:-flex)?)[.-]")
_CLOUDS = ("aws", "gcp", "azure", "lambda", "runpod", "oci", "alibaba", "nebius", "vast")


def accelerator_device(
    name: str, memory_gib: float | None, devices: Mapping[str, DeviceEntry]
) -> str | None:
    """The catalog id of an accelerator as a price file spells it, or None."""
    key = re.sub(r"[\s_\-]+", "", name).upper().removeprefix("NVIDIA").removeprefix("TESLA")
    ident = ACCELERATORS.get(key)
    if ident and memory_gib:
        ident = _BY_MEMORY.get((ident, round(memory_gib / 8) * 8), ident)
    if ident is None:
        from hwadvisor.catalog.match import match_gpu

        mem = int(memory_gib * 1024**3) if memory_gib else None
        ident = match_gpu(name, mem)
    return ident if ident in devices else None


def cpu_device(instance_type: str) -> str | None:
    """The catalog processor of a CPU instance type, by its family (``c7i.large`` -> c7i)."""
    m = _FAMILY.match(instance_type.lower())
    return CPU_FAMILIES.get(m.group(1)) if m else None


def _file_date(path: Path) -> str:
    """The day the file was last written (standard input: today, when it is read)."""
    if str(path) == "-":
        return datetime.now(tz=timezone.utc).strftime("%Y-%m-%d")
    stamp = datetime.fromtimestamp(path.stat().st_mtime, tz=timezone.utc)
    return stamp.strftime("%Y-%m-%d")


def _cloud(path: Path) -> str:
    parts = [p.lower() for p in path.parts]
    return next((c for c in _CLOUDS if c in parts or path.stem.lower() == c), "")


def read_price_file(
    path: Path, devices: Mapping[str, DeviceEntry]
) -> tuple[list[Instance], dict[str, int]]:
    """The instances of a user's price file and the rows skipped, counted by reason."""
    where = str(path)
    # A regular file only (a device or a FIFO is refused unread), at most the cap.
    text = read_limited_text(
        path,
        MAX_PRICE_FILE_BYTES,
        CatalogError,
        what="price file",
        missing="price file not found",
        folder="price file path is a folder, not a file",
    ).removeprefix("\ufeff")
    when = _file_date(path)
    source = f"{where} (a user price file; priced as of the file's date unless PriceDate says)"
    return parse_price_text(text, where, devices, when=when, source=source, cloud=_cloud(path))


def parse_price_text(
    text: str,
    where: str,
    devices: Mapping[str, DeviceEntry],
    *,
    when: str,
    source: str,
    cloud: str = "",
) -> tuple[list[Instance], dict[str, int]]:
    """The instances of a price catalog's text, its format told by the header (see the
    module); ``when`` dates rows that carry no date, ``cloud`` names a SkyPilot file's cloud."""
    try:
        header = next(csv.reader(io.StringIO(text)), [])
    except csv.Error as exc:
        raise CatalogError(f"line 1: not CSV: {exc}", where=where) from exc
    try:
        if "DeviceId" in header:
            return parse_own(text, where, devices, default_date=when), {}
        if "instance_name" in header:
            return _gpuhunt(text, where, devices, when, source, cloud)
        return _skypilot(text, where, devices, when, source, cloud)
    except csv.Error as exc:
        raise CatalogError(f"not CSV: {exc}", where=where) from exc


def _skypilot(
    text: str,
    where: str,
    devices: Mapping[str, DeviceEntry],
    when: str,
    source: str,
    cloud: str,
) -> tuple[list[Instance], dict[str, int]]:
    reader = csv.DictReader(io.StringIO(text))
    check_columns(reader.fieldnames, SKYPILOT_COLUMNS, where)
    skipped: Counter[str] = Counter()
    hosts: list[tuple[Instance, str]] = []
    gpus: dict[tuple[str, int, str], tuple[float | None, float | None]] = {}
    for row in reader:
        cells = Cells(row, where, reader.line_num)
        name = cells.text("InstanceType")
        acc = cells.text("AcceleratorName")
        count = cells.whole("AcceleratorCount") or 0
        price = cells.number("Price")
        spot = cells.number("SpotPrice")
        region = cells.text("Region")
        date = cells.date() or when
        if not name:
            if acc:
                gpus[(acc, count, region)] = (price, spot)
            else:
                skipped["no instance type"] += 1
            continue
        device = accelerator_device(acc, None, devices) if acc else cpu_device(name)
        if device is None or device not in devices:
            skipped[
                f"accelerator not in the device catalog ({acc})"
                if acc
                else "CPU family not in the device catalog"
            ] += 1
            continue
        inst = Instance(
            instance_type=name,
            device_id=device,
            accelerator_count=count if acc else 0,
            vcpus=cells.whole("vCPUs") or None,
            memory_gib=cells.number("MemoryGiB") or None,
            price=price,
            spot_price=spot,
            region=region,
            cloud=(cells.text("Cloud") or cloud).lower(),
            accelerator_name=acc,
            price_date=date if price is not None or spot is not None else None,
            source=source,
        )
        hosts.append((inst, acc))
    return _add_attached(hosts, gpus, skipped), dict(skipped)


def _add_attached(
    hosts: list[tuple[Instance, str]],
    gpus: Mapping[tuple[str, int, str], tuple[float | None, float | None]],
    skipped: Counter[str],
) -> list[Instance]:
    """Host rows with the price of GPUs listed apart (SkyPilot's GCP catalog) added."""
    from dataclasses import replace

    out: list[Instance] = []
    used: set[tuple[str, int, str]] = set()
    for inst, acc in hosts:
        key = (acc, inst.accelerator_count, inst.region)
        if acc and key in gpus:
            used.add(key)
            gpu_price, gpu_spot = gpus[key]
            inst = replace(
                inst,
                price=_sum(inst.price, gpu_price),
                spot_price=_sum(inst.spot_price, gpu_spot),
                note="host and GPU prices added",
            )
        out.append(inst)
    alone = len(set(gpus) - used)
    if alone:
        skipped["GPU listed without a host instance to attach it to"] += alone
    return out


def _sum(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a + b


def _gpuhunt(
    text: str,
    where: str,
    devices: Mapping[str, DeviceEntry],
    when: str,
    source: str,
    cloud: str = "",
) -> tuple[list[Instance], dict[str, int]]:
    reader = csv.DictReader(io.StringIO(text))
    check_columns(reader.fieldnames, GPUHUNT_COLUMNS, where)
    skipped: Counter[str] = Counter()
    offers: dict[tuple[str, str], _Offer] = {}
    for row in reader:
        cells = Cells(row, where, reader.line_num)
        name = cells.text("instance_name")
        price = cells.number("price")
        count = cells.whole("gpu_count") or 0
        acc = cells.text("gpu_name")
        device = (
            accelerator_device(acc, cells.number("gpu_memory"), devices)
            if count
            else cpu_device(name)
        )
        if not name or device is None:
            skipped[
                "no instance name" if not name else f"not in the device catalog ({acc or 'CPU'})"
            ] += 1
            continue
        offer = offers.setdefault(
            (name, cells.text("location")),
            _Offer(
                device,
                count,
                acc,
                cells.whole("cpu"),
                cells.number("memory"),
                (cells.text("provider") or cloud).lower(),
            ),
        )
        if cells.text("spot").lower() == "true":
            offer.spot = price
        else:
            offer.price = price
    return [
        Instance(
            instance_type=name,
            device_id=o.device,
            accelerator_count=o.count,
            vcpus=o.vcpus,
            memory_gib=o.memory or None,
            price=o.price,
            spot_price=o.spot,
            region=region,
            cloud=o.cloud,
            accelerator_name=o.acc,
            price_date=when,
            source=source,
        )
        for (name, region), o in offers.items()
    ], dict(skipped)


@dataclass
class _Offer:
    """One gpuhunt offer (instance, location): its on-demand and spot rows together."""

    device: str
    count: int
    acc: str
    vcpus: int | None
    memory: float | None
    cloud: str
    price: float | None = None
    spot: float | None = None
