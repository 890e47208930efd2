"""The budget's arithmetic: a figure's foreseen cost, the shares, reliability, failures."""

from __future__ import annotations

import pytest

from hwadvisor.bench.sizing import (
    BLOCK_S,
    MIN_RUNS,
    OutOfMemory,
    TimeBudget,
    Timing,
    Unsupported,
    assess,
    classify,
    cost,
)


class FakeClock:
    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_short_call_costs_its_blocks_and_a_long_one_its_calls() -> None:
    short = cost(1e-5)
    assert MIN_RUNS * BLOCK_S < short < (MIN_RUNS + 1) * BLOCK_S
    # a call longer than a block: two untimed calls, MIN_RUNS timed, one in the Timer
    assert cost(0.5) == pytest.approx((MIN_RUNS + 3) * 0.5, rel=0.01)
    assert cost(0.5, setup_s=2.0) == pytest.approx(cost(0.5) + 2.0)
    assert cost(0.1) < cost(0.2) < cost(0.4)


def test_budget_shares_what_is_left_by_weight() -> None:
    clock = FakeClock()
    budget = TimeBudget(10.0, clock, clock())
    assert budget.share(1.0, 4.0) == pytest.approx(2.5)
    assert budget.share(8.0, 4.0) == pytest.approx(10.0)  # never more than is left
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


def test_assess_spread_and_runs() -> None:
    assert assess(Timing(median_s=1.0, iqr_s=0.05, runs=8)).reliable
    wide = assess(Timing(median_s=1.0, iqr_s=0.3, runs=8))
    assert not wide.reliable and wide.spread == pytest.approx(0.3) and "30%" in (wide.reason or "")
    few = assess(Timing(median_s=1.0, iqr_s=0.0, runs=3))
    assert not few.reliable and few.spread is None
