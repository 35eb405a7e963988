"""Per-topic token buckets of each pool, which replace the 60 s spacing rule on topic networks
(docs/topics-design.md 2.1.4).

Causal adapters reorder messages (a block waits for its predecessors), and a spacing rule
punishes a pool whose two messages arrive close together after such a wait. A bucket admits
bursts up to ``capacity`` and a long-run rate of one message per ``refill`` seconds. Like the
core's check 3 it is measured on the times the pool **signed** (``expiresAt``), never on
arrival (:mod:`dmq.validation.rate`): a peer replaying a pool's kept blocks to a node that
joins late, starts empty or comes back from a partition delivers all of them at once, and
they pass, because the pool's own node admitted each of them when it was new; a pool that signs
beyond its budget is refused in whatever order its messages come. It is charged once, when a
DMQ id is first committed or parked (a re-run of a deferred message is not charged again); an
adapter reject charges nothing, so core state stays untouched (C4).

Each pool has one bucket **per topic** (``raw`` or an adapter's name), each with its own
policy, so that one application's traffic (a burst of Blocklace events) cannot spend the
budget another one needs (the pool's dmsg entry refreshes). The defaults split the single
budget the design gives a pool (8, one per 10 s) between the topics without raising the
pool's total rate: the worst case that the capacity model prices (docs/capacity/model.md,
section 6) stays where the design put it. Every node of a topic network must use the same
budgets: a message over budget at one node is not forwarded by it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dmq.validation import BucketPolicy, SignedBudgets

__all__ = ["BucketPolicy", "TokenBucket", "DEFAULT_BUCKET", "DEFAULT_BUDGETS", "budgets_for"]


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
    """The buckets of every pool, one per topic, over signed times; a pool never seen has full buckets.

    ``policies`` maps topic names to their policy; a topic not named (an unknown tag, which
    is refused later anyway) is under ``default``. ``signed`` is a message's ``expiresAt``
    (or, for a publication not signed yet, the one it would be signed with); ``now`` is the
    wall clock, before which no message can be signed any more (check 1).
    """

    def __init__(self, default: BucketPolicy = DEFAULT_BUCKET,
                 policies: Mapping[str, BucketPolicy] | None = None) -> None:
        self.default = default
        self.policies = dict(policies or {})
        self._budgets = SignedBudgets(lambda key: self.policy(key[0]))

    def policy(self, topic: str) -> BucketPolicy:
        return self.policies.get(topic, self.default)

    def available(self, pool: bytes, signed: float, topic: str, now: float) -> bool:
        """Would a message of ``pool`` in ``topic`` signed at ``signed`` pass?"""
        return self._budgets.admits((topic, pool), signed, now)

    def charge(self, pool: bytes, signed: float, topic: str, now: float) -> None:
        """Count a message of ``pool`` in ``topic`` signed at ``signed`` (the caller checked :meth:`available`)."""
        self._budgets.charge((topic, pool), signed, now)

    def retry_after(self, pool: bytes, signed: float, topic: str, now: float) -> int:
        """Whole seconds by which ``signed`` must be later for the message to pass (0 when it passes)."""
        return self._budgets.retry_after((topic, pool), signed, now)
