"""The glibc malloc replay: mappings, the dynamic threshold, memalign, holes and trimming."""

from __future__ import annotations

from collections.abc import Callable

from hwadvisor.estimate.workload.cpu_alloc import (
    MMAP_THRESHOLD,
    START_STATES,
    STORAGE_IMPL,
    GlibcArena,
    replay,
    replay_starts,
)
from hwadvisor.glibc import MMAP_THRESHOLD_MAX, PAGE

MiB = 1 << 20


def test_large_requests_are_mappings_returned_on_free() -> None:
    r = replay([("a", 1, 4 * MiB), ("f", 1, 0), ("a", 2, 64 * MiB), ("f", 2, 0)])
    assert r.final == 0
    assert 64 * MiB <= r.peak <= 64 * MiB + PAGE


def test_freeing_a_mapping_raises_the_threshold() -> None:
    arena = GlibcArena()
    arena.memalign(1, 4 * MiB)
    arena.free(1)
    assert arena.mmap_threshold > 4 * MiB and arena.trim_threshold == 2 * arena.mmap_threshold
    arena.memalign(2, 2 * MiB)  # now below the threshold: from the heap
    assert arena.mapped == 0 and arena.resident >= 2 * MiB
    arena.memalign(3, 64 * MiB)
    arena.free(3)
    assert arena.mmap_threshold <= MMAP_THRESHOLD_MAX


def test_a_partly_written_mapping_holds_and_faults_only_its_written_pages() -> None:
    # an LSTM layer's 64 MB workspace: its forward writes a third, its backward more
    arena = GlibcArena()
    arena.memalign("ws", 64 * MiB, untouched=True)
    assert arena.mapped == 0 and arena.faulted == 0 and arena.live == 0
    arena.write("ws", 21 * MiB)
    assert arena.mapped == arena.faulted == arena.live == 21 * MiB
    arena.write("ws", 38 * MiB)
    assert arena.mapped == arena.faulted == arena.live == 38 * MiB
    arena.write("ws", 10 * MiB)  # pages once written stay written
    assert arena.mapped == 38 * MiB
    arena.free("ws")
    assert arena.mapped == 0 and arena.live == 0 and not arena.partial
    # the events say the same, and only the writes of the last step count as its faults
    events = [("u", 1, 64 * MiB), ("w", 1, 21 * MiB), ("w", 1, 38 * MiB), ("f", 1, 0)]
    r = replay(events, last=lambda key: True)
    assert r.peak == r.live_peak == 38 * MiB and r.last_faulted == 38 * MiB and r.final == 0
    # a plain storage of that size is written (and faulted) whole
    assert replay([("a", 1, 64 * MiB)], last=lambda key: True).last_faulted > 64 * MiB


def test_a_hole_below_a_live_chunk_stays_resident() -> None:
    small = MMAP_THRESHOLD // 4
    events = [("a", 1, small), ("a", 2, small), ("f", 1, 0)]
    r = replay(events)
    assert r.final >= 2 * small  # the freed first chunk is below the live second one


def test_the_same_size_again_does_not_fit_its_own_hole() -> None:
    # posix_memalign asks for 64 + 32 bytes more than the request, so a hole left by a
    # request of the same size is too small once its fragments are cached.
    size = 40_000
    events = [("a", 1, size), ("a", 2, 100), ("f", 1, 0), ("a", 3, size)]
    arena = GlibcArena()
    for op, key, n in events:
        if op == "a":
            arena.memalign(key, n)
        else:
            arena.free(key)
    assert arena.top > 2 * size


def test_freeing_the_top_trims_the_heap() -> None:
    # With the per-thread cache full (as in a process that has imported torch),
    # memalign's fragments go to the fast bins, which a large free merges back: the
    # chunks then merge into the top and the heap shrinks.
    arena = GlibcArena(warm=True)
    for i in range(10):
        arena.memalign(i, 60_000)
    peak = arena.resident
    for i in reversed(range(10)):
        arena.free(i)
    assert peak >= 600_000 and arena.resident < 200_000


def test_cached_fragments_pin_the_heap() -> None:
    # The first fragments of each size stay in the per-thread cache, marked in use: the
    # chunk below them cannot merge into the top.
    r = replay([("a", i, 60_000) for i in range(10)] + [("f", i, 0) for i in reversed(range(10))])
    assert r.final == r.peak


def test_live_peak_is_the_largest_sum_of_live_bytes() -> None:
    r = replay([("a", 1, 100), ("a", 2, 200), ("f", 1, 0), ("a", 3, 50)])
    assert r.live_peak == 300


def test_a_large_request_a_free_chunk_holds_is_not_a_mapping() -> None:
    # glibc maps a request of the threshold or more only where no free chunk holds it
    # and the top would have to grow (sysmalloc); otherwise it is served from the heap.
    arena = GlibcArena(warm=True)
    for i in range(40):
        arena.memalign(i, 60_000)
    arena.memalign("end", 100)
    for i in range(40):
        arena.free(i)
    arena.memalign("big", 1 << 20)  # above the 128 KiB threshold, inside the 2.4 MB hole
    assert arena.mapped == 0
    arena.memalign("bigger", 8 << 20)  # no hole holds it: a mapping
    assert arena.mapped >= 8 << 20


def test_a_small_object_takes_the_chunk_freed_last_of_its_size() -> None:
    arena = GlibcArena()
    arena.malloc("s1", STORAGE_IMPL)
    arena.malloc("s2", STORAGE_IMPL)
    first = arena.blocks["s1"][1]
    arena.free("s1")  # to the per-thread cache, still marked in use
    arena.malloc("s3", STORAGE_IMPL)
    assert arena.blocks["s3"][1] == first
    assert arena.live == 0  # small objects are not live tensor bytes


def test_storage_impls_between_tensors_keep_freed_chunks_apart() -> None:
    # Each tensor's StorageImpl is made just before its data and freed just after. Once
    # the per-thread cache has none left (more tensors live than it held), they come
    # from the heap, between the data chunks; freed, they go back to the cache, still
    # in use, and keep two freed neighbours from merging: a tensor of twice the size
    # then needs fresh memory.
    size = 50_000
    plain = [("a", i, size) for i in range(12)]
    plain += [("f", 10, 0), ("f", 11, 0), ("a", 99, 2 * size)]
    with_impls: list[tuple[str, object, int]] = []
    for op, key, n in plain:
        if op == "a":
            with_impls += [("s", ("s", key), STORAGE_IMPL), (op, key, n)]
        else:
            with_impls += [(op, key, n), ("f", ("s", key), 0)]
    assert replay(with_impls, warm=True).peak > replay(plain, warm=True).peak


def test_memalign_takes_a_chunk_112_bytes_larger_than_its_request() -> None:
    # _int_memalign asks _int_malloc for nb + 64 + 32 bytes, rounded as any request
    arena = GlibcArena()
    arena.memalign(1, 1000)
    assert arena.top == _request2size(1000) + 112


def _request2size(n: int) -> int:
    """glibc's request2size."""
    return max(32, (n + 8 + 15) & ~15)


def test_the_start_states_move_the_resident_peak() -> None:
    # the alignment phase of the heap's free space sets every leader's and trailer's
    # size, the per-thread cache whether they merge: one sequence, several peaks
    events: list[tuple[str, object, int]] = []
    for i in range(30):
        events += [("s", ("s", i), STORAGE_IMPL), ("a", i, 40_000 + 16 * (i % 5))]
        if i >= 3:
            events += [("f", i - 3, 0), ("f", ("s", i - 3), 0)]
    peaks = {r.peak for r in replay_starts(events)}
    assert len(replay_starts(events)) == len(START_STATES) == 8
    assert len(peaks) > 1


def _steps(step: list[tuple[str, object, int]], prefix: list[tuple[str, object, int]] = []) -> list:  # noqa: B006
    """``prefix`` then ``step`` three times, keyed as memtrack repeats a phase."""
    return [*prefix, *step, *[(op, (k, key), n) for k in (2, 3) for op, key, n in step]]


def _third(key: object) -> bool:
    return isinstance(key, tuple) and key[0] == 3


def step_faults(events: list, last: Callable[[object], bool]) -> list[int]:
    """Bytes the events ``last`` picks fault in, from each start state."""
    return [r.last_faulted for r in replay_starts(events, last=last)]


def test_a_tensor_past_32_mib_faults_in_whole_at_every_step() -> None:
    big = 40 * MiB
    faults = step_faults(_steps([("a", "x", big), ("f", "x", 0)]), _third)
    assert len(faults) == len(START_STATES)
    assert all(big <= f <= big + 2 * PAGE for f in faults)


def test_a_heap_trimmed_at_every_step_faults_in_again() -> None:
    # Eight 1 MiB activations a step, all freed: once the threshold has climbed to 1 MiB
    # they come from the heap, whose 8 MiB top passes the 2 MiB trim threshold when
    # freed, so glibc gives it back and the next step faults it in again.
    step = [("a", i, MiB) for i in range(8)] + [("f", i, 0) for i in range(8)]
    faults = step_faults(_steps(step), _third)
    assert all(7 * MiB <= f <= 9 * MiB for f in faults)


def test_a_heap_that_keeps_its_top_faults_nothing_again() -> None:
    # A tensor kept above the activations holds the freed space off the top: nothing is
    # trimmed, and from a warm per-thread cache (memalign's fragments merge) every step
    # takes the same chunks back. From a cold one the fragments sit cached between the
    # holes, no request fits its own hole again, and the heap grows at every step.
    acts = [("a", i, MiB) for i in range(8)]
    frees = [("f", i, 0) for i in range(8)]
    keep = [("a", "w0", 4 * MiB), ("f", "w0", 0), *acts, ("a", "kept", MiB), *frees]
    events = _steps([*acts, *frees], keep)
    faults = step_faults(events, _third)
    warm = [f for f, (is_warm, _) in zip(faults, START_STATES, strict=True) if is_warm]
    cold = [f for f, (is_warm, _) in zip(faults, START_STATES, strict=True) if not is_warm]
    assert warm == [0] * 4 and all(f >= 7 * MiB for f in cold)
    # The first time the same activations came, the heap grew by all of them.
    first = step_faults(events, lambda key: not isinstance(key, tuple))
    assert all(f >= 9 * MiB for f in first)
