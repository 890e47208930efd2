"""Exact weight bytes from the files: safetensors headers and GGUF tensor tables.

A safetensors file starts with an 8-byte little-endian header length and a JSON header
naming each tensor's dtype, shape and byte range (the format's specification,
huggingface/safetensors README); only the header is read, never the data. A sharded
checkpoint's ``model.safetensors.index.json`` names the shards and states
``metadata.total_size``. GGUF files are read by their header's tensor table
(:mod:`hwadvisor.llm.gguf_header`; tensor types -> bytes). Every offset, shape and size is
bounded (:mod:`hwadvisor.llm.bounds`) and shard names must be plain file names. Element counts of packed formats (GPTQ/AWQ ``qweight`` holds 8
4-bit values per int32) are not parameter counts: bytes are exact, parameters come from
the config.
"""

from __future__ import annotations

import json
import struct
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm.bounds import MAX_DIMS, MAX_ITEMS, whole
from hwadvisor.llm.gguf_header import GgufHeader

#: A safetensors header larger than this is refused (the format caps it at 100 MB).
MAX_HEADER_BYTES = 100_000_000
INDEX_NAME = "model.safetensors.index.json"


@dataclass(frozen=True)
class WeightFiles:
    """What a checkpoint's files hold: bytes in all, and by data type."""

    total_bytes: int
    bytes_by_dtype: dict[str, int] = field(default_factory=dict)
    stored_elements: int | None = None  # elements as stored (packed ints count once)
    files: int = 1
    source: str = ""

    @property
    def bits_per_element(self) -> float | None:
        """Mean stored bits per stored element, when elements are known."""
        if not self.stored_elements:
            return None
        return self.total_bytes * 8 / self.stored_elements


def _header(path: Path) -> tuple[dict[str, Any], int]:
    """The JSON header of a safetensors file and the file's data size."""
    where = str(path)
    try:
        with path.open("rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise UsageError(
                    "not a safetensors file (shorter than its 8-byte header length)", where=where
                )
            (length,) = struct.unpack("<Q", head)
            if length > MAX_HEADER_BYTES:
                raise UsageError(
                    "not a safetensors file (header length is implausible)", where=where
                )
            text = fh.read(length)
            size = path.stat().st_size
    except OSError as exc:
        raise UsageError(f"cannot read weights: {exc.strerror or exc}", where=where) from exc
    if len(text) < length:
        raise UsageError("safetensors file is truncated (header cut short)", where=where)
    try:
        header = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise UsageError("not a safetensors file (header is not JSON)", where=where) from exc
    if not isinstance(header, dict):
        raise UsageError("not a safetensors file (header is not a JSON object)", where=where)
    return header, size - 8 - length


def header_summary(header: dict[str, Any], where: str) -> tuple[dict[str, int], int, int]:
    """Bytes by dtype, stored elements and the data's end, from a safetensors header;
    every entry bounded (offsets, dimensions) or one UsageError naming it."""
    if len(header) > MAX_ITEMS:
        raise UsageError(f"safetensors header has {len(header):,} entries", where=where)
    by_dtype: Counter[str] = Counter()
    elements, end = 0, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        label = f"tensor {str(name)[:60]}"
        try:
            start, stop = (
                whole(x, f"{label} data_offsets", where, "bytes", minimum=0)
                for x in info["data_offsets"]
            )
            shape = info["shape"]
            dtype = str(info["dtype"])[:16]
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                f"safetensors header entry '{str(name)[:60]}' is malformed", where=where
            ) from exc
        if not isinstance(shape, list) or len(shape) > MAX_DIMS or stop < start:
            raise UsageError(
                f"safetensors header entry '{str(name)[:60]}' is malformed", where=where
            )
        count = 1
        for dim in shape:
            count *= whole(dim, f"{label} shape", where, "dim", minimum=0)
        by_dtype[dtype] += stop - start
        elements += count
        end = max(end, stop)
    return dict(by_dtype), elements, end


def safetensors_file(path: Path) -> WeightFiles:
    """Bytes by dtype of one safetensors file, from its header; a cut-short file is refused."""
    header, data_size = _header(path)
    by_dtype, elements, end = header_summary(header, str(path))
    if end > data_size:
        raise UsageError(
            f"safetensors file is truncated ({data_size:,} data bytes of {end:,})", where=str(path)
        )
    return WeightFiles(sum(by_dtype.values()), by_dtype, elements, 1, str(path))


def shard_names(index: Any, where: str) -> list[str]:
    """The shard file names a safetensors index maps tensors to (plain names only)."""
    try:
        weight_map = index["weight_map"]
        names = sorted({str(v) for v in weight_map.values()})
    except (KeyError, TypeError, AttributeError) as exc:
        raise UsageError(f"not a safetensors index ({type(exc).__name__})", where=where) from exc
    if len(names) > 100_000:
        raise UsageError(f"safetensors index names {len(names):,} shards", where=where)
    for name in names:
        if "/" in name or "\\" in name or name.startswith(".") or not name.endswith(".safetensors"):
            raise UsageError(
                f"safetensors index names a shard outside its folder: {name[:60]!r}", where=where
            )
    return names


def index_total(index: Any, where: str) -> int | None:
    """The index's ``metadata.total_size``, bounded; None when absent."""
    meta = index.get("metadata") if isinstance(index, dict) else None
    total = meta.get("total_size") if isinstance(meta, dict) else None
    return None if total is None else whole(total, "metadata.total_size", where, "bytes")


def read_index(path: Path) -> dict[str, Any]:
    """The JSON object of a ``model.safetensors.index.json`` (at most 64 MiB)."""
    where = str(path)
    try:
        if path.stat().st_size > 64 * 1024 * 1024:
            raise UsageError("safetensors index is too large to be an index", where=where)
        index = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise UsageError(f"not a safetensors index ({type(exc).__name__})", where=where) from exc
    if not isinstance(index, dict):
        raise UsageError("not a safetensors index (not a JSON object)", where=where)
    return index


def safetensors_index(path: Path) -> WeightFiles:
    """A sharded checkpoint: each shard's header where present, else the index's total_size."""
    where = str(path)
    index = read_index(path)
    shards = shard_names(index, where)
    files = [path.parent / s for s in shards]
    if files and all(f.is_file() for f in files):
        parts = [safetensors_file(f) for f in files]
        by: Counter[str] = Counter()
        for p in parts:
            by.update(p.bytes_by_dtype)
        elements = sum(p.stored_elements or 0 for p in parts)
        return WeightFiles(sum(by.values()), dict(by), elements, len(parts), where)
    total = index_total(index, where)
    if not total:
        raise UsageError(
            "safetensors index has no metadata.total_size and its shards are absent", where=where
        )
    return WeightFiles(total, {}, None, len(shards), where)


def gguf_file(path: Path) -> WeightFiles:
    """Bytes by tensor type of a GGUF file, from its header's tensor table."""
    from hwadvisor.llm.gguf_meta import read_gguf

    return gguf_weights(read_gguf(path), str(path))


def gguf_weights(header: GgufHeader, source: str) -> WeightFiles:
    """Bytes by tensor type of a GGUF header's tensor table."""
    by_type: Counter[str] = Counter()
    elements = 0
    for tensor in header.tensors:
        by_type[tensor.type_name] += tensor.n_bytes
        elements += tensor.n_elements
    return WeightFiles(sum(by_type.values()), dict(by_type), elements, 1, source)


def weight_files(folder: Path) -> WeightFiles | None:
    """The weights in a model folder: the index, else model.safetensors, else the one .gguf."""
    index = folder / INDEX_NAME
    if index.is_file():
        return safetensors_index(index)
    single = folder / "model.safetensors"
    if single.is_file():
        return safetensors_file(single)
    others = sorted(folder.glob("*.safetensors"))
    if len(others) == 1:
        return safetensors_file(others[0])
    ggufs = sorted(folder.glob("*.gguf"))
    if len(ggufs) == 1:
        return gguf_file(ggufs[0])
    return None
