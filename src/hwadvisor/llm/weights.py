"""Exact weight bytes from the files: safetensors headers and GGUF tensor tables.

A safetensors file starts with an 8-byte little-endian header length and a JSON header
naming each tensor's dtype, shape and byte range (the format's specification,
huggingface/safetensors README); only the header is read, never the data. A sharded
checkpoint's ``model.safetensors.index.json`` names the shards and states
``metadata.total_size``. GGUF files are read with the ``gguf`` package's ``GGUFReader``
(tensor types -> bytes). Element counts of packed formats (GPTQ/AWQ ``qweight`` holds 8
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
from hwadvisor.llm._data import optional_module

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


def safetensors_file(path: Path) -> WeightFiles:
    """Bytes by dtype of one safetensors file, from its header; a cut-short file is refused."""
    header, data_size = _header(path)
    by_dtype: Counter[str] = Counter()
    elements, end = 0, 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, stop = (int(x) for x in info["data_offsets"])
            count = 1
            for dim in info["shape"]:
                count *= int(dim)
            dtype = str(info["dtype"])
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                f"safetensors header entry '{name}' is malformed", where=str(path)
            ) from exc
        by_dtype[dtype] += stop - start
        elements += count
        end = max(end, stop)
    if end > data_size:
        raise UsageError(
            f"safetensors file is truncated ({data_size:,} data bytes of {end:,})", where=str(path)
        )
    return WeightFiles(sum(by_dtype.values()), dict(by_dtype), elements, 1, str(path))


def safetensors_index(path: Path) -> WeightFiles:
    """A sharded checkpoint: each shard's header where present, else the index's total_size."""
    try:
        index = json.loads(path.read_text(encoding="utf-8"))
        shards = sorted(set(index["weight_map"].values()))
    except (
        OSError,
        UnicodeDecodeError,
        json.JSONDecodeError,
        KeyError,
        TypeError,
        AttributeError,
    ) as exc:
        raise UsageError(
            f"not a safetensors index ({type(exc).__name__})", where=str(path)
        ) from exc
    files = [path.parent / s for s in shards]
    if files and all(f.is_file() for f in files):
        parts = [safetensors_file(f) for f in files]
        by: Counter[str] = Counter()
        for p in parts:
            by.update(p.bytes_by_dtype)
        elements = sum(p.stored_elements or 0 for p in parts)
        return WeightFiles(sum(by.values()), dict(by), elements, len(parts), str(path))
    total = (index.get("metadata") or {}).get("total_size")
    if not isinstance(total, int) or total <= 0:
        raise UsageError(
            "safetensors index has no metadata.total_size and its shards are absent",
            where=str(path),
        )
    return WeightFiles(total, {}, None, len(shards), str(path))


def gguf_file(path: Path) -> WeightFiles:
    """Bytes by tensor type of a GGUF file (``gguf.GGUFReader``); truncated -> UsageError."""
    reader = open_gguf(path)
    by_type: Counter[str] = Counter()
    elements = 0
    for tensor in reader.tensors:
        by_type[str(tensor.tensor_type.name)] += int(tensor.n_bytes)
        elements += int(tensor.n_elements)
    return WeightFiles(sum(by_type.values()), dict(by_type), elements, 1, str(path))


def open_gguf(path: Path) -> Any:
    """A ``gguf.GGUFReader`` over ``path``; any failure to parse is one UsageError line."""
    gguf = optional_module("gguf")
    try:
        return gguf.GGUFReader(str(path))
    except FileNotFoundError as exc:
        raise UsageError("GGUF file not found", where=str(path)) from exc
    except Exception as exc:  # the reader raises ValueError, struct.error, IndexError...
        reason = str(exc).strip().splitlines()[0][:120] if str(exc).strip() else type(exc).__name__
        raise UsageError(
            f"not a readable GGUF file (truncated or corrupt: {reason})", where=str(path)
        ) from exc


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
