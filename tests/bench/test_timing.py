"""The torch Timer is called with the figure's threads and within its time; errors are mapped."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from hwadvisor.bench.devices import Target
from hwadvisor.bench.kernels import KernelCase
from hwadvisor.bench.sizing import BLOCK_S, MIN_RUNS, OutOfMemory, OutOfTime, Unsupported
from hwadvisor.bench.timing import MAX_RUNS, measure_case, time_statement

torch = pytest.importorskip("torch")

CPU = Target("cpu", "cpu", None, "test CPU", None, 3)


class FakeTimer:
    """Stands in for torch.utils.benchmark.Timer: each block of ``number`` calls takes
    ``number`` x the next of :attr:`per_call`, and it records how it was used."""

    made: ClassVar[list[FakeTimer]] = []
    per_call: ClassVar[list[float]] = [0.002]

    def __init__(self, stmt: str, globals: dict[str, Any], num_threads: int) -> None:
        self.stmt, self.globals, self.num_threads = stmt, globals, num_threads
        self.calls: list[tuple[str, dict[str, float]]] = []
        self.numbers: list[int] = []
        FakeTimer.made.append(self)

    def _result(self) -> Any:
        return SimpleNamespace(median=0.02, iqr=0.0001, times=[0.02] * 7)

    def blocked_autorange(self, min_run_time: float) -> Any:
        self.calls.append(("blocked", {"min_run_time": min_run_time}))
        return self._result()

    def adaptive_autorange(self, threshold: float, min_run_time: float, max_run_time: float) -> Any:
        self.calls.append(("adaptive", {"min_run_time": min_run_time, "max_run_time": max_run_time}))  # fmt: skip
        return self._result()

    def timeit(self, number: int) -> Any:
        each = self.per_call[min(len(self.numbers), len(self.per_call) - 1)]
        self.numbers.append(number)
        return SimpleNamespace(raw_times=[each * number])


@pytest.fixture
def fake_timer(monkeypatch: pytest.MonkeyPatch) -> type[FakeTimer]:
    import torch.utils.benchmark as tub

    FakeTimer.made, FakeTimer.per_call = [], [0.002]
    monkeypatch.setattr(tub, "Timer", FakeTimer)
    return FakeTimer


def test_timer_gets_the_threads_and_sync(fake_timer: type[FakeTimer]) -> None:
    t = time_statement(lambda: None, threads=3, sync=None, min_run_s=0.05)
    timer = fake_timer.made[-1]
    assert timer.num_threads == 3  # never the Timer's default of one thread
    assert timer.stmt == "fn()"
    assert timer.calls == [("blocked", {"min_run_time": 0.05})]
    assert (t.median_s, t.runs) == (0.02, 7)
    time_statement(lambda: None, threads=1, sync=lambda: None, min_run_s=0.1, per_call_s=0.05)
    assert fake_timer.made[-1].stmt == "fn(); sync()"


def test_a_long_call_is_timed_one_call_a_block_within_its_time(
    fake_timer: type[FakeTimer],
) -> None:
    time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.0, max_run_s=2.0, per_call_s=0.05
    )
    ((how, args),) = fake_timer.made[-1].calls
    # its untimed call and one block over come out of the time: never past it
    assert how == "adaptive" and args["max_run_time"] + 2 * 0.05 <= 2.0
    # ... and no more than MAX_RUNS blocks when they do not agree
    time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.0, max_run_s=60.0, per_call_s=0.05
    )
    assert fake_timer.made[-1].calls[0][1]["max_run_time"] <= MAX_RUNS * 0.05


def test_a_short_call_is_timed_in_blocks_of_about_a_block(fake_timer: type[FakeTimer]) -> None:
    # 60 us a call: blocks of ceil(10 ms / 60 us) = 167 calls, four steady ones suffice.
    fake_timer.per_call = [60e-6]
    t = time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.0, max_run_s=1.0, per_call_s=60e-6
    )
    assert fake_timer.made[-1].numbers == [167] * MIN_RUNS and t.runs == MIN_RUNS
    assert t.median_s == pytest.approx(60e-6) and t.iqr_s == pytest.approx(0.0)
    assert pytest.approx(BLOCK_S, rel=0.01) == 167 * 60e-6


def test_blocks_follow_the_calls_when_the_first_was_slowed_by_set_up(
    fake_timer: type[FakeTimer],
) -> None:
    fake_timer.per_call = [1e-5]
    time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.0, max_run_s=1.0, per_call_s=1e-3
    )
    numbers = fake_timer.made[-1].numbers
    assert numbers[0] == 10 and numbers[-1] == 1000  # grown to about BLOCK_S of calls


def test_unsteady_short_blocks_stop_at_their_time_or_at_max_runs(
    fake_timer: type[FakeTimer],
) -> None:
    fake_timer.per_call = [60e-6, 90e-6] * 50
    t = time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.0, max_run_s=0.045, per_call_s=60e-6
    )
    assert t.runs == len(fake_timer.made[-1].numbers) < MIN_RUNS + 1
    assert t.iqr_s > 0.05 * t.median_s  # the spread it saw is reported
    long = time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.0, max_run_s=60.0, per_call_s=60e-6
    )
    assert long.runs == MAX_RUNS


def _case(build: Any, *, ladder: tuple[tuple[int, ...], ...] = ((4,),), flags: Any = None) -> KernelCase:  # fmt: skip
    return KernelCase(
        CPU, "matmul", "fp32", "GFLOP/s", ladder, lambda s: 1e6, build,
        start=len(ladder) - 1, flags=flags,
    )  # fmt: skip


class Clock:
    """A clock that moves only when told to (each untimed call moves it ``step``)."""

    def __init__(self, step: float = 0.001) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now

    def call(self) -> None:
        self.now += self.step


def test_measure_maps_failures_and_restores_flags(fake_timer: type[FakeTimer]) -> None:
    state = {"inside": False, "entered": 0}

    @contextmanager
    def flags() -> Any:
        state["inside"] = True
        state["entered"] += 1
        try:
            yield
        finally:
            state["inside"] = False

    def build(shape: tuple[int, ...]) -> Any:
        assert state["inside"]
        if shape[0] == 1:
            raise RuntimeError("\"addmm_impl_cpu_\" not implemented for 'Half'")
        if shape[0] == 3:
            raise KeyboardInterrupt
        return clock.call

    clock = Clock(step=0.02)
    with pytest.raises(Unsupported, match="not implemented"):
        measure_case(torch, _case(build, ladder=((1,),), flags=flags), 1.0, clock)
    with pytest.raises(KeyboardInterrupt):
        measure_case(torch, _case(build, ladder=((3,),), flags=flags), 1.0, clock)
    assert measure_case(torch, _case(build, flags=flags), 1.0, clock).timing.runs == 7
    assert not state["inside"] and state["entered"] == 3
    assert fake_timer.made[-1].num_threads == 3


def test_out_of_memory_shrinks_the_shape_and_says_so(fake_timer: type[FakeTimer]) -> None:
    def build(shape: tuple[int, ...]) -> Any:
        if shape[0] > 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return lambda: None

    out = measure_case(torch, _case(build, ladder=((2,), (4,), (8,))), 1.0, Clock())
    assert out.shape == (2,) and len(out.notes) == 2 and "out of memory at [8]" in out.notes[0]
    with pytest.raises(OutOfMemory, match="even at"):
        measure_case(torch, _case(build, ladder=((4,),)), 1.0, Clock())


@pytest.mark.parametrize(("allot", "timed"), [(0.3, False), (5.0, True)])
def test_a_call_slower_than_its_time_is_not_timed(
    fake_timer: type[FakeTimer], allot: float, timed: bool
) -> None:
    clock = Clock(step=0.5)
    case = _case(lambda shape: clock.call)
    if timed:
        assert measure_case(torch, case, allot, clock).timing.runs == 7
        return
    with pytest.raises(OutOfTime, match="no time left"):
        measure_case(torch, case, allot, clock)
    assert clock.now == pytest.approx(0.5)  # one call, not a second one
