"""Check 3's token buckets over signed times (dmq/validation/rate.py, docs/protocol/validation.md 6.12)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dmq.validation import BucketPolicy, Schedule, SignedBudgets
from dmq.validation.rate import FOLD_MARGIN

SPACING = BucketPolicy(1, 60.0)
BURST = BucketPolicy(3, 10.0)


def _accept_all(budgets: SignedBudgets, times: list[float], now: float) -> list[float]:
    accepted = []
    for t in times:
        if budgets.admits("k", t, now):
            budgets.charge("k", t, now)
            accepted.append(t)
    return accepted


@given(st.lists(st.integers(0, 2000), max_size=30), st.integers(0, 2000), st.integers(0, 2000))
def test_folding_the_past_changes_no_verdict(times, later_now, query):
    """Times before ``now`` are folded into the level: every message signed at or after ``now``
    gets the verdict it gets against the whole list."""
    for policy in (SPACING, BURST):
        folded = SignedBudgets(lambda _key, p=policy: p)
        whole = SignedBudgets(lambda _key, p=policy: p)
        accepted = _accept_all(folded, sorted(times), now=0.0)
        assert _accept_all(whole, sorted(times), now=0.0) == accepted
        x = max(query, later_now)
        assert folded.admits("k", x, float(later_now)) == whole.admits("k", x, 0.0)


def test_the_spacing_rule_is_pairwise_distance_in_signed_time():
    budgets = SignedBudgets(lambda _key: SPACING)
    budgets.charge("k", 1000.0, now=0.0)
    assert not budgets.admits("k", 1059.0, now=0.0) and not budgets.admits("k", 941.0, now=0.0)
    assert budgets.admits("k", 1060.0, now=0.0) and budgets.admits("k", 940.0, now=0.0)
    budgets.charge("k", 1120.0, now=0.0)
    assert budgets.admits("k", 1060.0, now=0.0)         # exactly 60 s from each side
    budgets.charge("k", 1060.0, now=0.0)
    assert not budgets.admits("k", 1090.0, now=0.0)
    assert budgets.gap("k", 1100.0) == 20.0


def test_retry_after_names_the_first_signed_time_that_passes():
    budgets = SignedBudgets(lambda _key: BURST)
    for _ in range(3):
        budgets.charge("k", 100.0, now=0.0)
    assert budgets.retry_after("k", 100.0, now=0.0) == 10
    assert budgets.retry_after("k", 104.0, now=0.0) == 6
    assert budgets.admits("k", 110.0, now=0.0) and budgets.retry_after("k", 110.0, now=0.0) == 0
    # Signed just before the burst it would starve it: it has to go past the burst.
    assert budgets.retry_after("k", 99.0, now=0.0) >= 1
    assert budgets.admits("k", 99.0 + budgets.retry_after("k", 99.0, now=0.0), now=0.0)


def test_a_wall_clock_stepped_back_within_the_margin_changes_no_verdict():
    budgets = SignedBudgets(lambda _key: SPACING)
    budgets.charge("k", 500.0, now=0.0)
    assert budgets.admits("k", 600.0, now=550.0)
    # The clock steps back 20 minutes: 500 is still open, messages around it are judged exactly.
    assert not budgets.admits("k", 470.0, now=550.0 - 1200)
    assert budgets.admits("k", 440.0, now=550.0 - 1200)


def test_a_wall_clock_stepped_back_behind_the_fold_counts_as_the_folded_time():
    budgets = SignedBudgets(lambda _key: SPACING)
    budgets.charge("k", 500.0, now=0.0)
    assert budgets.admits("k", 5000.0, now=500.0 + FOLD_MARGIN + 1)     # folds 500
    assert not budgets.admits("k", 400.0, now=0.0)                       # behind the fold: judged at 500


def test_a_schedule_round_trips_and_refuses_malformed_state():
    schedule = Schedule()
    schedule.add(SPACING, 10.0)
    schedule.fold(SPACING, 20.0 + FOLD_MARGIN)
    schedule.add(SPACING, 90.0 + FOLD_MARGIN)
    assert Schedule.restore(schedule.export()).export() == schedule.export() == [0.0, 10.0, [90.0 + FOLD_MARGIN]]
    for bad in (None, [1, 2], [None, None, "x"], ["1", None, []], [None, None, [None]]):
        with pytest.raises(ValueError):
            Schedule.restore(bad)


def test_idle_schedules_are_forgotten_only_when_they_equal_a_key_never_seen():
    schedule = Schedule()
    schedule.add(BURST, 10.0)
    assert not schedule.idle(BURST, 5.0)
    schedule.fold(BURST, 11.0 + FOLD_MARGIN)
    assert not schedule.times and schedule.idle(BURST, 11.0 + FOLD_MARGIN)
    late = Schedule(tokens=0.0, at=100.0)
    assert not late.idle(BURST, 105.0)                 # one token still refilling
    assert late.idle(BURST, 130.0)
