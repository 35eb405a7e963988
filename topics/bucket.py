"""The per-pool token bucket that replaces the 60 s spacing rule on topic networks (docs/topics-design.md 2.1.4).

Causal adapters reorder messages (a block waits for its predecessors), and a spacing rule
punishes a pool whose two messages arrive close together after such a wait. A bucket admits
bursts up to ``capacity`` and a long-run rate of one message per ``refill`` seconds. It is
charged once, when a DMQ id is first committed or parked (a re-run of a deferred message is
not charged again); an adapter reject charges nothing, so core state stays untouched (C4).
Time is the injected monotonic clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["BucketPolicy", "TokenBucket", "DEFAULT_BUCKET"]


@dataclass(frozen=True, slots=True)
class BucketPolicy:
    """``capacity`` tokens, one more every ``refill`` seconds (P: 8 and 10 s)."""

    capacity: int = 8
    refill: float = 10.0

    def __post_init__(self) -> None:
        if self.capacity < 1:
            raise ValueError(f"a token bucket holds at least one token, got {self.capacity}")
        if not self.refill > 0:
            raise ValueError(f"a token bucket refills after a positive number of seconds, got {self.refill}")


DEFAULT_BUCKET = BucketPolicy()


class TokenBucket:
    """One bucket per pool id; a pool never seen has a full bucket."""

    def __init__(self, policy: BucketPolicy = DEFAULT_BUCKET) -> None:
        self.policy = policy
        self._state: dict[bytes, tuple[float, float]] = {}   # pool -> (tokens, at)

    def tokens(self, pool: bytes, monotonic: float) -> float:
        """Tokens the pool holds at ``monotonic`` (a fraction means a token is refilling)."""
        state = self._state.get(pool)
        if state is None:
            return float(self.policy.capacity)
        tokens, at = state
        return min(float(self.policy.capacity), tokens + max(0.0, monotonic - at) / self.policy.refill)

    def available(self, pool: bytes, monotonic: float) -> bool:
        return self.tokens(pool, monotonic) >= 1.0

    def charge(self, pool: bytes, monotonic: float) -> None:
        """Take one token (the caller checked :meth:`available`)."""
        tokens = self.tokens(pool, monotonic)
        if tokens < 1.0:
            raise ValueError("charging an empty bucket")
        self._state[pool] = (tokens - 1.0, monotonic)
        if len(self._state) > 4 * 65536:
            self._forget_full(monotonic)

    def retry_after(self, pool: bytes, monotonic: float) -> int:
        """Whole seconds until the pool has a token again (0 when it has one)."""
        missing = 1.0 - self.tokens(pool, monotonic)
        return 0 if missing <= 0 else math.ceil(missing * self.policy.refill)

    def _forget_full(self, monotonic: float) -> None:
        """Drop pools whose bucket refilled: they are indistinguishable from unseen ones."""
        full = [p for p in self._state if self.tokens(p, monotonic) >= self.policy.capacity]
        for pool in full:
            del self._state[pool]
