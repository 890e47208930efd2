"""glibc malloc's sizes and thresholds (``malloc/malloc.c``, 64-bit; mallopt(3)).

PyTorch's CPU allocator hands every tensor to ``posix_memalign`` with 64-byte alignment
(``c10/core/impl/alloc_cpu.cpp``). What the resident memory of a sequence of such
requests is, :mod:`hwadvisor.estimate.workload.cpu_alloc` replays; which tensors a step maps
fresh at every call (and so faults in page by page), :func:`always_mapped` says, for
the estimate and the bench alike.
"""

from __future__ import annotations

PAGE = 4096
MINSIZE = 32
ALIGNMENT = 64
#: The ceiling of the dynamic mmap threshold: 4 MiB x sizeof(long) (DEFAULT_MMAP_THRESHOLD_MAX).
MMAP_THRESHOLD_MAX = 32 * 1024 * 1024


def chunk_size(n: int) -> int:
    """glibc's request2size: the bytes plus an 8-byte header, rounded up to 16."""
    return max(MINSIZE, (n + 8 + 15) & ~15)


def page_up(n: int) -> int:
    """``n`` rounded up to whole pages."""
    return (n + PAGE - 1) & ~(PAGE - 1)


def always_mapped(n: int) -> bool:
    """Whether ``posix_memalign(64, n)`` is a fresh mapping at every call, whatever came
    before: its mapping would be larger than the dynamic threshold's ceiling
    (:data:`MMAP_THRESHOLD_MAX`), so freeing it never raises the threshold past it, and
    an arena that trims its top at twice the threshold rarely holds it. Each call then
    faults in every page of it on first touch.

    ``_int_memalign`` asks for the chunk plus the alignment plus a minimum chunk, and a
    mapping is that request plus its 8-byte header, in whole pages (``sysmalloc``).
    """
    request = chunk_size(chunk_size(n) + ALIGNMENT + MINSIZE)
    return page_up(request + 8) > MMAP_THRESHOLD_MAX
