"""Pending buffers for deferred messages and the cache of ids an adapter rejected (docs/topics-design.md 2.5).

A deferred message is neither stored nor forwarded: it waits here until every id it misses
has been accepted, then the pipeline re-runs validation and commit for it. Buffers are
bounded per adapter and evict the oldest first. Ids rejected by an adapter are remembered
until their ``expiresAt`` so that re-offers are dropped without verifying again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from dmq.message import DmqMessage

from .adapter import DmqFacts

__all__ = ["Parked", "PendingBuffer", "RejectedCache", "DEFAULT_REJECTED_CACHE"]

#: Bound of the rejected-id cache (P).
DEFAULT_REJECTED_CACHE = 65_536


@dataclass(eq=False)
class Parked:
    message: DmqMessage
    adapter: str
    inner: Any
    facts: DmqFacts
    missing: set[bytes]
    deadline: float
    origin: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    #: Whose share of the buffer this message uses (the adapter's ``pending_key``), or None.
    key: bytes | None = None


class PendingBuffer:
    """One adapter's parked messages, indexed by the ids they miss.

    ``per_key`` also bounds the messages of one key (a Blocklace creator): a publisher whose
    blocks point at ids that never arrive then evicts its own oldest ones, not everybody's.
    """

    def __init__(self, limit: int, per_key: int | None = None) -> None:
        if limit < 1:
            raise ValueError(f"a pending buffer holds at least one message, got {limit}")
        if per_key is not None and per_key < 1:
            raise ValueError(f"a pending buffer holds at least one message per key, got {per_key}")
        self.limit = limit
        self.per_key = per_key
        self._entries: OrderedDict[bytes, Parked] = OrderedDict()
        self._waiting: dict[bytes, set[bytes]] = {}
        self._by_key: dict[bytes, OrderedDict[bytes, None]] = {}

    def held_for(self, key: bytes) -> int:
        """How many parked messages have ``key``."""
        return len(self._by_key.get(key, ()))

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, dmq_id: bytes) -> bool:
        return dmq_id in self._entries

    def park(self, parked: Parked) -> list[Parked]:
        """Park ``parked``; return what was evicted to make room (oldest first)."""
        dmq_id = parked.facts.dmq_id
        self._remove(dmq_id)
        self._entries[dmq_id] = parked
        for missing in parked.missing:
            self._waiting.setdefault(missing, set()).add(dmq_id)
        evicted = []
        if parked.key is not None:
            mine = self._by_key.setdefault(parked.key, OrderedDict())
            mine[dmq_id] = None
            while self.per_key is not None and len(mine) > self.per_key:
                evicted.append(self._remove(next(iter(mine))))
        while len(self._entries) > self.limit:
            oldest = next(iter(self._entries))
            evicted.append(self._remove(oldest))
        return evicted

    def _remove(self, dmq_id: bytes) -> Parked | None:
        parked = self._entries.pop(dmq_id, None)
        if parked is not None:
            if parked.key is not None:
                mine = self._by_key.get(parked.key)
                if mine is not None:
                    mine.pop(dmq_id, None)
                    if not mine:
                        del self._by_key[parked.key]
            for missing in parked.missing:
                waiters = self._waiting.get(missing)
                if waiters is not None:
                    waiters.discard(dmq_id)
                    if not waiters:
                        del self._waiting[missing]
        return parked

    def satisfy(self, provided: Iterable[bytes]) -> list[Parked]:
        """Mark ``provided`` ids as accepted; remove and return the messages now complete."""
        ready: list[Parked] = []
        for ident in provided:
            for dmq_id in self._waiting.pop(ident, set()):
                parked = self._entries.get(dmq_id)
                if parked is None:
                    continue
                parked.missing.discard(ident)
                if not parked.missing:
                    self._remove(dmq_id)
                    ready.append(parked)
        return ready

    def expire(self, now: float) -> list[Parked]:
        """Remove and return the messages whose wait has run out."""
        gone = [p for p in self._entries.values() if p.deadline < now]
        for parked in gone:
            self._remove(parked.facts.dmq_id)
        return gone


class RejectedCache:
    """Ids refused by an adapter, until their DMQ ``expiresAt`` (bounded, oldest out first)."""

    def __init__(self, limit: int = DEFAULT_REJECTED_CACHE) -> None:
        self.limit = limit
        self._ids: OrderedDict[bytes, int] = OrderedDict()

    def __len__(self) -> int:
        return len(self._ids)

    def add(self, dmq_id: bytes, expires_at: int) -> None:
        self._ids[dmq_id] = expires_at
        self._ids.move_to_end(dmq_id)
        while len(self._ids) > self.limit:
            self._ids.popitem(last=False)

    def holds(self, dmq_id: bytes, now: float) -> bool:
        expires_at = self._ids.get(dmq_id)
        if expires_at is None:
            return False
        if now > expires_at:
            del self._ids[dmq_id]
            return False
        return True
