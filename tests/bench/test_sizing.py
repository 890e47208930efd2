"""The size/budget/OOM logic of the microbenchmark, driven by fakes: no torch, no timing."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hwadvisor.bench.sizing import (
    MIN_RUNS,
    REPEAT_CAP_S,
    REPEAT_FLOOR_S,
    OutOfMemory,
    Shape,
    TimeBudget,
    Timing,
    Unsupported,
    adapt,
    assess,
    classify,
    floor_index,
    predicted_cost,
    repeats_cost,
)

LADDER: tuple[Shape, ...] = tuple((n,) for n in (64, 128, 256, 512, 1024, 2048, 4096))


def work(shape: Shape) -> float:
    return float(shape[0]) ** 3


@dataclass
class FakeClock:
    """A clock that only moves when the fake device 'runs'."""

    now: float = 0.0

    def __call__(self) -> float:
        return self.now


@dataclass
class FakeDevice:
    """A device whose throughput rises with size up to ``peak_at``, then falls a little.

    It charges the fake clock what the real Timer would spend, raises OutOfMemory from
    ``oom_from`` up, and records every call.
    """

    clock: FakeClock
    rate_small: float = 1e9
    peak_at: int = 1024
    oom_from: int | None = None
    calls: list[tuple[int, float, float | None]] = field(default_factory=list)

    def rate(self, n: int) -> float:
        if n <= self.peak_at:
            return self.rate_small * n / 64
        return self.rate_small * self.peak_at / 64 * 0.7

    def __call__(self, shape: Shape, min_run_s: float, max_run_s: float | None) -> Timing:
        n = shape[0]
        self.calls.append((n, min_run_s, max_run_s))
        if self.oom_from is not None and n >= self.oom_from:
            self.clock.now += 0.001
            raise OutOfMemory(f"CUDA out of memory at {n}")
        per_call = work(shape) / self.rate(n)
        spent = max(min_run_s, per_call) + per_call
        if max_run_s is not None:
            spent = min(max(spent, min_run_s), max(max_run_s, per_call))
        self.clock.now += spent
        return Timing(median_s=per_call, iqr_s=per_call * 0.01, runs=max(1, int(spent / per_call)))


def test_grows_to_the_peak_and_confirms_it() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock, peak_at=512)
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=100.0)
    assert out.shape == (512,)
    sizes = [n for n, _, _ in dev.calls]
    assert sizes[0] == 64
    # It stopped growing once the throughput fell: never tried 2048 after 1024 was slower.
    assert 2048 not in sizes
    # The last call is the long, confirming one at the chosen size.
    assert dev.calls[-1][0] == 512 and dev.calls[-1][2] is not None


def test_keeps_the_largest_of_the_equally_fast_sizes() -> None:
    clock = FakeClock()
    timings = {64: 1.0, 128: 0.97, 256: 0.80}  # relative throughput per size

    def measure(shape: Shape, min_run_s: float, max_run_s: float | None) -> Timing:
        clock.now += 0.01
        per_call = work(shape) / (1e9 * timings[shape[0]])
        return Timing(median_s=per_call, iqr_s=0.0, runs=3)

    out = adapt(LADDER[:3], work=work, measure=measure, clock=clock, allot_s=100.0)
    assert out.shape == (128,)  # 3% slower than 64 counts as as fast; 256 (20% slower) does not


def test_small_allotment_stops_growing_early_and_stays_near_budget() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock, rate_small=1e6, peak_at=4096)  # slow device: 256³ takes 4 s
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=1.0, min_run_s=0.01)
    assert out.shape[0] <= 128
    assert clock.now <= 1.0 * 1.5


def test_oom_while_growing_keeps_the_last_size_that_fit() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock, peak_at=4096, oom_from=1024)
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=100.0)
    assert out.shape == (512,)
    assert any("out of memory at [1024]" in n for n in out.notes)


def test_oom_at_the_start_shrinks_and_retries() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock, peak_at=4096, oom_from=512)
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=100.0, start=6)
    assert out.shape == (256,)
    tried = [n for n, _, _ in dev.calls]
    assert tried[:4] == [4096, 2048, 1024, 512]


def test_oom_even_at_the_smallest_size_raises() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock, oom_from=1)
    with pytest.raises(OutOfMemory, match="smallest size"):
        adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=10.0)


def test_unsupported_propagates_with_its_reason() -> None:
    clock = FakeClock()

    def measure(shape: Shape, min_run_s: float, max_run_s: float | None) -> Timing:
        raise Unsupported("\"addmm_impl_cpu_\" not implemented for 'Half'")

    with pytest.raises(Unsupported) as info:
        adapt(LADDER, work=work, measure=measure, clock=clock, allot_s=10.0)
    assert "not implemented" in info.value.reason


def test_single_step_ladder_measures_once_long() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock)
    out = adapt(((1 << 20,),), work=work, measure=dev, clock=clock, allot_s=2.0)
    assert len(dev.calls) == 1
    assert dev.calls[0][2] is not None  # the adaptive, repeat-until-stable measurement
    assert out.shape == (1 << 20,)


def test_budget_shares_what_is_left_by_weight() -> None:
    clock = FakeClock()
    budget = TimeBudget(10.0, clock)
    assert budget.share(1.0, 4.0) == pytest.approx(2.5)
    clock.now = 6.0
    assert budget.remaining() == pytest.approx(4.0)
    assert budget.share(2.0, 4.0) == pytest.approx(2.0)
    clock.now = 20.0
    assert budget.remaining() == 0.0


def test_budget_counts_from_the_given_start() -> None:
    clock = FakeClock(now=5.0)
    budget = TimeBudget(10.0, clock, started=2.0)
    assert budget.elapsed() == pytest.approx(3.0)


class OutOfMemoryError(RuntimeError):
    """Named like torch.cuda.OutOfMemoryError."""


@pytest.mark.parametrize(
    ("exc", "kind"),
    [
        (OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), OutOfMemory),
        (RuntimeError("DefaultCPUAllocator: can't allocate memory: you tried 10 GB"), OutOfMemory),
        (MemoryError(), OutOfMemory),
        (RuntimeError("MPS backend out of memory"), OutOfMemory),
        (RuntimeError("\"addmm_cuda\" not implemented for 'Int'"), Unsupported),
        (
            NotImplementedError(
                "Could not run 'aten::_int_mm' with arguments from the 'MPS' backend"
            ),
            Unsupported,
        ),
    ],
)
def test_classify(exc: Exception, kind: type[Exception]) -> None:
    assert isinstance(classify(exc), kind)


def test_classify_leaves_other_errors_alone() -> None:
    err = KeyError("bug")
    assert classify(err) is err


@settings(max_examples=100, deadline=None)
@given(
    rate=st.floats(min_value=1e5, max_value=1e13),
    peak_at=st.sampled_from([64, 256, 1024, 4096]),
    allot=st.floats(min_value=0.05, max_value=30.0),
)
def test_never_far_over_the_allotment(rate: float, peak_at: int, allot: float) -> None:
    """Whatever the device speed, one kernel stays within 1.5x its allotment (the fake
    loses 30% of its throughput past its peak, so a step can cost 1/0.7 of the forecast),
    plus one smallest-size measurement (the price of having any figure at all)."""
    clock = FakeClock()
    dev = FakeDevice(clock, rate_small=rate, peak_at=peak_at)
    adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=allot, min_run_s=0.01)
    first = work(LADDER[0]) / dev.rate(64)
    # ... and the repeats that make its spread known, at most REPEAT_CAP_S past it.
    assert clock.now <= allot * 1.5 + 2 * predicted_cost(first, 0.01) + REPEAT_CAP_S * 1.5


# --- the size floor and the repeats (issue 14.3) ---------------------------------------


@dataclass
class BusyDevice(FakeDevice):
    """A device whose every call costs ``stall_s`` more (a busy machine's descheduling)."""

    stall_s: float = 0.03

    def __call__(self, shape: Shape, min_run_s: float, max_run_s: float | None) -> Timing:
        n = shape[0]
        self.calls.append((n, min_run_s, max_run_s))
        per_call = work(shape) / self.rate(n) + self.stall_s
        budget = max(min_run_s, per_call) if max_run_s is None else max(max_run_s, per_call)
        runs = max(1, int(budget / per_call))
        if max_run_s is not None:
            # Repeat-until-stable: steady after MIN_RUNS blocks, unless time ran out first.
            runs = min(runs, MIN_RUNS)
        self.clock.now += per_call * (runs + 1)
        return Timing(median_s=per_call, iqr_s=per_call * 0.02, runs=runs)


def test_a_busy_machine_never_measures_below_the_floor() -> None:
    # 30 ms per call whatever the size (the busy 2-core VM): the first size already looks
    # too slow to grow from, which used to leave the figure at the smallest rung.
    clock = FakeClock()
    dev = BusyDevice(clock, rate_small=1e12, stall_s=0.03)
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=0.3, floor=3)
    assert min(n for n, _, _ in dev.calls) == 512
    assert out.shape == (512,)


def test_without_time_left_the_chosen_size_is_repeated_not_shrunk() -> None:
    clock = FakeClock()
    dev = BusyDevice(clock, rate_small=1e12, stall_s=0.02)  # 20 ms per call
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=0.05, floor=3)
    assert out.shape == (512,)
    assert out.timing.runs >= MIN_RUNS and assess(out.timing).reliable
    assert any("repeated past its share" in n for n in out.notes)
    assert clock.now <= 0.05 + 2 * predicted_cost(0.02, 0.02) + REPEAT_FLOOR_S * 1.5
    # On a machine already busy the repeats are skipped: they cannot make it reliable.
    clock2 = FakeClock()
    dev2 = BusyDevice(clock2, rate_small=1e12, stall_s=0.02)
    again = adapt(
        LADDER,
        work=work,
        measure=dev2,
        clock=clock2,
        allot_s=0.05,
        floor=3,
        repeat_past_share=False,
    )
    assert again.timing.runs < MIN_RUNS and clock2.now < clock.now
    assert any("not repeated past it" in n for n in again.notes)
    assert not any("too slow to repeat" in n for n in again.notes)


def test_a_call_too_slow_to_repeat_is_kept_and_marked_unreliable() -> None:
    clock = FakeClock()
    dev = BusyDevice(clock, rate_small=1e12, stall_s=0.6)  # 0.6 s per call: 4 runs > cap
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=0.2, floor=3)
    assert out.shape == (512,) and out.timing.runs < MIN_RUNS
    rel = out.reliability
    assert not rel.reliable and rel.spread is None and "too few" in (rel.reason or "")
    assert any("too slow to repeat" in n for n in out.notes)
    assert repeats_cost(Timing(median_s=0.6, iqr_s=0.0, runs=1)) > REPEAT_CAP_S


def test_out_of_memory_at_the_floor_steps_below_it_and_says_so() -> None:
    clock = FakeClock()
    dev = FakeDevice(clock, peak_at=4096, oom_from=512)
    out = adapt(LADDER, work=work, measure=dev, clock=clock, allot_s=100.0, floor=3)
    assert out.shape == (256,)
    assert any("below the size floor [512]" in n for n in out.notes)


def test_assess_spread_and_runs() -> None:
    assert assess(Timing(median_s=1.0, iqr_s=0.05, runs=8)).reliable
    wide = assess(Timing(median_s=1.0, iqr_s=0.3, runs=8))
    assert not wide.reliable and wide.spread == pytest.approx(0.3) and "30%" in (wide.reason or "")
    few = assess(Timing(median_s=1.0, iqr_s=0.0, runs=3))
    assert not few.reliable and few.spread is None


def test_floor_index_per_kernel_class() -> None:
    cubes = tuple((n, n, n) for n in (128, 256, 512, 1024))

    def mm(s: Shape) -> float:
        return 2.0 * s[0] * s[1] * s[2]

    assert floor_index(cubes, mm, "matmul", "cpu") == 2  # 512³ on a CPU
    assert floor_index(cubes, mm, "matmul", "cuda") == 3  # a GPU ladder this short: its top
    assert floor_index(cubes, mm, "copy", "cpu") == 0  # no floor: the buffers are sized apart


def test_repeating_a_fast_statement_costs_a_few_short_blocks() -> None:
    from hwadvisor.bench.sizing import BLOCK_S, REPEAT_FLOOR_S

    # 60 us a call: four blocks of about 10 ms, well within the floor (the Timer's own
    # adaptive blocks would be 1,000 calls, 60 ms each).
    fast = repeats_cost(Timing(median_s=60e-6, iqr_s=0.0, runs=1))
    assert fast == pytest.approx(1.2 * 5 * BLOCK_S + 60e-6) and fast < REPEAT_FLOOR_S
