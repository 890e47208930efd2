"""The torch Timer is called with the usable cores and the right autorange; errors are mapped."""

from __future__ import annotations

from contextlib import contextmanager
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
