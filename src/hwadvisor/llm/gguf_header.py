"""A GGUF file's header (metadata and tensor table), read without its tensor data.

The layout is the GGUF specification's (ggml-org/ggml docs/gguf.md, versions 2 and 3):
the magic ``GGUF``, a uint32 version, uint64 tensor and key-value counts, the key-values
(a string key, a uint32 type, the value; arrays as an item type, a uint64 count and the
items), then per tensor its name, uint32 dimension count, uint64 dimensions, uint32 ggml
type and uint64 offset. Only this header is read, through ``read(offset, length)``: a
local file or HTTP range requests to the Hub, so a 100 GB GGUF costs a few MiB.

Every count is bounded (:mod:`hwadvisor.llm.bounds`) before it is used, and the header
may not exceed :data:`MAX_HEADER_BYTES`: a 1 KB file claiming 10^18 tensors, layers or
array items is refused in one line, never looped over.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hwadvisor.errors import UsageError
from hwadvisor.llm.bounds import MAX_BYTES, MAX_DIM, MAX_DIMS, MAX_ITEMS

#: The largest header read (real ones: a few MiB, most of it the tokenizer's vocabulary).
MAX_HEADER_BYTES = 64 * 1024 * 1024
#: Numeric arrays up to this many items are kept (per-layer values); longer ones counted.
KEEP_ITEMS = 10_000
#: Strings longer than this are skipped, not kept (a chat template is a few KiB).
KEEP_STRING = 65_536

#: Reads ``length`` bytes at ``offset`` (fewer at the end of the file).
Reader = Callable[[int, int], bytes]

_SCALARS = {
    0: "<B",
    1: "<b",
    2: "<H",
    3: "<h",
    4: "<I",
    5: "<i",
    6: "<f",
    7: "<?",
    10: "<Q",
    11: "<q",
    12: "<d",
}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class GgufTensor:
    """One tensor of the table: its name, dimensions, ggml type and bytes."""

    name: str
    dims: tuple[int, ...]
    type_id: int
    type_name: str
    n_elements: int
    n_bytes: int
    offset: int = 0


@dataclass(frozen=True)
class GgufHeader:
    """The metadata (arrays of strings as their item count) and the tensor table."""

    fields: dict[str, Any]
    array_lengths: dict[str, int]
    tensors: tuple[GgufTensor, ...] = field(default=())
    header_bytes: int = 0
    #: The file size the tensor table needs: the aligned data start + the furthest tensor.
    data_end: int = 0


class _Cursor:
    """Sequential reads over ``read`` in blocks, never past MAX_HEADER_BYTES."""

    def __init__(self, read: Reader, where: str, block: int = 1 << 20) -> None:
        self._read, self._where, self._block = read, where, block
        self._buf = b""
        self._start = 0  # file offset of _buf[0]
        self.pos = 0

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > MAX_HEADER_BYTES:
            raise UsageError(
                f"GGUF header is larger than {MAX_HEADER_BYTES >> 20} MiB (a field claims {n:,} bytes)",
                where=self._where,
            )
        end = self.pos + n
        if end > self._start + len(self._buf):
            keep = self._buf[self.pos - self._start :]
            want = max(self._block, end - self.pos - len(keep))
            more = self._read(self._start + len(self._buf), want)
            self._block = min(self._block * 2, 16 << 20)  # fewer range requests as it grows
            self._buf, self._start = keep + more, self.pos
            if end > self._start + len(self._buf):
                raise UsageError(
                    "GGUF file is truncated (its header is cut short)", where=self._where
                )
        out = self._buf[self.pos - self._start : end - self._start]
        self.pos = end
        return out

    def skip_strings(self, n: int) -> None:
        """Step over ``n`` length-prefixed strings (a vocabulary) without building them."""
        unpack_from = struct.unpack_from
        left = n
        while left:
            self.take(0)
            buf, base = self._buf, self.pos - self._start
            i, end = base, len(buf)
            while left and i + 8 <= end:
                (length,) = unpack_from("<Q", buf, i)
                if i + 8 + length > end:
                    break
                i += 8 + length
                left -= 1
            if i == base:  # the next string crosses the buffer's end: read it whole
                self.take(self.count("string length", MAX_HEADER_BYTES))
                left -= 1
            else:
                self.pos += i - base

    def unpack(self, fmt: str) -> Any:
        return struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]

    def string(self) -> str | None:
        n = self.count("string length", MAX_HEADER_BYTES)
        raw = self.take(n)
        if n > KEEP_STRING:
            return None
        return raw.decode("utf-8", errors="replace")

    def count(self, what: str, limit: int) -> int:
        n = int(self.unpack("<Q"))
        if n > limit:
            raise UsageError(
                f"GGUF {what} is out of range: {n:,} (allowed up to {limit:,})", where=self._where
            )
        return n


def _value(cur: _Cursor, kind: int, key: str) -> tuple[Any, int | None]:
    """One value, and an array's item count (None for a scalar)."""
    if kind in _SCALARS:
        return cur.unpack(_SCALARS[kind]), None
    if kind == _STRING:
        return cur.string(), None
    if kind != _ARRAY:
        raise UsageError(f"GGUF metadata {key} has an unknown type {kind}", where=cur._where)
    item = int(cur.unpack("<I"))
    n = cur.count(f"array {key}", MAX_ITEMS * 10)
    if item in _SCALARS:
        size = struct.calcsize(_SCALARS[item])
        raw = cur.take(n * size)
        if n <= KEEP_ITEMS:
            return [v[0] for v in struct.iter_unpack(_SCALARS[item], raw)], n
        return None, n
    if item == _STRING:
        cur.skip_strings(n)  # each item is >= 8 bytes, so MAX_HEADER_BYTES bounds this
        return None, n
    raise UsageError(
        f"GGUF metadata {key} is an array of type {item}, not supported", where=cur._where
    )


def _sizes() -> dict[int, tuple[str, int, int]]:
    """ggml type id -> (name, block size, bytes per block), from the ``gguf`` package."""
    from hwadvisor.llm._data import optional_module

    gguf = optional_module("gguf")
    return {
        int(t): (t.name, int(block), int(size))
        for t, (block, size) in gguf.constants.GGML_QUANT_SIZES.items()
    }


def _tensor(cur: _Cursor, sizes: dict[int, tuple[str, int, int]]) -> GgufTensor:
    name = cur.string() or "?"
    n_dims = int(cur.unpack("<I"))
    if not 1 <= n_dims <= MAX_DIMS:
        raise UsageError(f"GGUF tensor {name[:60]} has {n_dims} dimensions", where=cur._where)
    dims = tuple(cur.count(f"tensor {name[:60]} dimension", MAX_DIM) for _ in range(n_dims))
    type_id = int(cur.unpack("<I"))
    offset = cur.count(f"tensor {name[:60]} offset", MAX_BYTES)
    if type_id not in sizes:
        raise UsageError(f"GGUF tensor {name[:60]} has unknown type {type_id}", where=cur._where)
    type_name, block, size = sizes[type_id]
    elements = 1
    for d in dims:
        elements *= d
    n_bytes = -(-elements // block) * size
    if n_bytes > MAX_BYTES:
        raise UsageError(
            f"GGUF tensor {name[:60]} is out of range ({n_bytes:.3g} bytes)", where=cur._where
        )
    return GgufTensor(name, dims, type_id, type_name, elements, n_bytes, offset)


def read_header(read: Reader, where: str) -> GgufHeader:
    """The header of the GGUF that ``read`` reads; anything malformed is one UsageError."""
    cur = _Cursor(read, where)
    try:
        if cur.take(4) != b"GGUF":
            raise UsageError("not a GGUF file (no GGUF magic)", where=where)
        version = int(cur.unpack("<I"))
        if version not in (2, 3):
            raise UsageError(f"GGUF version {version} is not supported (2 or 3)", where=where)
        n_tensors = cur.count("tensor count", MAX_ITEMS)
        n_kv = cur.count("metadata count", MAX_ITEMS)
        fields: dict[str, Any] = {}
        lengths: dict[str, int] = {}
        for _ in range(n_kv):
            key = cur.string() or "?"
            value, length = _value(cur, int(cur.unpack("<I")), key)
            fields[key] = value
            if length is not None:
                lengths[key] = length
        sizes = _sizes() if n_tensors else {}
        tensors = tuple(_tensor(cur, sizes) for _ in range(n_tensors))
    except struct.error as exc:
        raise UsageError("GGUF file is truncated or corrupt", where=where) from exc
    total = sum(t.n_bytes for t in tensors)
    if total > MAX_BYTES:
        raise UsageError(f"GGUF tensors are out of range ({total:.3g} bytes)", where=where)
    align = fields.get("general.alignment")
    align = align if isinstance(align, int) and 0 < align <= 1 << 20 else 32
    start = -(-cur.pos // align) * align
    end = start + max((t.offset + t.n_bytes for t in tensors), default=-start)
    return GgufHeader(fields, lengths, tensors, cur.pos, end)


def file_reader(path: Any) -> Reader:
    """A reader over a local file (opened per read, so nothing stays open)."""

    def read(offset: int, length: int) -> bytes:
        with open(path, "rb") as fh:
            fh.seek(offset)
            return fh.read(length)

    return read
