"""Solicited re-publication, the remapping of "pull" (docs/topics-design.md 2.8), as a piece adapters reuse.

DMQ has no request addressed to one node and an expired message cannot be diffused again,
so history travels by request and answer, both ordinary topic messages:

* :class:`AnswerBook` keeps, in the adapter's own database, how many answers were accepted
  per (request DMQ id, item id), so ``validate`` can refuse the (R+1)-th (``answer_quota``)
  and ``on_accept`` counts deterministically (C5);
* :class:`Answerer` waits a uniform random delay in [0, max_delay) and publishes an answer
  only if fewer than R answers were accepted meanwhile (answers at priority 2);
* :class:`Requester` sends at most one request per missing item at a time, retries after
  60 s, 3 times, and keeps per (pool, topic key) request quotas (6 per 10 minutes).

Numbers are the (P) ones of docs/topics-design.md 2.8; adapters may pass others.
"""

from __future__ import annotations

import random
import struct
from collections import deque
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import trio

from .adapter import AdapterTxn, Priority, PublishOutcome, StoreView

__all__ = [
    "ANSWER_QUOTA",
    "REQUEST_LIFETIME",
    "ANSWER_DELAY",
    "RETRY_AFTER",
    "RETRIES",
    "REQUEST_QUOTA",
    "ANSWER_WAIT",
    "AnswerBook",
    "Answerer",
    "Requester",
    "RequestQuota",
]

ANSWER_QUOTA = 2                 # R
REQUEST_LIFETIME = 120           # network lifetime of a request, seconds
ANSWER_DELAY = 5.0               # answers wait uniform [0, 5 s)
ANSWER_WAIT = 30.0               # an answer that overtook its request is deferred this long
RETRY_AFTER = 60.0
RETRIES = 3
REQUEST_QUOTA = (6, 600.0)       # requests per (pool, topic key) per window
_COUNT = struct.Struct(">I")


class AnswerBook:
    """Accepted-answer counts in the adapter database ``db`` (key: request id + item id)."""

    def __init__(self, db: str, quota: int = ANSWER_QUOTA) -> None:
        self.db = db
        self.quota = quota

    def count(self, view: StoreView, request_id: bytes, item_id: bytes) -> int:
        raw = view.get(self.db, request_id + item_id)
        return 0 if raw is None else _COUNT.unpack(raw)[0]

    def has_room(self, view: StoreView, request_id: bytes, item_id: bytes) -> bool:
        return self.count(view, request_id, item_id) < self.quota

    def record(self, txn: AdapterTxn, request_id: bytes, item_id: bytes) -> int:
        """Count one accepted answer (inside ``on_accept``); the new count."""
        count = self.count(txn, request_id, item_id) + 1
        txn.put(self.db, request_id + item_id, _COUNT.pack(count))
        return count

    def forget_request(self, txn: AdapterTxn, request_id: bytes) -> None:
        """Drop a request's counts (pruning, once the request expired)."""
        for key, _ in list(txn.scan(self.db, request_id)):
            txn.delete(self.db, key)


@dataclass
class Answerer:
    """Publishes answers after a random delay unless the quota filled up meanwhile."""

    publish: Callable[[bytes, Priority], Awaitable[PublishOutcome]]
    room: Callable[[bytes, bytes], bool]          # (request id, item id) -> fewer than R accepted?
    max_delay: float = ANSWER_DELAY
    rng: random.Random = field(default_factory=random.Random)

    async def answer(self, request_id: bytes, item_id: bytes, body: bytes) -> PublishOutcome | None:
        delay = self.rng.uniform(0.0, self.max_delay) if self.max_delay > 0 else 0.0
        if delay:
            await trio.sleep(delay)
        if not self.room(request_id, item_id):
            return None
        return await self.publish(body, Priority.ANSWER)


class RequestQuota:
    """At most ``limit`` requests per key in a sliding ``window`` of seconds."""

    def __init__(self, limit: int = REQUEST_QUOTA[0], window: float = REQUEST_QUOTA[1]) -> None:
        self.limit = limit
        self.window = window
        self._times: dict[Any, deque[float]] = {}

    def allow(self, key: Any, now: float) -> bool:
        times = self._times.setdefault(key, deque())
        while times and times[0] <= now - self.window:
            times.popleft()
        if len(times) >= self.limit:
            return False
        times.append(now)
        return True

    def retry_after(self, key: Any, now: float) -> int:
        times = self._times.get(key)
        if not times or len(times) < self.limit:
            return 0
        return max(1, int(times[0] + self.window - now + 0.999))


@dataclass
class _Wanted:
    tries: int = 0
    next_at: float = 0.0


class Requester:
    """Which missing items to ask for now: one outstanding request per item, bounded retries."""

    def __init__(self, retry_after: float = RETRY_AFTER, retries: int = RETRIES, batch: int = 8) -> None:
        self.retry_after = retry_after
        self.retries = retries
        self.batch = batch
        self._wanted: dict[bytes, _Wanted] = {}

    def want(self, item_ids: Iterable[bytes]) -> None:
        for item in item_ids:
            self._wanted.setdefault(item, _Wanted())

    def received(self, item_id: bytes) -> None:
        self._wanted.pop(item_id, None)

    def due(self, now: float) -> list[bytes]:
        """Items to put in a request now (at most ``batch``); marks them as requested."""
        out = []
        for item, wanted in list(self._wanted.items()):
            if len(out) >= self.batch:
                break
            if wanted.next_at > now:
                continue
            if wanted.tries > self.retries:
                del self._wanted[item]       # given up: the first try and its retries failed
                continue
            wanted.tries += 1
            wanted.next_at = now + self.retry_after
            out.append(item)
        return out

    def __len__(self) -> int:
        return len(self._wanted)
