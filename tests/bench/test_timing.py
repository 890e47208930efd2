"""The torch Timer is called with the usable cores and the right autorange; errors are mapped."""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, ClassVar

import pytest

from hwadvisor.bench.sizing import OutOfMemory, Unsupported
from hwadvisor.bench.timing import make_measure, time_statement

torch = pytest.importorskip("torch")


class FakeTimer:
    """Stands in for torch.utils.benchmark.Timer and records how it was used."""

    made: ClassVar[list[FakeTimer]] = []

    def __init__(self, stmt: str, globals: dict[str, Any], num_threads: int) -> None:
        self.stmt, self.globals, self.num_threads = stmt, globals, num_threads
        self.calls: list[tuple[str, dict[str, float]]] = []
        FakeTimer.made.append(self)

    def _result(self) -> Any:
        class M:
            median, iqr, times = 0.002, 0.0001, [0.002] * 7

        return M()

    def blocked_autorange(self, min_run_time: float) -> Any:
        self.calls.append(("blocked", {"min_run_time": min_run_time}))
        return self._result()

    def adaptive_autorange(self, threshold: float, min_run_time: float, max_run_time: float) -> Any:
        self.calls.append(
            ("adaptive", {"min_run_time": min_run_time, "max_run_time": max_run_time})
        )
        return self._result()


@pytest.fixture
def fake_timer(monkeypatch: pytest.MonkeyPatch) -> type[FakeTimer]:
    import torch.utils.benchmark as tub

    FakeTimer.made = []
    monkeypatch.setattr(tub, "Timer", FakeTimer)
    return FakeTimer


def test_timer_gets_the_threads_and_sync(fake_timer: type[FakeTimer]) -> None:
    t = time_statement(lambda: None, threads=3, sync=None, min_run_s=0.05)
    timer = fake_timer.made[-1]
    assert timer.num_threads == 3  # never the Timer's default of one thread
    assert timer.stmt == "fn()"
    assert timer.calls == [("blocked", {"min_run_time": 0.05})]
    assert (t.median_s, t.runs) == (0.002, 7)
    time_statement(lambda: None, threads=1, sync=lambda: None, min_run_s=0.1, max_run_s=2.0)
    timer = fake_timer.made[-1]
    assert timer.stmt == "fn(); sync()"
    assert timer.calls == [("adaptive", {"min_run_time": 0.1, "max_run_time": 2.0})]


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
        if shape[0] == 2:
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        if shape[0] == 3:
            raise KeyboardInterrupt
        return lambda: None

    measure = make_measure(torch, build, device_kind="cpu", threads=2, sync=None, flags=flags)
    with pytest.raises(Unsupported, match="not implemented"):
        measure((1,), 0.01, None)
    with pytest.raises(OutOfMemory):
        measure((2,), 0.01, None)
    with pytest.raises(KeyboardInterrupt):
        measure((3,), 0.01, None)
    assert measure((4,), 0.01, None).runs == 7
    assert not state["inside"] and state["entered"] == 4


class BlockTimer:
    """A Timer whose ``timeit(number)`` blocks take ``number`` x the next per-call time."""

    def __init__(self, per_call: list[float]) -> None:
        self.per_call, self.numbers = per_call, []

    def timeit(self, number: int) -> Any:
        t = self.per_call[min(len(self.numbers), len(self.per_call) - 1)] * number
        self.numbers.append(number)
        return SimpleNamespace(raw_times=[t])


def test_a_fast_statement_is_confirmed_in_short_blocks() -> None:
    from hwadvisor.bench.sizing import BLOCK_S, MIN_RUNS
    from hwadvisor.bench.timing import _short_blocks

    # 60 us a call: blocks of ceil(10 ms / 60 us) = 167 calls, four steady ones suffice.
    steady = BlockTimer([60e-6])
    t = _short_blocks(steady, 60e-6, min_run_s=0.0, max_run_s=1.0)
    assert steady.numbers == [167] * MIN_RUNS and t.runs == MIN_RUNS
    assert t.median_s == pytest.approx(60e-6) and t.iqr_s == pytest.approx(0.0)
    assert pytest.approx(BLOCK_S, rel=0.01) == 167 * 60e-6
    # An unsteady one repeats until its time is spent, and reports the spread it saw.
    noisy = BlockTimer([60e-6, 90e-6] * 50)
    t = _short_blocks(noisy, 60e-6, min_run_s=0.0, max_run_s=0.1)
    assert len(noisy.numbers) > MIN_RUNS and t.runs == len(noisy.numbers)
    assert sum(noisy.numbers) * 75e-6 >= 0.1 and t.iqr_s > 0.05 * t.median_s


def test_the_confirming_run_uses_short_blocks_only_when_told_a_call_is_short(
    fake_timer: type[FakeTimer], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.bench import timing

    seen: list[float] = []

    def fake_blocks(timer: Any, per_call_s: float, min_run_s: float, max_run_s: float) -> Any:
        seen.append(per_call_s)
        return timing.Timing(median_s=per_call_s, iqr_s=0.0, runs=4)

    monkeypatch.setattr(timing, "_short_blocks", fake_blocks)
    time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.1, max_run_s=1.0, per_call_s=1e-4
    )
    assert seen == [1e-4] and fake_timer.made[-1].calls == []
    # A call of a block or more, or no earlier figure: the Timer's own adaptive run.
    time_statement(
        lambda: None, threads=1, sync=None, min_run_s=0.1, max_run_s=1.0, per_call_s=0.05
    )
    time_statement(lambda: None, threads=1, sync=None, min_run_s=0.1, max_run_s=1.0)
    assert (
        seen == [1e-4] and [c[0] for t in fake_timer.made[-2:] for c in t.calls] == ["adaptive"] * 2
    )


def test_measure_sizes_the_confirming_blocks_from_the_first_measurement(
    fake_timer: type[FakeTimer], monkeypatch: pytest.MonkeyPatch
) -> None:
    from hwadvisor.bench import timing

    seen: list[float] = []
    monkeypatch.setattr(
        timing,
        "_short_blocks",
        lambda timer, per_call_s, min_run_s, max_run_s: (
            seen.append(per_call_s) or timing.Timing(median_s=per_call_s, iqr_s=0.0, runs=4)
        ),
    )
    measure = make_measure(
        torch, lambda shape: lambda: None, device_kind="cpu", threads=1, sync=None
    )
    first = measure((64,), 0.05, None)  # the fake Timer's 2 ms a call
    measure((64,), 0.05, 0.5)
    assert first.median_s == 0.002 and seen == [0.002]
