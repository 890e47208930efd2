"""The rows of an instance catalog: the :class:`Instance` record and reading CSV cells.

Shared by the shipped catalog (:mod:`hwadvisor.catalog.instances`) and the users' price
files (:mod:`hwadvisor.catalog.price_files`): the columns, one :class:`Instance` per row,
:class:`Cells` (numbers, whole numbers and dates read with errors naming the file, the
line and the column) and :func:`parse_own` for files of our own format.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import TYPE_CHECKING

from hwadvisor.errors import CatalogError
from hwadvisor.models.bounds import PRICE_COLUMNS

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry

#: SkyPilot's catalog columns, in its order: every price file must have these.
SKYPILOT_COLUMNS = (
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "Price",
    "SpotPrice",
    "Region",
)
#: Our own columns, after SkyPilot's, in the shipped file.
OWN_COLUMNS = ("Cloud", "DeviceId", "CpuModel", "PriceDate", "Source", "Note")
#: A price older than this (days, against today) is stale: a warning names its date.
STALE_AFTER_DAYS = 365
#: A price file larger than this is refused (SkyPilot's AWS catalog is about 10 MiB).
MAX_PRICE_FILE_BYTES = 64 * 1024 * 1024
SHIPPED = "hwadvisor/catalog/data/instances.csv"
#: The command that fetches a current, dated price catalog into the user cache.
UPDATE_COMMAND = "hwadvisor prices update"
#: Clouds that sell GPUs singly at a per-GPU price (a marketplace): an offer of N GPUs
#: is N rentals of one, so a job is billed for the GPUs it uses, not the offer's N.
#: RunPod bills per GPU (its pods are 1-8 GPUs at N x the one-GPU price, runpod.io/pricing);
#: Vast.ai and TensorDock list machines whose GPUs are rented one by one.
MARKETPLACES = frozenset({"runpod", "vast", "vastai", "tensordock"})


@dataclass(frozen=True, slots=True)
class Instance:
    """One instance type in one region: what it carries and what it costs per hour."""

    instance_type: str
    device_id: str
    accelerator_count: int
    vcpus: int | None
    memory_gib: float | None
    price: float | None
    spot_price: float | None
    region: str = ""
    cloud: str = ""
    accelerator_name: str = ""
    cpu_model: str = ""
    price_date: str | None = None
    source: str = ""
    note: str = ""

    @property
    def is_cpu(self) -> bool:
        """A CPU instance: no accelerator; it is priced for its vCPUs, not the processor."""
        return self.accelerator_count == 0

    @property
    def per_gpu(self) -> bool:
        """Sold by the GPU (a marketplace, :data:`MARKETPLACES`): a job pays for its GPUs."""
        return not self.is_cpu and self.cloud in MARKETPLACES

    def billed_gpus(self, gpus: int) -> int:
        """GPUs paid for when a job uses ``gpus`` of this offer: the job's own on a
        marketplace, else every GPU of the instances it takes (whole nodes); 0 for a CPU."""
        if self.is_cpu:
            return 0
        if self.per_gpu:
            return max(gpus, 1)
        nodes = 1 if gpus <= self.accelerator_count else -(-gpus // self.accelerator_count)
        return nodes * self.accelerator_count

    def hourly_for(self, gpus: int = 1, *, spot: bool = False) -> float | None:
        """Dollars per hour for a job on ``gpus`` of these GPUs (see :meth:`billed_gpus`);
        a CPU instance's own price. None when unpriced."""
        base = self.spot_price if spot else self.price
        if base is None or self.is_cpu:
            return base
        return base * self.billed_gpus(gpus) / self.accelerator_count

    def row(self) -> dict[str, object]:
        """The row as JSON: SkyPilot's column names, then ours (empty cells are null)."""
        return {
            "InstanceType": self.instance_type,
            "AcceleratorName": self.accelerator_name or None,
            "AcceleratorCount": self.accelerator_count,
            "vCPUs": self.vcpus,
            "MemoryGiB": self.memory_gib,
            "Price": self.price,
            "SpotPrice": self.spot_price,
            "Region": self.region or None,
            "Cloud": self.cloud or None,
            "DeviceId": self.device_id,
            "CpuModel": self.cpu_model or None,
            "PriceDate": self.price_date,
            "Source": self.source,
            "Note": self.note or None,
        }


# -- reading cells -------------------------------------------------------------------------


def cell_error(where: str, line: int, column: str, message: str) -> CatalogError:
    """The one-line error for a bad cell: file, line and column, then what is wrong."""
    return CatalogError(f"line {line}, column {column}: {message}", where=where)


@dataclass(frozen=True)
class Cells:
    """The cells of one CSV row, read with errors that name the file, line and column."""

    row: Mapping[str, str | None]
    where: str
    line: int

    def text(self, column: str) -> str:
        """The stripped text of ``column`` ('' when absent)."""
        return (self.row.get(column) or "").strip()

    def error(self, column: str, message: str) -> CatalogError:
        """The one-line error for this row's ``column``."""
        return cell_error(self.where, self.line, column, message)

    def number(self, column: str, *, integer: bool = False, positive: bool = False) -> float | None:
        """The number in ``column`` (None when empty); negative, NaN or text is an error."""
        text = self.text(column)
        if not text:
            return None
        try:
            value = float(text)
        except ValueError as exc:
            raise self.error(column, f"not a number: {text[:40]!r}") from exc
        if not math.isfinite(value):
            raise self.error(column, f"not a finite number: {text[:40]!r}")
        if value < 0 or (positive and value == 0):
            raise self.error(
                column, f"must be {'above 0' if positive else '0 or more'}, got {text[:40]}"
            )
        if integer and value != int(value):
            raise self.error(column, f"must be a whole number, got {text[:40]}")
        bound = PRICE_COLUMNS.get(column)
        if bound is not None and bound.le is not None and value > bound.le:
            raise self.error(column, f"must be at most {bound.le:g}, got {text[:40]}")
        return value

    def whole(self, column: str, *, positive: bool = False) -> int | None:
        """A whole number cell (see :meth:`number`)."""
        value = self.number(column, integer=True, positive=positive)
        return None if value is None else int(value)

    def date(self, column: str = "PriceDate") -> str | None:
        """A YYYY-MM or YYYY-MM-DD date as written (None when empty)."""
        text = self.text(column)
        if not text:
            return None
        try:
            parse_price_date(text)
        except ValueError as exc:
            raise self.error(column, f"not a date (YYYY-MM or YYYY-MM-DD): {text[:40]!r}") from exc
        return text


def check_columns(header: Iterable[str] | None, needed: Iterable[str], where: str) -> None:
    """Refuse a file that lacks one of ``needed`` columns, naming the first missing."""
    have = set(header or ())
    for column in needed:
        if column not in have:
            raise CatalogError(f"line 1: missing column '{column}'", where=where)


def parse_price_date(text: str) -> date:
    """The day a price date stands for: a month means its first day (the older reading)."""
    parts = text.strip().split("-")
    if len(parts) == 2:
        parts.append("01")
    if len(parts) != 3 or len(parts[0]) != 4:
        raise ValueError(text)
    return date(int(parts[0]), int(parts[1]), int(parts[2]))


# -- the shipped file (and user files of the same format) ----------------------------------


def parse_own(
    text: str, where: str, devices: Mapping[str, DeviceEntry], *, default_date: str | None = None
) -> list[Instance]:
    """Rows of our own format; every device id must be in the device catalog."""
    reader = csv.DictReader(io.StringIO(text))
    check_columns(reader.fieldnames, (*SKYPILOT_COLUMNS, "DeviceId"), where)
    out: list[Instance] = []
    for row in reader:
        out.append(_own_row(row, where, reader.line_num, devices, default_date))
    return out


def _own_row(
    row: Mapping[str, str | None],
    where: str,
    line: int,
    devices: Mapping[str, DeviceEntry],
    default_date: str | None,
) -> Instance:
    cells = Cells(row, where, line)
    name = cells.text("InstanceType")
    if not name:
        raise cells.error("InstanceType", "empty")
    device = cells.text("DeviceId").lower()
    if device not in devices:
        from hwadvisor.catalog.loader import load_families
        from hwadvisor.catalog.names import hint

        guess = hint(device, devices, load_families("devices"))
        raise cells.error("DeviceId", f"unknown device '{device}'{guess}")
    count = cells.whole("AcceleratorCount") or 0
    vcpus = cells.whole("vCPUs", positive=True)
    is_cpu = devices[device].kind.value == "cpu"
    if is_cpu and (count or vcpus is None):
        raise cells.error("vCPUs", "a CPU instance needs vCPUs and no accelerators")
    if not is_cpu and count < 1:
        raise cells.error("AcceleratorCount", f"a {device} instance needs 1 or more")
    price = cells.number("Price")
    spot = cells.number("SpotPrice")
    when = cells.date() or default_date
    if (price is not None or spot is not None) and not when:
        raise cells.error("PriceDate", "a priced row needs its date")
    return Instance(
        instance_type=name,
        device_id=device,
        accelerator_count=count,
        vcpus=vcpus,
        memory_gib=cells.number("MemoryGiB", positive=True),
        price=price,
        spot_price=spot,
        region=cells.text("Region"),
        cloud=cells.text("Cloud").lower(),
        accelerator_name=cells.text("AcceleratorName"),
        cpu_model=cells.text("CpuModel"),
        price_date=when if price is not None or spot is not None else None,
        source=cells.text("Source") or where,
        note=cells.text("Note"),
    )
