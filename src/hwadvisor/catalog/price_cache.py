"""A current price catalog, fetched and kept dated in the user cache (``hwadvisor prices update``).

Two published catalogs are read, both as their own clients read them:

- gpuhunt's (dstack's), the default: ``{base}/version`` names the newest build
  (``YYYYMMDD-BUILD``, its date the price date), ``{base}/{version}/catalog.zip`` holds
  one CSV per provider (``aws.csv``, ``runpod.csv``, ...), on-demand and spot offers as
  separate rows. Marketplaces (RunPod, Vast.ai) come in with their one-GPU offers.
- one CSV at a URL ending in ``.csv``: a SkyPilot catalog (``catalogs/v8/aws/vms.csv``;
  its cloud is the folder it sits in) or a gpuhunt provider file, dated by the server's
  ``Last-Modified``, else the day it was fetched.

The rows the device catalog knows are kept, the cheapest region of each (instance type,
cloud), as our own CSV format (:mod:`hwadvisor.catalog.instance_rows`): every row with
its price date and source. The file is written atomically to
``$HWADVISOR_CACHE_DIR/prices/instances.csv`` (the folder the remembered bench figures
use; ``off`` keeps nothing), and :func:`hwadvisor.catalog.instances.load_instances` lays
it over the shipped snapshot on every later run.
"""

from __future__ import annotations

import csv
import io
import os
import urllib.error
import urllib.request
import zipfile
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING

from hwadvisor.catalog.instance_rows import (
    MAX_PRICE_FILE_BYTES,
    OWN_COLUMNS,
    SKYPILOT_COLUMNS,
    Instance,
    parse_own,
)
from hwadvisor.errors import CatalogError, UndeterminedError, UsageError

if TYPE_CHECKING:
    from hwadvisor.catalog.schema import DeviceEntry

#: gpuhunt's published catalog (dstackai/gpuhunt, ``src/gpuhunt/_internal/catalog.py``).
GPUHUNT_BASE = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v2"
#: Seconds to wait for each request before giving up (the tool never hangs on a network).
DEFAULT_TIMEOUT_S = 20.0
FILE_NAME = "instances.csv"


def cache_file() -> Path | None:
    """Where the fetched catalog is kept; None when the cache is off.

    The folder is the one the remembered bench figures use
    (:func:`hwadvisor.bench.remembered.cache_dir`, the same rule: ``$HWADVISOR_CACHE_DIR``,
    ``off`` for none, else ``$XDG_CACHE_HOME/hwadvisor`` or ``~/.cache/hwadvisor``), read
    here again because the catalog layer may not import the bench's.
    """
    raw = os.environ.get("HWADVISOR_CACHE_DIR")
    if raw is not None:
        if raw.strip().lower() in ("", "off", "0", "no"):
            return None
        folder = Path(raw)
    else:
        xdg = os.environ.get("XDG_CACHE_HOME")
        folder = Path(xdg) / "hwadvisor" if xdg else Path.home() / ".cache" / "hwadvisor"
    return folder / "prices" / FILE_NAME


@dataclass(frozen=True)
class Cached:
    """The catalog kept in the user cache: its path and its instances."""

    path: str
    instances: tuple[Instance, ...]


def read_cached(devices: Mapping[str, DeviceEntry]) -> Cached | None:
    """The kept catalog, or None when there is none (or the cache is off); a damaged one
    is an error naming the file and the command that writes it anew."""
    path = cache_file()
    if path is None or not path.is_file():
        return None
    try:
        text = path.read_text(encoding="utf-8")
        return Cached(str(path), tuple(parse_own(text, str(path), devices)))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise CatalogError(
            f"cannot read the kept price catalog ({exc}); run `hwadvisor prices update` "
            "again or delete the file",
            where=str(path),
        ) from exc
    except CatalogError as exc:
        raise CatalogError(
            f"{exc.message}; run `hwadvisor prices update` again or delete the file",
            where=exc.where,
        ) from exc


# -- fetching ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Fetched:
    """One HTTP answer: its body and its ``Last-Modified`` date, if it gave one."""

    body: bytes
    modified: str | None = None


def fetch(url: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> Fetched:
    """GET ``url`` (http or https) within ``timeout_s`` and a size limit; a network failure
    is :class:`UndeterminedError` (exit 3), a bad URL :class:`UsageError`."""
    if not url.startswith(("http://", "https://")):
        raise UsageError(f"--url must be an http:// or https:// URL, got {url!r}")
    request = urllib.request.Request(url, headers={"User-Agent": "hwadvisor prices update"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            body = answer.read(MAX_PRICE_FILE_BYTES + 1)
            stamp = answer.headers.get("Last-Modified")
    except urllib.error.HTTPError as exc:
        raise UndeterminedError(f"{url}: HTTP {exc.code} {exc.reason}") from exc
    except (urllib.error.URLError, OSError, ValueError) as exc:
        why = getattr(exc, "reason", None) or exc
        raise UndeterminedError(f"cannot reach {url}: {why}") from exc
    if len(body) > MAX_PRICE_FILE_BYTES:
        raise CatalogError("the price catalog is too large", where=url)
    return Fetched(body, _http_date(stamp))


def _http_date(stamp: str | None) -> str | None:
    if not stamp:
        return None
    try:
        return parsedate_to_datetime(stamp).date().isoformat()
    except (TypeError, ValueError):
        return None


# -- updating ------------------------------------------------------------------------------


@dataclass
class Update:
    """What ``prices update`` fetched and kept."""

    url: str
    version: str | None
    price_date: str
    path: str | None
    instances: list[Instance] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    providers: dict[str, int] = field(default_factory=dict)

    def single_gpu_devices(self) -> list[str]:
        """The GPUs rentable one at a time: a one-GPU instance, or a marketplace's GPU."""
        return sorted(
            {i.device_id for i in self.instances if i.accelerator_count == 1 or i.per_gpu}
        )

    def summary(self) -> dict[str, object]:
        """The update as JSON: where from, the date, the rows kept per cloud, what was left."""
        single = self.single_gpu_devices()
        return {
            "url": self.url,
            "version": self.version,
            "price_date": self.price_date,
            "path": self.path,
            "instances": len(self.instances),
            "by_cloud": dict(sorted(self.providers.items())),
            "single_gpu_devices": single,
            "skipped": dict(sorted(self.skipped.items())),
        }


def update(
    url: str | None = None,
    *,
    devices: Mapping[str, DeviceEntry],
    timeout_s: float = DEFAULT_TIMEOUT_S,
    today: date | None = None,
    write: bool = True,
) -> Update:
    """Fetch a current catalog from ``url`` (gpuhunt's by default; see the module), keep
    the rows the device catalog knows, and write them atomically to the user cache."""
    base = (url or GPUHUNT_BASE).rstrip("/")
    fetched_on = (today or datetime.now(timezone.utc).date()).isoformat()
    if base.lower().endswith(".csv"):
        got = fetch(base, timeout_s)
        files = {_cloud_of(base): _text(got.body, base)}
        version, when = None, got.modified or fetched_on
        where = base
    else:
        version = _text(fetch(f"{base}/version", timeout_s).body, f"{base}/version").strip()
        when = _version_date(version, f"{base}/version")
        where = f"{base}/{version}/catalog.zip"
        files = _unzip(fetch(where, timeout_s).body, where)
    result = Update(url=where, version=version, price_date=when, path=None)
    rows, skipped = _parse_all(files, where, version, when, devices)
    result.instances = _cheapest_each(rows)
    result.skipped = dict(skipped)
    result.providers = dict(Counter(i.cloud or "?" for i in result.instances))
    if not result.instances:
        raise CatalogError(
            "no offer in the fetched catalog names a GPU or CPU of the device catalog; "
            "nothing was kept",
            where=where,
        )
    path = cache_file()
    if write and path is not None:
        from hwadvisor.io import atomic_write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, own_csv(result.instances))
        result.path = str(path)
    return result


def _text(body: bytes, where: str) -> str:
    try:
        return body.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CatalogError(f"not UTF-8 text: {exc}", where=where) from exc


def _version_date(version: str, where: str) -> str:
    """``20261205-1234`` -> ``2026-12-05``: the day the catalog was built."""
    try:
        return datetime.strptime(version[:8], "%Y%m%d").date().isoformat()
    except ValueError as exc:
        raise CatalogError(
            f"not a catalog version (YYYYMMDD-BUILD): {version[:40]!r}", where=where
        ) from exc


def _unzip(body: bytes, where: str) -> dict[str, str]:
    """The provider CSVs of gpuhunt's catalog.zip, by provider (the file's stem)."""
    try:
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            names = [n for n in archive.namelist() if n.endswith(".csv")]
            if sum(archive.getinfo(n).file_size for n in names) > 4 * MAX_PRICE_FILE_BYTES:
                raise CatalogError("the price catalog is too large unpacked", where=where)
            return {Path(n).stem.lower(): _text(archive.read(n), f"{where}:{n}") for n in names}
    except zipfile.BadZipFile as exc:
        raise CatalogError(f"not a zip archive: {exc}", where=where) from exc


def _cloud_of(url: str) -> str:
    """A SkyPilot catalog's cloud is its folder (``.../v8/aws/vms.csv``); a gpuhunt
    provider file's, its name (``runpod.csv``)."""
    parts = [p for p in url.split("/") if p]
    stem = parts[-1].rsplit(".", 1)[0].lower()
    return parts[-2].lower() if stem in ("vms", "instances") and len(parts) > 1 else stem


def _parse_all(
    files: Mapping[str, str],
    where: str,
    version: str | None,
    when: str,
    devices: Mapping[str, DeviceEntry],
) -> tuple[list[Instance], Counter[str]]:
    from hwadvisor.catalog.price_files import parse_price_text

    rows: list[Instance] = []
    skipped: Counter[str] = Counter()
    for cloud, text in sorted(files.items()):
        built = f"gpuhunt catalog {version}" if version else "price catalog"
        source = f"{built} ({cloud}), {where}, fetched by `hwadvisor prices update`"
        found, left = parse_price_text(
            text, f"{where}:{cloud}", devices, when=when, source=source, cloud=cloud
        )
        rows += found
        skipped.update(left)
    return rows, skipped


def _cheapest_each(rows: Iterable[Instance]) -> list[Instance]:
    """One row per (cloud, instance type): the cheapest region's on-demand price, and the
    lowest spot price among the regions (as ``sky show-gpus`` shows them)."""
    from dataclasses import replace

    best: dict[tuple[str, str], Instance] = {}
    spot: dict[tuple[str, str], float] = {}
    regions: Counter[tuple[str, str]] = Counter()
    for inst in rows:
        key = (inst.cloud, inst.instance_type)
        regions[key] += 1
        if inst.spot_price is not None:
            spot[key] = min(spot.get(key, inst.spot_price), inst.spot_price)
        have = best.get(key)
        if have is None or _price(inst) < _price(have):
            best[key] = inst
    out = []
    for key, inst in sorted(best.items()):
        note = f"the cheapest of {regions[key]} regions" if regions[key] > 1 else ""
        if inst.per_gpu and inst.accelerator_count > 1:
            note = "; ".join(filter(None, [note, "a marketplace: billed per GPU used"]))
        out.append(replace(inst, spot_price=spot.get(key), note=note))
    return out


def _price(inst: Instance) -> float:
    return inst.price if inst.price is not None else float("inf")


def own_csv(instances: Iterable[Instance]) -> str:
    """The instances in our own CSV format (the shipped file's columns)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=[*SKYPILOT_COLUMNS, *OWN_COLUMNS], lineterminator="\n")
    writer.writeheader()
    for inst in instances:
        row = inst.row()
        writer.writerow({k: "" if row.get(k) is None else row[k] for k in writer.fieldnames})
    return out.getvalue()
