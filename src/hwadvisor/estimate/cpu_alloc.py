"""The resident memory a sequence of tensor allocations costs under glibc's malloc.

PyTorch's CPU allocator hands every tensor to ``posix_memalign`` with 64-byte alignment
(``c10/core/impl/alloc_cpu.cpp``), so on Linux what a training step holds is what
glibc's malloc keeps resident, not the bytes of the live tensors. This replays an
allocation sequence (counted on fake tensors by :mod:`hwadvisor.estimate.memtrack`)
through the main arena of glibc's malloc (``malloc/malloc.c``, glibc 2.26 and later,
64-bit), with its documented defaults (mallopt(3)):

- ``posix_memalign`` asks the arena for the request plus the alignment plus a minimum
  chunk (64 + 32 bytes), then frees the misaligned leader and the spare trailer as small
  chunks of their own (``_int_memalign``);
- a freed chunk of up to 1032 bytes goes to the per-thread cache (7 per size), else one
  of up to 128 bytes to a fast bin; both stay marked in use, so their neighbours cannot
  merge with them; fast bins are merged on a request of 1 KiB or more and when a chunk of
  64 KiB or more is freed (``malloc_consolidate``);
- other freed chunks merge with free neighbours, and into the top when they border it;
  the top is trimmed to ``M_TOP_PAD`` (128 KiB) once it exceeds ``M_TRIM_THRESHOLD``;
- a request goes to the best-fitting free chunk (split when the rest is a chunk), else
  the top; one of at least ``M_MMAP_THRESHOLD`` (128 KiB at start) is its own mapping,
  unmapped on free, and freeing a mapping larger than the threshold (up to 32 MiB)
  raises the threshold to its size and the trim threshold to twice that;
- resident memory is every heap page below the highest chunk written since the last
  trim, plus the live mappings (a tensor's storage is written by the operator that
  makes it).

What the sequence cannot show is left out: kernel-internal scratch buffers that never
reach the dispatcher, and the small C++ objects (tensor and autograd metadata) that land
in the cached chunks. One thread: every request is served by the main arena.
"""

from __future__ import annotations

import bisect
from collections.abc import Hashable, Iterable
from dataclasses import dataclass

PAGE = 4096
MINSIZE = 32
ALIGNMENT = 64
TCACHE_MAX = 1040
TCACHE_COUNT = 7
FAST_MAX = 128
CONSOLIDATE = 64 * 1024
MMAP_THRESHOLD = 128 * 1024
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024
TRIM_THRESHOLD = 128 * 1024
TOP_PAD = 128 * 1024

#: ("a", key, bytes) allocates a tensor's storage under ``key``; ("k", key, bytes) a
#: kernel's own buffer (resident, not a live tensor); ("f", key, 0) frees either.
Event = tuple[str, Hashable, int]


def _chunk(n: int) -> int:
    """glibc's request2size: the bytes plus an 8-byte header, rounded up to 16."""
    return max(MINSIZE, (n + 8 + 15) & ~15)


def _page_up(n: int) -> int:
    return (n + PAGE - 1) & ~(PAGE - 1)


@dataclass
class Resident:
    """What a replay found: peak resident bytes, peak live bytes, resident at the end."""

    peak: int = 0
    live_peak: int = 0
    final: int = 0


class GlibcArena:
    """glibc's main arena, as far as its resident memory goes."""

    def __init__(self, *, pinned: bool = False) -> None:
        #: ``pinned``: every small fragment stays in use, as if other small objects took
        #: each one (the worst case of the cached fragments: no chunk merges across them).
        self.pinned = pinned
        self.mmap_threshold = MMAP_THRESHOLD
        self.trim_threshold = TRIM_THRESHOLD
        self.top = 0
        self.brk = 0
        self.touched = 0
        self.mapped = 0
        self.live = 0
        self.by_size: list[tuple[int, int]] = []
        self.free_at: dict[int, int] = {}
        self.free_end: dict[int, int] = {}
        self.tcache: dict[int, int] = {}
        self.fast: list[tuple[int, int]] = []
        self.blocks: dict[Hashable, tuple[bool, int, int, int]] = {}

    @property
    def resident(self) -> int:
        """Heap pages up to the highest chunk written, plus the live mappings."""
        return _page_up(self.touched) + self.mapped

    def _take(self, start: int, size: int) -> None:
        self.by_size.remove((size, start))
        del self.free_at[start]
        del self.free_end[start + size]

    def _bin(self, start: int, size: int) -> None:
        bisect.insort(self.by_size, (size, start))
        self.free_at[start] = size
        self.free_end[start + size] = start

    def _merge(self, start: int, size: int) -> int:
        """Merge a freed chunk with its free neighbours (or into the top); its new size."""
        if start in self.free_end:
            before = self.free_end[start]
            bsize = self.free_at[before]
            self._take(before, bsize)
            start, size = before, size + bsize
        if start + size in self.free_at:
            asize = self.free_at[start + size]
            self._take(start + size, asize)
            size += asize
        if start + size == self.top:
            self.top = start
            return self.brk - self.top
        self._bin(start, size)
        return size

    def _consolidate(self) -> None:
        fast, self.fast = self.fast, []
        for start, size in fast:
            self._merge(start, size)

    def _trim(self) -> None:
        top_size = self.brk - self.top
        if top_size >= self.trim_threshold:
            extra = ((top_size - TOP_PAD - MINSIZE - 1) // PAGE) * PAGE
            if extra > 0:
                self.brk -= extra
                self.touched = min(self.touched, self.brk)

    def _free_chunk(self, start: int, size: int) -> None:
        if size <= TCACHE_MAX and (self.pinned or self.tcache.get(size, 0) < TCACHE_COUNT):
            # Cached chunks are never handed to a tensor (the arena is asked directly),
            # and other small objects are not in the sequence: they stay put.
            self.tcache[size] = self.tcache.get(size, 0) + 1
            return
        if size <= FAST_MAX:
            self.fast.append((start, size))
            return
        if self._merge(start, size) >= CONSOLIDATE:
            if self.fast:
                self._consolidate()
            self._trim()

    def _arena_malloc(self, nb: int) -> tuple[int, int]:
        if nb >= 1024 and self.fast:
            self._consolidate()
        i = bisect.bisect_left(self.by_size, (nb, -1))
        if i < len(self.by_size):
            size, start = self.by_size[i]
            self._take(start, size)
            if size - nb >= MINSIZE:
                self._bin(start + nb, size - nb)
                size = nb
        else:
            start, size = self.top, nb
            self.top += nb
            if self.top > self.brk:
                self.brk = _page_up(self.top + TOP_PAD)
        self.touched = max(self.touched, start + size)
        return start, size

    def memalign(self, key: Hashable, n: int, *, tensor: bool = True) -> None:
        """``posix_memalign(64, n)`` under ``key`` (``tensor``: counted as live bytes)."""
        nb = _chunk(n)
        n = n if tensor else 0
        self.live += n
        if nb + ALIGNMENT + MINSIZE >= self.mmap_threshold:
            size = _page_up(nb + ALIGNMENT + MINSIZE + 8)
            self.mapped += size
            self.blocks[key] = (True, 0, size, n)
            return
        start, size = self._arena_malloc(nb + ALIGNMENT + MINSIZE)
        mem = start + 16
        if mem % ALIGNMENT:
            aligned = ((mem + ALIGNMENT - 1) & -ALIGNMENT) - 16
            if aligned - start < MINSIZE:
                aligned += ALIGNMENT
            self._free_chunk(start, aligned - start)
            start, size = aligned, size - (aligned - start)
        if size > nb + MINSIZE:
            self._free_chunk(start + nb, size - nb)
            size = nb
        self.blocks[key] = (False, start, size, n)

    def free(self, key: Hashable) -> None:
        """Free what was allocated under ``key``."""
        mapped, start, size, n = self.blocks.pop(key)
        self.live -= n
        if mapped:
            self.mapped -= size
            if self.mmap_threshold < size <= MMAP_THRESHOLD_MAX:
                self.mmap_threshold = size
                self.trim_threshold = 2 * size
            return
        self._free_chunk(start, size)


def replay(events: Iterable[Event], *, pinned: bool = False) -> Resident:
    """Replay ``events`` from an empty arena: peak resident and live bytes, and the end.

    ``pinned`` replays the worst case of the small fragments (see :class:`GlibcArena`).
    """
    arena = GlibcArena(pinned=pinned)
    out = Resident()
    for op, key, n in events:
        if op == "f":
            if key in arena.blocks:
                arena.free(key)
            continue
        if key in arena.blocks:
            continue
        arena.memalign(key, n, tensor=op == "a")
        out.peak = max(out.peak, arena.resident)
        out.live_peak = max(out.live_peak, arena.live)
    out.final = arena.resident
    return out
