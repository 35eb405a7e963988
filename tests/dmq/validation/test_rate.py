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


def _reference_first_short(schedule: Schedule, policy: BucketPolicy, x: float) -> float | None:
    """The bucket simulated the plain way: every kept time and ``x`` merged in signed order, the
    level after each ``min(capacity, tokens + max(0, t - at) / refill)``. The schedule's own
    simulation (``Schedule._first_short``, on every message of a pool with a schedule) must give
    the same first time short of a token."""
    if schedule.at is not None and x < schedule.at:
        x = schedule.at
    tokens, at = schedule.tokens, schedule.at
    for t in sorted([*schedule.times, x]):
        level = (float(policy.capacity) if tokens is None or at is None
                 else min(float(policy.capacity), tokens + max(0.0, t - at) / policy.refill))
        if level < 1.0 - 1e-9:
            return t
        tokens, at = level - 1.0, t
    return None


_POLICIES = st.builds(BucketPolicy, st.integers(1, 4), st.sampled_from([1.0, 2.5, 10.0, 60.0]))
_STEPS = st.lists(st.tuples(st.sampled_from(["admit", "fold"]), st.integers(0, 4000), st.integers(-1900, 4000)),
                  max_size=40)


@given(_POLICIES, _STEPS, st.lists(st.integers(-100, 4200), min_size=1, max_size=8))
def test_the_schedule_simulates_the_bucket_as_the_plain_simulation(policy, steps, queries):
    """Through any history of accepted messages, folds (clocks stepped back included) and queries,
    the schedule's verdict and first short time equal the plain simulation's, and the budgets
    (which fold only when a key has a schedule, and skip a fold that has nothing to settle) give the
    verdict of a fold followed by the plain simulation."""
    budgets = SignedBudgets(lambda _key: policy)
    for action, signed, now in steps:
        schedule = budgets.schedule("k")
        if action == "fold" and schedule is not None:
            kept = (schedule.tokens, schedule.at, list(schedule.times))
            schedule.fold(policy, float(now))
            plain = Schedule(*kept[:2], kept[2])
            count = sum(1 for t in kept[2] if t < now - FOLD_MARGIN)
            for t in kept[2][:count]:
                level = (float(policy.capacity) if plain.tokens is None or plain.at is None
                         else min(float(policy.capacity), plain.tokens + max(0.0, t - plain.at) / policy.refill))
                plain.tokens, plain.at = level - 1.0, t
            del plain.times[:count]
            assert schedule.export() == plain.export()
        elif action == "admit":
            expected = schedule is None or _reference_first_short(schedule, policy, float(signed)) is None
            if schedule is not None:
                # What admits sees: the schedule folded at ``now`` first.
                probe = Schedule.restore(schedule.export())
                probe.fold(policy, float(now))
                expected = _reference_first_short(probe, policy, float(signed)) is None
            assert budgets.admits("k", float(signed), float(now)) == expected
            if expected:
                budgets.charge("k", float(signed), float(now))
        schedule = budgets.schedule("k")
        if schedule is not None:
            near = [t + d for t in schedule.times for d in (-61.0, -30.0, -1.0, 0.0, 1.0, 9.0, 30.0, 61.0)]
            for x in [*map(float, queries), *near]:
                assert schedule._first_short(policy, x) == _reference_first_short(schedule, policy, x)


_FORCED = st.lists(st.tuples(st.sampled_from(["add", "fold", "other policy"]), st.integers(-100, 4200)),
                   max_size=40)


@given(_POLICIES, _POLICIES, _FORCED, st.lists(st.integers(-100, 4200), min_size=1, max_size=6))
def test_kept_levels_follow_forced_charges_folds_and_a_change_of_policy(policy, other, steps, queries):
    """The levels a schedule keeps beside its times give the plain simulation's first short time
    also through charges no admission preceded (a topic's parked message, a restored state), folds
    that settle such a time, and queries under another policy than the last one."""
    schedule = Schedule()
    current = policy
    for action, value in steps:
        if action == "add":
            schedule.add(current, float(value))
        elif action == "fold":
            schedule.fold(current, float(value) + FOLD_MARGIN)
        else:
            current = other if current is policy else policy
        near = [t + d for t in schedule.times for d in (-10.0, 0.0, 1.0, 10.0)]
        for x in [*map(float, queries), *near]:
            assert schedule._first_short(current, x) == _reference_first_short(schedule, current, x)


def test_a_restored_schedule_judges_as_the_one_it_was_exported_from():
    """Levels are not persisted: a restored schedule works them out on its first verdict."""
    schedule = Schedule()
    for t in (0.0, 10.0, 20.0, 25.0, 40.0):
        schedule.add(BURST, t)
    restored = Schedule.restore(schedule.export())
    for x in (-5.0, 5.0, 21.0, 26.0, 41.0, 45.0, 60.0):
        assert restored._first_short(BURST, x) == schedule._first_short(BURST, x) == \
            _reference_first_short(schedule, BURST, x)
