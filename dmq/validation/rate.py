"""Rate limits on the signed times of a pool's messages, so that history replayed by a peer passes.

Check 3 (docs/protocol/validation.md 6.2 and 6.9) limits how often a pool may have messages
accepted. The reference measures it on the *arrival* time of each message at the node: a
backlog that a peer replays in one reply (a node that starts empty, restarts, or comes back from
a partition) arrives all at once and, past its first message per pool, is refused and the peer
disconnected. This node measures it on a time the pool *signed*: the message's ``expiresAt``,
which the KES signature covers, so no relay can change it.

A :class:`BucketPolicy` is a token bucket (``capacity`` messages at once, one more every
``refill`` seconds). A pool's accepted messages pass it when, taken **in the order of their
signed times**, the bucket never runs out: equivalently, every interval of signed time of
length ``d`` holds at most ``capacity + d / refill`` of them. That is a property of the *set* of
messages, not of the order they arrive in, so:

* a history every message of which the pool's own node accepted when it was new passes at any
  node, in any order and at any arrival rate (a subset of a set that passes, passes);
* a pool that signs too often is refused wherever its messages go, whatever order a peer
  chooses: the set the node accepts still passes, so at most ``capacity + (L + 1800) / refill``
  of the pool's messages are accepted in any ``L`` seconds (every ``expiresAt`` lies within
  1800 s of the moment of its acceptance, check 2), and at most ``capacity + 1800 / refill`` are
  alive at once: the reference's bounds (one per 60 s, 30 alive), with bursts allowed.

The core's spacing rule (one message per ``MinSigDelay``) is the bucket of capacity one.

A :class:`Schedule` keeps one key's (a pool's, or a pool's in one topic) accepted signed times.
Check 1 refuses a message whose ``expiresAt`` is before now, so times before now are settled
(nothing can be inserted among them any more): they are folded into the bucket's level. Folding
waits :data:`FOLD_MARGIN` past them, so that a wall clock stepped back by less than that changes
no verdict; what is kept is one number per message alive or expired in the last 30 minutes.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from dmq.message import DmqMessage
from dmq.validation.errors import SigTooFrequent, SigValidationError

__all__ = ["BucketPolicy", "Schedule", "SignedBudgets", "RateRule", "PoolSpacing", "FOLD_MARGIN"]

#: Float slack when comparing a level with one token (integral times give exact levels).
_EPSILON = 1e-9
#: A level below this is short of a token.
_SHORT = 1.0 - _EPSILON
#: Seconds a signed time stays open after it passed, before it is folded into the level: the
#: largest step back of the wall clock that leaves every verdict exact (a longer one counts a
#: message signed before the fold as signed at it). The maximum lifetime, so that the times kept
#: stay bounded by twice the messages a pool may have alive.
FOLD_MARGIN = 1800.0


@dataclass(frozen=True, slots=True)
class BucketPolicy:
    """``capacity`` tokens, one more every ``refill`` seconds (of signed time)."""

    capacity: int = 8
    refill: float = 10.0

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"a token bucket holds at least one token, got {self.capacity}")
        if not self.refill > 0:
            raise ValueError(f"a token bucket refills after a positive number of seconds, got {self.refill}")

    @property
    def rate(self) -> float:
        """Messages per second in the long run."""
        return 1.0 / self.refill


def _level_at(tokens: float | None, at: float | None, t: float, capacity: float, refill: float) -> float:
    """The bucket's level at ``t`` when the token taken at ``at`` left ``tokens`` (None: nothing
    taken yet, a full bucket)."""
    if tokens is None or at is None:
        return capacity
    level = tokens + (t - at) / refill if t > at else tokens
    return capacity if level > capacity else level


class Schedule:
    """The accepted signed times of one key under one policy: a folded level and the times still open.

    The bucket's level at each open time (before that time takes its token) is kept beside the
    times, so that a new message's verdict replays only the times signed after it. A pool keeps
    its times open for :data:`FOLD_MARGIN` past them, so a node that has run half an hour holds
    about 150 a pool at one message every 12 s, and more with every message a pool may send:
    replaying them all for every message grew a node's cost per message with its age
    (docs/benchmarks.md, "Check 3 on a node that has run for an hour"). The levels follow
    ``add`` and ``fold``; they are worked out again when a different policy is given or
    ``times`` was changed by other means.
    """

    __slots__ = ("tokens", "at", "times", "_levels", "_policy", "_first_short_at")

    def __init__(self, tokens: float | None = None, at: float | None = None, times: list[float] | None = None) -> None:
        #: The bucket's level just after the last folded time ``at`` (None: nothing folded, full).
        self.tokens = tokens
        self.at = at
        #: Signed times not folded yet (at or after the last fold's ``now``), sorted.
        self.times: list[float] = times if times is not None else []
        #: The level at each of ``times`` under ``_policy``, and the index of the first one short
        #: of a token (None: none is; only a charge without an admission makes one).
        self._levels: list[float] = []
        self._policy: BucketPolicy | None = None
        self._first_short_at: int | None = None

    def _level(self, policy: BucketPolicy, tokens: float | None, at: float | None, t: float) -> float:
        return _level_at(tokens, at, t, float(policy.capacity), policy.refill)

    def _levels_for(self, policy: BucketPolicy) -> list[float]:
        """The levels at ``times`` under ``policy``, worked out again only when they are stale."""
        if (policy is not self._policy and policy != self._policy) or len(self._levels) != len(self.times):
            self._policy = policy
            self._first_short_at = None
            self._relevel(policy, 0)
        return self._levels

    def _relevel(self, policy: BucketPolicy, start: int) -> None:
        """Work out the levels from index ``start`` on; those before it are current."""
        times, levels = self.times, self._levels
        del levels[start:]
        tokens, at = (self.tokens, self.at) if start == 0 else (levels[start - 1] - 1.0, times[start - 1])
        first = self._first_short_at
        if first is not None and first >= start:
            first = None
        capacity, refill = float(policy.capacity), policy.refill
        for i in range(start, len(times)):
            t = times[i]
            level = _level_at(tokens, at, t, capacity, refill)
            levels.append(level)
            if first is None and level < _SHORT:
                first = i
            tokens, at = level - 1.0, t
        self._first_short_at = first

    def fold(self, policy: BucketPolicy, now: float) -> None:
        """Fold the times more than :data:`FOLD_MARGIN` before ``now`` into the level: no message
        signed before now can come any more (check 1), unless the wall clock steps back."""
        times = self.times
        horizon = now - FOLD_MARGIN
        if not times or times[0] >= horizon:
            return                            # the usual case: nothing settled since the last fold
        count = bisect.bisect_left(times, horizon)
        levels = self._levels_for(policy)
        # The level after the last folded time is the one kept for it, less its token.
        self.tokens, self.at = levels[count - 1] - 1.0, times[count - 1]
        del times[:count], levels[:count]
        first = self._first_short_at
        if first is not None:
            first -= count
            if first < 0:
                first = next((i for i, level in enumerate(levels) if level < _SHORT), None)
            self._first_short_at = first

    def _first_short(self, policy: BucketPolicy, x: float) -> float | None:
        """Simulate the bucket over the times with ``x`` added: the first time short of a token, or None.

        The times signed before ``x`` keep their levels, so only ``x`` and the times after it
        (none, when messages come in the order they were signed) are replayed.
        """
        tokens, at = self.tokens, self.at
        if at is not None and x < at:
            x = at                            # the wall clock stepped back past a fold
        times = self.times
        levels = self._levels_for(policy)
        where = bisect.bisect_right(times, x)
        first = self._first_short_at
        if first is not None and first < where:
            return times[first]
        if where:
            tokens, at = levels[where - 1] - 1.0, times[where - 1]
        capacity, refill = float(policy.capacity), policy.refill
        t, following, end = x, where, len(times)
        while True:
            level = _level_at(tokens, at, t, capacity, refill)
            if level < _SHORT:
                return t
            if following == end:
                return None
            tokens, at = level - 1.0, t
            t = times[following]
            following += 1

    def admits(self, policy: BucketPolicy, x: float) -> bool:
        """Would a message signed at ``x`` keep every accepted one (and itself) within the bucket?"""
        return self._first_short(policy, x) is None

    def add(self, policy: BucketPolicy, x: float) -> None:
        """Record an accepted message signed at ``x`` (the caller checked :meth:`admits`)."""
        if self.at is not None and x < self.at:
            x = self.at
        self._levels_for(policy)
        where = bisect.bisect_right(self.times, x)
        self.times.insert(where, x)
        self._relevel(policy, where)

    def wait(self, policy: BucketPolicy, x: float) -> float:
        """Seconds to add to ``x`` before it is admitted (0 when it is): a hint, found by moving
        ``x`` past each time short of a token."""
        delay = 0.0
        for _ in range(len(self.times) + 2):
            short = self._first_short(policy, x + delay)
            if short is None:
                return delay
            if short <= x + delay:
                # ``x`` itself is short: the bucket refills the missing part.
                tokens, at = self._replay_until(policy, x + delay)
                missing = 1.0 - self._level(policy, tokens, at, x + delay)
                delay += max(missing * policy.refill, _EPSILON)
            else:
                delay = short - x             # a later message would starve: go past it
        return delay

    def _replay_until(self, policy: BucketPolicy, x: float) -> tuple[float | None, float | None]:
        tokens, at = self.tokens, self.at
        for t in self.times:
            if t > x:
                break
            tokens, at = self._level(policy, tokens, at, t) - 1.0, t
        return tokens, at

    def nearest(self, x: float) -> float | None:
        """The distance in signed time from ``x`` to the closest recorded time (None: none)."""
        candidates = [abs(x - t) for t in self.times]
        if self.at is not None:
            candidates.append(abs(x - self.at))
        return min(candidates) if candidates else None

    def idle(self, policy: BucketPolicy, now: float) -> bool:
        """Nothing open and the bucket full again: the same as a key never seen."""
        return not self.times and self._level(policy, self.tokens, self.at, now) >= policy.capacity

    def export(self) -> list[Any]:
        return [self.tokens, self.at, list(self.times)]

    @classmethod
    def restore(cls, value: Any) -> Schedule:
        """The inverse of :meth:`export`; ValueError for anything else."""
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            raise ValueError(f"a signed schedule is [tokens, at, times], got {value!r}")
        tokens, at, times = value
        for number in (tokens, at):
            if number is not None and (isinstance(number, bool) or not isinstance(number, (int, float))):
                raise ValueError(f"a signed schedule's level and time are numbers, got {value!r}")
        if not isinstance(times, (list, tuple)) or any(
                isinstance(t, bool) or not isinstance(t, (int, float)) for t in times):
            raise ValueError(f"a signed schedule's times are numbers, got {times!r}")
        return cls(None if tokens is None else float(tokens), None if at is None else float(at),
                   sorted(float(t) for t in times))


#: Schedules kept before the idle ones are dropped (they equal a key never seen).
_FORGET_ABOVE = 4 * 65536


class SignedBudgets:
    """One :class:`Schedule` per key, each key under the policy ``policy_of(key)`` gives."""

    def __init__(self, policy_of: Callable[[Any], BucketPolicy],
                 schedules: dict[Any, Schedule] | None = None) -> None:
        self.policy_of = policy_of
        #: Shared with the owner of the state when given (the per-pool state persists the core's).
        self._schedules: dict[Any, Schedule] = schedules if schedules is not None else {}

    def __len__(self) -> int:
        return len(self._schedules)

    def schedule(self, key: Hashable) -> Schedule | None:
        return self._schedules.get(key)

    def _folded(self, key: Hashable, now: float) -> Schedule | None:
        schedule = self._schedules.get(key)
        if schedule is not None:
            schedule.fold(self.policy_of(key), now)
        return schedule

    def admits(self, key: Hashable, signed: float, now: float) -> bool:
        schedule = self._schedules.get(key)
        if schedule is None:
            return True                       # a key never seen, or forgotten idle: a full bucket
        policy = self.policy_of(key)
        schedule.fold(policy, now)
        return schedule.admits(policy, signed)

    def charge(self, key: Hashable, signed: float, now: float) -> None:
        """Record a message of ``key`` signed at ``signed`` (checked by :meth:`admits`)."""
        policy = self.policy_of(key)
        schedule = self._schedules.get(key)
        if schedule is None:
            schedule = self._schedules[key] = Schedule()
        else:
            schedule.fold(policy, now)
        schedule.add(policy, signed)
        if len(self._schedules) > _FORGET_ABOVE:
            self._forget_idle(now)

    def retry_after(self, key: Hashable, signed: float, now: float) -> int:
        """Whole seconds until a message of ``key`` signed that much later than ``signed`` passes."""
        schedule = self._folded(key, now)
        if schedule is None:
            return 0
        return math.ceil(schedule.wait(self.policy_of(key), signed) - _EPSILON)

    def gap(self, key: Hashable, signed: float) -> float:
        """Signed seconds between ``signed`` and the closest accepted message of ``key``."""
        schedule = self._schedules.get(key)
        found = None if schedule is None else schedule.nearest(signed)
        return 0.0 if found is None else found

    def _forget_idle(self, now: float) -> None:
        for key in [k for k, s in self._schedules.items() if s.idle(self.policy_of(k), now)]:
            del self._schedules[key]


class RateRule(Protocol):
    """Check 3 as an ingress applies it: a refusal for a message, and the charge of one accepted."""

    def refusal(self, message: DmqMessage, now: float) -> SigValidationError | None:
        """Why ``message`` may not be accepted at wall time ``now`` (None: it may)."""

    def charge(self, message: DmqMessage, now: float) -> None:
        """``message`` is accepted (or parked, for a topic): it counts against its pool from now on."""


class PoolSpacing:
    """The core's check 3: one message per ``delay`` seconds of signed time per pool.

    ``SigTooFrequent``'s second argument is the signed distance to the pool's closest
    accepted message (the reference's "since last", on signed time). A ``delay`` of 0 is no
    rate limit (a topic network's validator, whose ingress brings its own budgets).
    """

    def __init__(self, schedules: dict[bytes, Schedule], delay: float) -> None:
        policy = BucketPolicy(1, delay) if delay > 0 else None
        self.budgets = SignedBudgets(lambda _pool: policy, schedules)
        self.delay = delay

    def refusal(self, message: DmqMessage, now: float) -> SigValidationError | None:
        if self.delay <= 0:
            return None
        pool_id = message.pool_id
        if self.budgets.admits(pool_id, message.expires_at, now):
            return None
        return SigTooFrequent(pool_id, self.budgets.gap(pool_id, message.expires_at))

    def charge(self, message: DmqMessage, now: float) -> None:
        if self.delay > 0:
            self.budgets.charge(message.pool_id, message.expires_at, now)
