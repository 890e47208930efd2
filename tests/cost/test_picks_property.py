"""Property: a pick never falls on an option the job does not fit while a priced option
may hold it, and the cheapest is never dearer than any option it could have taken."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hwadvisor.cost import Option, budget_low, cheapest, fastest

pytestmark = pytest.mark.hypothesis

options = st.lists(
    st.builds(
        Option,
        device=st.sampled_from(["t4", "l4", "h100-sxm", "xeon-8488c"]),
        instance=st.sampled_from(["a", "b", "c", "d"]),
        usd=st.one_of(st.none(), st.floats(0.01, 1e6)),
        time_s=st.one_of(st.none(), st.floats(1.0, 1e7)),
        spot=st.booleans(),
        cpu=st.booleans(),
        fits=st.sampled_from([True, False, None]),
    ),
    max_size=12,
)


@given(options, st.one_of(st.none(), st.floats(10.0, 1e6)))
def test_picks_hold_the_job_when_any_priced_option_may(
    opts: list[Option], deadline: float | None
) -> None:
    priced = [o for o in opts if o.usd is not None and not o.spot]
    pick = cheapest(opts, deadline)
    if not priced:
        assert pick is None
        return
    assert pick is not None
    if any(o.fits is not False for o in priced):
        assert pick.fits is not False
        if pick.meets_deadline:
            held = [o for o in priced if o.fits is not False and o.usd is not None]
            meeting = [
                o
                for o in held
                if o.time_s is not None and (deadline is None or o.time_s <= deadline)
            ]
            assert pick.usd == min(o.usd for o in meeting if o.usd is not None)
    quick = fastest(opts, deadline)
    timed = [o for o in opts if o.time_s is not None]
    if quick is not None and any(o.fits is not False for o in timed):
        assert quick.fits is not False
    low = budget_low(opts, deadline)
    pool = [o for o in opts if not o.cpu and o.usd is not None]
    if low is not None and any(o.fits is not False for o in pool):
        assert low.fits is not False
