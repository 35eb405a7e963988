"""Per-topic token buckets of each pool, which replace the 60 s spacing rule on topic networks
(docs/topics-design.md 2.1.4).

Causal adapters reorder messages (a block waits for its predecessors), and a spacing rule
punishes a pool whose two messages arrive close together after such a wait. A bucket admits
bursts up to ``capacity`` and a long-run rate of one message per ``refill`` seconds. It is
charged once, when a DMQ id is first committed or parked (a re-run of a deferred message is
not charged again); an adapter reject charges nothing, so core state stays untouched (C4).
Time is the injected monotonic clock.

Each pool has one bucket **per topic** (``raw`` or an adapter's name), each with its own
policy, so that one application's traffic (a burst of Blocklace events) cannot spend the
budget another one needs (the pool's dmsg entry refreshes). The defaults split the single
budget the design gives a pool (8, one per 10 s) between the topics without raising the
pool's total rate: the worst case that the capacity model prices (docs/capacity/model.md,
section 6) stays where the design put it. Every node of a topic network must use the same
budgets: a message over budget at one node is not forwarded by it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = ["BucketPolicy", "TokenBucket", "DEFAULT_BUCKET", "DEFAULT_BUDGETS", "budgets_for"]


@dataclass(frozen=True, slots=True)
class BucketPolicy:
    """``capacity`` tokens, one more every ``refill`` seconds."""

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


#: The design's single per-pool bucket (P: 8 tokens, one every 10 s): the budget of a topic
#: that has none of its own (a name no default covers).
DEFAULT_BUCKET = BucketPolicy()

#: Each topic's share of the design's 0.1 message/s per pool (docs/capacity/model.md section 6):
#: the two applications clients publish through get 0.04/s each, dmsg (one entry per
#: local key per 300 s window) and raw 0.01/s each. Rates sum to DEFAULT_BUCKET's.
DEFAULT_BUDGETS: Mapping[str, BucketPolicy] = {
    "blocklace": BucketPolicy(8, 25.0),
    "upsycle": BucketPolicy(8, 25.0),
    "dmsg": BucketPolicy(4, 100.0),
    "raw": BucketPolicy(4, 100.0),
}


def budgets_for(names: Iterable[str], configured: Mapping[str, BucketPolicy] | None = None,
                every: BucketPolicy | None = None) -> dict[str, BucketPolicy]:
    """The policy of each topic in ``names``: its ``configured`` one, else ``every`` (one
    budget for every topic, when an operator gave one), else its default."""
    configured = configured or {}
    out = {}
    for name in names:
        if name in configured:
            out[name] = configured[name]
        elif every is not None:
            out[name] = every
        else:
            out[name] = DEFAULT_BUDGETS.get(name, DEFAULT_BUCKET)
    return out


class TokenBucket:
    """The buckets of every pool, one per topic; a pool never seen has full buckets.

    ``policies`` maps topic names to their policy; a topic not named (an unknown tag, which
    is refused later anyway) is under ``default``.
    """

    def __init__(self, default: BucketPolicy = DEFAULT_BUCKET,
                 policies: Mapping[str, BucketPolicy] | None = None) -> None:
        self.default = default
        self.policies = dict(policies or {})
        self._state: dict[tuple[str, bytes], tuple[float, float]] = {}   # (topic, pool) -> (tokens, at)

    def policy(self, topic: str) -> BucketPolicy:
        return self.policies.get(topic, self.default)

    def tokens(self, pool: bytes, monotonic: float, topic: str) -> float:
        """Tokens the pool holds for ``topic`` at ``monotonic`` (a fraction: a token is refilling)."""
        policy = self.policy(topic)
        state = self._state.get((topic, pool))
        if state is None:
            return float(policy.capacity)
        tokens, at = state
        return min(float(policy.capacity), tokens + max(0.0, monotonic - at) / policy.refill)

    def available(self, pool: bytes, monotonic: float, topic: str) -> bool:
        return self.tokens(pool, monotonic, topic) >= 1.0

    def charge(self, pool: bytes, monotonic: float, topic: str) -> None:
        """Take one of the pool's tokens for ``topic`` (the caller checked :meth:`available`)."""
        tokens = self.tokens(pool, monotonic, topic)
        if tokens < 1.0:
            raise ValueError("charging an empty bucket")
        self._state[(topic, pool)] = (tokens - 1.0, monotonic)
        if len(self._state) > 4 * 65536:
            self._forget_full(monotonic)

    def retry_after(self, pool: bytes, monotonic: float, topic: str) -> int:
        """Whole seconds until the pool has a token for ``topic`` again (0 when it has one)."""
        missing = 1.0 - self.tokens(pool, monotonic, topic)
        return 0 if missing <= 0 else math.ceil(missing * self.policy(topic).refill)

    def _forget_full(self, monotonic: float) -> None:
        """Drop buckets that refilled: they are indistinguishable from unseen ones."""
        full = [key for key in self._state
                if self.tokens(key[1], monotonic, key[0]) >= self.policy(key[0]).capacity]
        for key in full:
            del self._state[key]
