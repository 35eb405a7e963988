"""Dropping messages a consumer has already delivered, as Mithril's aggregator does.

The node replays its whole mempool to every new notification connection (docs/protocol/local-protocols.md 8.2), and
the aggregator reconnects after any error, so the same message arrives again and again.
``DmqConsumerClientDeduplicator`` (``internal/mithril-dmq/src/consumer/client/deduplicator.rs``)
remembers Blake2b-512 of each delivered body with the whole second it was first seen, forgets
entries older than the TTL (1800 s, the longest a message can live), and passes on only bodies
it has not seen. Keying on the body, not the message id, also folds together two messages that
carry the same signature (re-signed at another period or expiry).
"""

from __future__ import annotations

import hashlib
import math
from typing import Callable, Iterable, TypeVar

from dmq.clock import Clock

__all__ = ["DEFAULT_DEDUP_TTL", "Deduplicator", "body_key"]

#: ``DMQ_MESSAGE_DEDUPLICATOR_TTL``.
DEFAULT_DEDUP_TTL = 1800

T = TypeVar("T")


def body_key(body: bytes) -> bytes:
    return hashlib.blake2b(body, digest_size=64).digest()


class Deduplicator:
    """Remembers what was delivered for ``ttl`` seconds of the injected wall clock."""

    def __init__(self, clock: Clock, ttl: int = DEFAULT_DEDUP_TTL) -> None:
        if ttl < 0:
            raise ValueError(f"a TTL is non-negative, got {ttl}")
        self.clock = clock
        self.ttl = ttl
        self._seen: dict[bytes, int] = {}

    def __len__(self) -> int:
        return len(self._seen)

    def forget_expired(self) -> None:
        """Drop entries seen more than ``ttl`` whole seconds ago (Mithril's strict ``>``)."""
        now = math.floor(self.clock.now())
        self._seen = {key: seen for key, seen in self._seen.items() if not now - seen > self.ttl}

    def fresh(self, items: Iterable[T], body_of: Callable[[T], bytes]) -> list[T]:
        """The items whose body was not seen yet (the first of equal bodies in a batch wins)."""
        self.forget_expired()
        now = math.floor(self.clock.now())
        kept = []
        for item in items:
            key = body_key(body_of(item))
            if key in self._seen:
                continue
            self._seen[key] = now
            kept.append(item)
        return kept
