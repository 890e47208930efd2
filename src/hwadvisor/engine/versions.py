"""Version strings (drivers, CUDA, compute capability, packages) parsed and compared.

Parsing is ``packaging.version`` (PEP 440), so ``12.10`` is newer than ``12.2`` and a
pre-release (``2.5.0rc1``) comes before its release. A local label (``2.5.1+cu121``)
is dropped before comparing, as PEP 440 does when matching a specifier: the build tag
says which CUDA it targets, not that it is newer. Strings that are not PEP 440 versions
but start with one (kernels: ``6.5.0-1018-aws``) compare by that leading number.

The torch CUDA wheel tags are catalog data (``catalog/data/cuda.yaml``, with its source
and date), read once when first needed. ``packaging`` and the catalog are imported here
only: ``check --json`` never loads the engine, so its start-up does not pay for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache
from importlib import resources

from packaging.version import InvalidVersion, Version

from hwadvisor.errors import CatalogError
from hwadvisor.io import load_yaml

_LEADING = re.compile(r"^\s*v?(\d+(?:\.\d+)*)")
_TAG = re.compile(r"^cu\d{3}$")


def parse_version(text: object) -> Version | None:
    """'12.2' -> Version('12.2'); '2.5.1+cu121' -> Version('2.5.1'); 'gfx90a' -> None."""
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, (int, float)):
        text = str(text)
    if not isinstance(text, str):
        return None
    try:
        version = Version(text.strip())
    except InvalidVersion:
        m = _LEADING.match(text)
        if m is None:
            return None
        version = Version(m.group(1))
    return Version(version.public) if version.local else version


def compare(a: Version, b: Version) -> int:
    """-1, 0 or 1 (``12`` equals ``12.0``)."""
    return (a > b) - (a < b)


def lowest_version(values: Iterable[object]) -> object | None:
    """The value (as given) of the lowest of ``values`` that parse as versions, or None."""
    parsed = [(p, i, v) for i, v in enumerate(values) if (p := parse_version(v)) is not None]
    return min(parsed, key=lambda pv: (pv[0], pv[1]))[2] if parsed else None


@lru_cache(maxsize=1)
def torch_cuda_tags() -> tuple[tuple[Version, str], ...]:
    """The torch CUDA wheel tags of the catalog, ``(cuda version, 'cuXYZ')``, oldest first."""
    where = "hwadvisor/catalog/data/cuda.yaml"
    data_dir = resources.files("hwadvisor.catalog").joinpath("data")
    text = data_dir.joinpath("cuda.yaml").read_text(encoding="utf-8")
    data = load_yaml(text)
    rows = data.get("wheel_tags") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not data.get("source") or not data.get("date"):
        raise CatalogError("expected source, date and a list under 'wheel_tags:'", where=where)
    out: list[tuple[Version, str]] = []
    for row in rows:
        cuda = parse_version(row.get("cuda")) if isinstance(row, dict) else None
        tag = row.get("tag") if isinstance(row, dict) else None
        if cuda is None or not isinstance(tag, str) or not _TAG.match(tag):
            raise CatalogError(f"wheel tag entry {row!r}: needs cuda and tag cuXYZ", where=where)
        out.append((cuda, tag))
    return tuple(sorted(out))


def newest_wheel_tag(cuda_driver: str) -> str | None:
    """The newest torch CUDA wheel tag a driver that runs CUDA ``cuda_driver`` can load."""
    have = parse_version(cuda_driver)
    if have is None:
        return None
    fits = [tag for version, tag in torch_cuda_tags() if version <= have]
    return fits[-1] if fits else None
