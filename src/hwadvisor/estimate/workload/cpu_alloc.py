"""The resident memory a sequence of tensor allocations costs under glibc's malloc.

PyTorch's CPU allocator hands every tensor to ``posix_memalign`` with 64-byte alignment
(``c10/core/impl/alloc_cpu.cpp``), so on Linux what a training step holds is what
glibc's malloc keeps resident, not the bytes of the live tensors. This replays an
allocation sequence (counted on fake tensors by :mod:`hwadvisor.estimate.workload.memtrack`)
through the main arena of glibc's malloc (``malloc/malloc.c``, glibc 2.26 and later,
64-bit), with its documented defaults (mallopt(3)):

- ``posix_memalign`` asks the arena for the request plus the alignment plus a minimum
  chunk (64 + 32 bytes, rounded as a request: a chunk 112 bytes larger), then frees the
  misaligned leader and the spare trailer as small chunks of their own
  (``_int_memalign``);
- a freed chunk of up to 1032 bytes goes to the per-thread cache (7 per size), else one
  of up to 128 bytes to a fast bin; both stay marked in use, so their neighbours cannot
  merge with them; fast bins are merged on a request of 1 KiB or more and when a chunk of
  64 KiB or more is freed (``malloc_consolidate``);
- other freed chunks merge with free neighbours, and into the top when they border it;
  the top is trimmed to ``M_TOP_PAD`` (128 KiB) once it exceeds ``M_TRIM_THRESHOLD``;
- a request goes to the best-fitting free chunk (split when the rest is a chunk), else
  the top; only where the top would have to grow does one of at least
  ``M_MMAP_THRESHOLD`` (128 KiB at start) become its own mapping (``sysmalloc``: a
  large request a free chunk or the top can hold is served from the heap), unmapped on
  free, and freeing a mapping larger than the threshold (up to 32 MiB)
  raises the threshold to its size and the trim threshold to twice that;
- a plain ``malloc`` of a small object is served from the per-thread cache (the chunk
  freed last of its size), then a fast bin of its size, then like any request: the
  best-fitting free chunk, split, else the top;
- resident memory is every heap page below the highest chunk written since the last
  trim, plus the live mappings (a tensor's storage is written by the operator that
  makes it);
- a page is faulted in when it is first written: a heap page above the highest chunk
  written since the last trim, every page of a new mapping (``replay``'s ``last``).

Each tensor's ``c10::StorageImpl`` is such a small object (``"s"`` events): PyTorch
makes it with ``new`` just before the storage's ``posix_memalign`` and deletes it just
after the data is freed, so where the heap has no small hole it takes the head of the
free chunk the data then lands behind, and once freed it sits in the per-thread cache
between freed data chunks, keeping them from merging. A kernel's own small blocks come
with its script (:mod:`hwadvisor.estimate.workload.cpu_kernels`); tensor and autograd metadata
are left out. What the heap holds when the job starts is unknown, and the resident peak
of one sequence moves with it: :func:`replay_starts` replays from each of
:data:`START_STATES`. One thread: every request is served by the main arena.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import dataclass

from hwadvisor.glibc import ALIGNMENT, MINSIZE, MMAP_THRESHOLD_MAX, PAGE
from hwadvisor.glibc import chunk_size as _chunk
from hwadvisor.glibc import page_up as _page_up

TCACHE_MAX = 1040
TCACHE_COUNT = 7
FAST_MAX = 128
CONSOLIDATE = 64 * 1024
MMAP_THRESHOLD = 128 * 1024
TRIM_THRESHOLD = 128 * 1024
TOP_PAD = 128 * 1024
#: ``sizeof(c10::StorageImpl)`` on x86-64 (torch 2.13): the ``malloc(96)`` an allocation
#: trace of real runs showed just before every tensor's ``posix_memalign``, freed just
#: after the data (``c10/core/StorageImpl.h``; ``at::detail::empty_generic`` makes the
#: StorageImpl, whose constructor allocates the data).
STORAGE_IMPL = 96
#: The per-thread cache of a process that has imported torch is full up to this size.
WARM_CACHED_MAX = 224

#: ("a", key, bytes) allocates a tensor's storage under ``key``; ("u", key, bytes) one
#: its maker writes only in part, ("w", key, bytes) saying how many of its bytes are
#: written by then (an LSTM layer's workspace: its forward writes a third of it, its
#: backward more); ("k", key, bytes) a kernel's own buffer (resident, not a live
#: tensor); ("s", key, bytes) a small C++ object by plain ``malloc`` (a storage's
#: ``StorageImpl``); ("f", key, 0) frees any.
Event = tuple[str, Hashable, int]


@dataclass
class Resident:
    """What a replay found: peak resident bytes, peak live bytes, resident at the end,
    and the bytes of the pages the events of the last step faulted in."""

    peak: int = 0
    live_peak: int = 0
    final: int = 0
    last_faulted: int = 0


class GlibcArena:
    """glibc's main arena, as far as its resident memory goes."""

    def __init__(self, *, pinned: bool = False, warm: bool = False, phase: int = 0) -> None:
        #: ``pinned``: every small fragment stays in use, as if other small objects took
        #: each one (the worst case of the cached fragments: no chunk merges across them).
        #: ``warm``: the per-thread cache starts full, as in a process that has imported
        #: torch (its ``tcache_perthread_struct`` read on this project's machine after
        #: the benchmark's warm-up: 7 chunks in every size up to 224 bytes, 0-7 above),
        #: so memalign's fragments go to the fast bins and merge, and a StorageImpl
        #: comes from the cache first.
        self.pinned = pinned
        self.mmap_threshold = MMAP_THRESHOLD
        self.trim_threshold = TRIM_THRESHOLD
        #: where the heap's free space starts, modulo the alignment: it sets how large
        #: every memalign's leader and trailer are (``phase`` bytes, a multiple of 16)
        self.top = phase
        self.brk = phase
        self.touched = 0
        self.mapped = 0
        #: bytes of the pages faulted in so far (heap pages first written since their
        #: trim, the pages of each mapping)
        self.faulted = 0
        self.live = 0
        self.by_size: list[tuple[int, int]] = []
        self.free_at: dict[int, int] = {}
        self.free_end: dict[int, int] = {}
        #: freed small chunks by size, last freed last (glibc hands that one out first)
        self.tcache: dict[int, list[int]] = {}
        self.fast: list[tuple[int, int]] = []
        self.blocks: dict[Hashable, tuple[bool, int, int, int]] = {}
        #: blocks of "u" storages: only their written bytes are live, and of a mapping
        #: only its written pages are resident (faulted in as they are written)
        self.partial: set[Hashable] = set()
        if warm:
            # the cached chunks lie in the heap below the job's (negative addresses:
            # resident already, and apart, so they merge with nothing)
            for k, size in enumerate(range(MINSIZE, WARM_CACHED_MAX + 1, 16)):
                self.tcache[size] = [-(k * TCACHE_COUNT + i + 1) * PAGE for i in range(7)]

    @property
    def resident(self) -> int:
        """Heap pages up to the highest chunk written, plus the live mappings."""
        return _page_up(self.touched) + self.mapped

    def _take(self, start: int, size: int) -> None:
        del self.by_size[bisect.bisect_left(self.by_size, (size, start))]
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
        cached = self.tcache.setdefault(size, []) if size <= TCACHE_MAX else None
        if cached is not None and (self.pinned or len(cached) < TCACHE_COUNT):
            # Cached chunks are never handed to a tensor (memalign asks the arena
            # directly); only a small object's malloc of their size takes them back.
            cached.append(start)
            return
        if size <= FAST_MAX:
            self.fast.append((start, size))
            return
        if self._merge(start, size) >= CONSOLIDATE:
            if self.fast:
                self._consolidate()
            self._trim()

    def _arena_malloc(self, nb: int) -> tuple[int, int]:
        """The chunk for a request of ``nb`` bytes: the best-fitting free chunk (split),
        else the top."""
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
        if start + size > self.touched:
            self.faulted += _page_up(start + size) - _page_up(self.touched)
            self.touched = start + size
        return start, size

    def _maps(self, nb: int) -> bool:
        """Whether a request of ``nb`` bytes becomes a mapping: glibc's ``sysmalloc`` maps
        one of the threshold or more only where no free chunk holds it and the top would
        have to grow (``_int_malloc`` tries the bins and the top first)."""
        if nb < self.mmap_threshold:
            return False
        if self.fast:
            self._consolidate()
        fits = bisect.bisect_left(self.by_size, (nb, -1)) < len(self.by_size)
        return not fits and self.brk - self.top < nb + MINSIZE

    def malloc(self, key: Hashable, n: int) -> None:
        """A small object's ``malloc(n)`` under ``key`` (never counted as live bytes)."""
        nb = _chunk(n)
        cached = self.tcache.get(nb)
        if cached:
            self.blocks[key] = (False, cached.pop(), nb, 0)
            return
        for i in range(len(self.fast) - 1, -1, -1):
            if self.fast[i][1] == nb:
                self.blocks[key] = (False, self.fast.pop(i)[0], nb, 0)
                return
        start, size = self._arena_malloc(nb)
        self.blocks[key] = (False, start, size, 0)

    def memalign(
        self, key: Hashable, n: int, *, tensor: bool = True, untouched: bool = False
    ) -> None:
        """``posix_memalign(64, n)`` under ``key`` (``tensor``: counted as live bytes;
        ``untouched``: none of it written yet, see :meth:`write`)."""
        nb = _chunk(n)
        n = n if tensor and not untouched else 0
        self.live += n
        if untouched:
            self.partial.add(key)
        # _int_memalign asks _int_malloc for nb + alignment + MINSIZE bytes, which it
        # rounds as any request: a chunk of nb + 112
        req = _chunk(nb + ALIGNMENT + MINSIZE)
        if self._maps(req):
            size = _page_up(req + 8)
            if not untouched:
                self.mapped += size
                self.faulted += size
            self.blocks[key] = (True, 0, size, n)
            return
        start, size = self._arena_malloc(req)
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

    def write(self, key: Hashable, n: int) -> None:
        """The first ``n`` bytes of the untouched storage under ``key`` are written by
        now: they are live, and those of a mapping are faulted in and resident."""
        mapped, start, size, was = self.blocks[key]
        n = min(max(n, was), size)
        self.live += n - was
        if mapped:
            grown = _page_up(n) - _page_up(was)
            self.mapped += grown
            self.faulted += grown
        self.blocks[key] = (mapped, start, size, n)

    def free(self, key: Hashable) -> None:
        """Free what was allocated under ``key``."""
        mapped, start, size, n = self.blocks.pop(key)
        partial = key in self.partial
        self.partial.discard(key)
        self.live -= n
        if mapped:
            self.mapped -= _page_up(n) if partial else size
            if self.mmap_threshold < size <= MMAP_THRESHOLD_MAX:
                self.mmap_threshold = size
                self.trim_threshold = 2 * size
            return
        self._free_chunk(start, size)


def _apply(arena: GlibcArena, op: str, key: Hashable, n: int) -> bool:
    """One event on ``arena``; whether it allocated or wrote (and so may have raised
    the resident or live bytes)."""
    if op == "f":
        if key in arena.blocks:
            arena.free(key)
        return False
    if op == "w":
        if key in arena.partial:  # freed blocks leave it
            arena.write(key, n)
            return True
        return False
    if key in arena.blocks:
        return False
    if op == "s":
        arena.malloc(key, n)
    else:
        arena.memalign(key, n, tensor=op in "au", untouched=op == "u")
    return True


def replay(
    events: Iterable[Event],
    *,
    pinned: bool = False,
    warm: bool = False,
    phase: int = 0,
    last: Callable[[Hashable], bool] | None = None,
) -> Resident:
    """Replay ``events`` from an empty arena: peak resident and live bytes, and the end.

    ``pinned`` replays the worst case of the small fragments, ``warm`` starts with the
    per-thread cache a process that has imported torch holds (see :class:`GlibcArena`).
    ``last`` tells the events of the sequence's last step by their key: the pages they
    fault in are counted (``last_faulted``).

    Each step allocates its activations again. Where the heap's free top grows past the
    trim threshold, glibc gives those pages back, and the next step faults them in
    again; a request of the mapping threshold or more that no free chunk holds is a
    fresh mapping, faulted in whole. The threshold climbs from 128 KiB to the largest
    mapping freed (up to 32 MiB) over the first steps, so the last of three is the one
    a long job repeats.
    """
    events = events if isinstance(events, Sequence) else list(events)
    return _replay(events, _flags(events, last), GlibcArena(pinned=pinned, warm=warm, phase=phase))


def _flags(events: Sequence[Event], last: Callable[[Hashable], bool] | None) -> list[bool] | None:
    """Which of ``events`` are the last step's (None: none is told apart)."""
    return None if last is None else [last(key) for _, key, _ in events]


def _replay(events: Sequence[Event], flags: Sequence[bool] | None, arena: GlibcArena) -> Resident:
    """:func:`replay` on ``arena``, ``flags`` telling the last step's events."""
    out = Resident()
    peak = live_peak = last_faulted = 0
    for i, (op, key, n) in enumerate(events):
        before = arena.faulted
        if _apply(arena, op, key, n):
            peak = max(peak, arena.resident)
            if arena.live > live_peak:
                live_peak = arena.live
        if flags is not None and flags[i]:
            last_faulted += arena.faulted - before
    out.peak, out.live_peak, out.last_faulted = peak, live_peak, last_faulted
    out.final = arena.resident
    return out


#: The start states a job's process may be in, which the sequence cannot tell: the
#: per-thread cache full of small chunks (a process that has just imported torch) or
#: drained (what building the model took from it), and the heap's free space starting
#: at any of the four 16-byte phases of the 64-byte alignment (which sets the size of
#: every memalign's leader and trailer, so which cached sizes they fill). Under glibc
#: the resident peak of one sequence moves by up to 2x between them, as it does
#: between fresh processes of the same job (benchmarks/memory_accuracy.py's spread).
START_STATES = tuple((warm, phase) for warm in (True, False) for phase in (0, 16, 32, 48))


def replay_starts(
    events: Sequence[Event], *, last: Callable[[Hashable], bool] | None = None
) -> list[Resident]:
    """``events`` replayed from each of :data:`START_STATES` (``last``: :func:`replay`'s)."""
    flags = _flags(events, last)
    return [
        _replay(events, flags, GlibcArena(warm=warm, phase=phase)) for warm, phase in START_STATES
    ]
