"""Publication by the node (docs/topics-design.md 2.7): wrapping, signing, and the priority queue.

A client (or an adapter) hands a complete adapter body; the node picks ``kesPeriod`` (now)
and ``expiresAt`` (the adapter's ``expires_at`` hook, never past ``now + M``), signs with its
pool's key and runs the message through the whole ingress pipeline as its own publication.
When the publication's turn comes, the adapter's ``for_signing`` hook gives the body to sign
from the committed state (a Blocklace block gets its creator fields there, or is answered
with the block the pool already made). A failure of that code refuses the one publication
(:mod:`topics.containment`): the queue, served by a task of the node, goes on.
Publications wait in one queue served by priority (epoch messages first, refreshes last), in
arrival order within a priority; each topic spends its own bucket of the pool
(:mod:`topics.bucket`), so the first entry whose topic has a token is served and a topic out
of budget holds back only its own publications. Budgets are on the signed ``expiresAt``, so
a publication's ``expiresAt`` is chosen when its turn comes (as it is signed), and the queue
asks whether a message signed now would pass. A publication that cannot be scheduled
within 30 s (P) is ``rate_limited`` with a retry-after.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import trio

from dmq.message import MAX_BODY_SIZE, MIN_BODY_SIZE
from dmq.validation import TopicRejected

from .adapter import AlreadyPublished, Priority, PublishOutcome, Reject, TopicAdapter
from .carried import RAW
from .classify import TopicClass, classify
from .containment import Contained
from .ingress import TopicIngress
from .reasons import (
    MALFORMED,
    NO_SIGNER,
    NOT_AUTHORIZED,
    RATE_LIMITED,
    TOO_LARGE,
    TOPIC_NOT_CARRIED,
    UNKNOWN_TOPIC,
    RejectReason,
    reason_by_code,
)
from .signer import NodeSigner, SigningError

__all__ = ["NodePublisher", "MAX_NETWORK_LIFETIME", "SCHEDULE_LIMIT", "PER_KEY_LIMIT"]

#: M: the topic maximum network lifetime (P), below the core's strict 1800 s with room for skew.
MAX_NETWORK_LIFETIME = 1740
#: How long a client publication may wait for its pool's rate budget (P).
SCHEDULE_LIMIT = 30.0
#: Publications per local key per window (P: 20 per 10 minutes).
PER_KEY_LIMIT = (20, 600.0)


@dataclass(frozen=True, slots=True)
class _Prepared:
    adapter: TopicAdapter | None
    inner: Any
    priority: Priority | None
    key: bytes | None


def _failed(failure: str) -> PublishOutcome:
    """The answer to a publication whose processing failed (the failure is traced apart)."""
    return PublishOutcome(None, Reject(MALFORMED, f"failed: {failure}"))


@dataclass(order=True)
class _Queued:
    priority: int
    serial: int
    body: bytes = field(compare=False)
    queued_at: float = field(compare=False)
    adapter: TopicAdapter | None = field(compare=False)     # None: a raw body
    inner: Any = field(compare=False)
    done: trio.Event = field(compare=False, default_factory=trio.Event)
    outcome: PublishOutcome | None = field(compare=False, default=None)

    @property
    def topic(self) -> str:
        """The topic whose bucket the publication spends."""
        return RAW if self.adapter is None else self.adapter.name

    def expires_at(self, now: float) -> int:
        """The ``expiresAt`` of this publication signed at ``now``."""
        return _expires_at(self.adapter, self.inner, now)


def _expires_at(adapter: TopicAdapter | None, inner: Any, now: float) -> int:
    """``expiresAt`` of a publication signed at ``now``: its adapter's hook, never past ``now + M``."""
    bound = math.floor(now) + MAX_NETWORK_LIFETIME
    return bound if adapter is None else min(bound, int(adapter.expires_at(inner, now)))


class NodePublisher:
    """Publishes on behalf of local clients and adapters; ``run()`` serves the queue."""

    def __init__(self, ingress: TopicIngress, signer: NodeSigner | None, *,
                 schedule_limit: float = SCHEDULE_LIMIT, per_key: tuple[int, float] = PER_KEY_LIMIT) -> None:
        self.ingress = ingress
        self.signer = signer
        self.schedule_limit = schedule_limit
        self.per_key = per_key
        self._heap: list[_Queued] = []
        self._serial = itertools.count()
        self._wake = trio.Event()
        self._per_key: dict[bytes, deque[float]] = {}

    @property
    def clock(self) -> Any:
        return self.ingress.validator.clock

    # -- preparing --------------------------------------------------------------------------

    def _prepare(self, body: bytes) -> _Prepared | Reject:
        """``expiresAt`` for ``body``, its adapter and inner message, the priority the adapter
        gives it and its publisher key (2.7), or why it cannot be published."""
        if self.signer is None:
            return Reject(NO_SIGNER, "this node has no KES key to sign with")
        if len(body) > MAX_BODY_SIZE:
            return Reject(TOO_LARGE, f"body of {len(body)} bytes exceeds {MAX_BODY_SIZE}")
        if len(body) < MIN_BODY_SIZE:
            return Reject(MALFORMED, f"body of {len(body)} bytes is below {MIN_BODY_SIZE}")
        found = classify(body, self.ingress._tags)
        if found.kind is TopicClass.RAW:
            return _Prepared(None, None, None, None) if self.ingress.carried.raw else Reject(TOPIC_NOT_CARRIED)
        if found.kind is TopicClass.UNKNOWN:
            return Reject(UNKNOWN_TOPIC)
        adapter = self.ingress.adapters.get(found.name)
        if adapter is None:
            return Reject(TOPIC_NOT_CARRIED)
        inner = adapter.decode(body)
        if isinstance(inner, Reject):
            return inner
        return _Prepared(adapter, inner, adapter.publication_priority(inner), adapter.publication_key(inner))

    def _charge_key(self, key: bytes | None) -> Reject | None:
        if key is None:
            return None
        limit, window = self.per_key
        now = self.clock.monotonic()
        times = self._per_key.setdefault(key, deque())
        while times and times[0] <= now - window:
            times.popleft()
        if len(times) >= limit:
            return Reject(RATE_LIMITED, "per-key publication limit",
                          retry_after=math.ceil(times[0] + window - now))
        times.append(now)
        return None

    # -- publishing -------------------------------------------------------------------------

    async def publish(self, body: bytes, priority: Priority | None = None, *,
                      key: bytes | None = None, allowed: bool = True, client: bool = False) -> PublishOutcome:
        """Wrap, sign and submit ``body``; the outcome once the pipeline has decided.

        ``priority`` None: the one the body's adapter gives it, else a client publication's.
        ``client``: a local client's publication, charged to the publisher key its adapter
        names (UPSYCLE source, group or service, dmsg static key) unless ``key`` is given.
        """
        if not allowed:
            return PublishOutcome(None, Reject(NOT_AUTHORIZED))
        with self._contained(body) as guard:
            prepared = self._prepare(bytes(body))
        if guard.failure is not None:
            return _failed(guard.failure)
        if isinstance(prepared, Reject):
            return PublishOutcome(None, prepared)
        if client and key is None:
            key = prepared.key
        if priority is None:
            priority = Priority.CLIENT if prepared.priority is None else prepared.priority
        refused = self._charge_key(key)
        if refused is not None:
            return PublishOutcome(None, refused)
        entry = _Queued(int(priority), next(self._serial), bytes(body), self.clock.monotonic(),
                        prepared.adapter, prepared.inner)
        heapq.heappush(self._heap, entry)
        self._wake.set()
        await entry.done.wait()
        assert entry.outcome is not None
        return entry.outcome

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the queue: highest priority first, each when the pool's bucket has a token."""
        task_status.started()
        while True:
            if not self._heap:
                await self._wake.wait()
                self._wake = trio.Event()
                continue
            await self._serve_ready()

    @property
    def _pool(self) -> bytes:
        return self.signer.pool_id if self.signer is not None else b""

    def _ready(self, entry: _Queued, now: float) -> bool:
        """Would ``entry``, signed at wall time ``now``, pass its topic's budget?"""
        return self.ingress.bucket.available(self._pool, entry.expires_at(now), entry.topic, now)

    def _retry_after(self, entry: _Queued, now: float) -> int:
        return self.ingress.bucket.retry_after(self._pool, entry.expires_at(now), entry.topic, now)

    def _next_ready(self, now: float) -> _Queued | None:
        """The first entry in priority order whose topic's bucket has a token, taken off the queue."""
        if self._ready(self._heap[0], now):
            return heapq.heappop(self._heap)
        for entry in sorted(self._heap):
            if self._ready(entry, now):
                self._heap.remove(entry)
                heapq.heapify(self._heap)
                return entry
        return None

    async def _serve_ready(self) -> None:
        self._expire_waiting(self.clock.monotonic())
        if not self._heap:
            return
        now = self.clock.now()
        entry = self._next_ready(now)
        if entry is None:
            wait = min(self._retry_after(e, now) for e in self._heap)
            with trio.move_on_after(max(0.01, wait)):
                await self._wake.wait()
            self._wake = trio.Event()
            return
        with self._contained(entry.body) as guard:
            entry.outcome = await self._submit(entry, now)
        if guard.failure is not None:
            entry.outcome = _failed(guard.failure)
        entry.done.set()

    def _contained(self, body: bytes) -> Contained:
        """The boundary of one publication (:mod:`topics.containment`)."""
        found = classify(body, self.ingress._tags)
        return Contained(self.ingress.tracer, "publication", f"{found.name} body of {len(body)} bytes")

    def _expire_waiting(self, now: float) -> None:
        """Client publications waiting past the schedule limit are refused with a retry-after."""
        keep = []
        for entry in self._heap:
            if entry.priority >= Priority.CLIENT and now - entry.queued_at > self.schedule_limit:
                retry = max(1, self._retry_after(entry, self.clock.now()))
                entry.outcome = PublishOutcome(None, Reject(RATE_LIMITED, "no rate budget", retry_after=retry))
                entry.done.set()
            else:
                keep.append(entry)
        if len(keep) != len(self._heap):
            self._heap = keep
            heapq.heapify(self._heap)

    async def _submit(self, entry: _Queued, now: float) -> PublishOutcome:
        """Sign ``entry`` with the ``expiresAt`` its budget was found to have room for at ``now``."""
        assert self.signer is not None
        body = entry.body
        if entry.adapter is not None:
            with self.ingress.dbs.reading(entry.adapter.name) as view:
                built = entry.adapter.for_signing(body, entry.inner, view, self.clock.now())
            if isinstance(built, Reject):
                return PublishOutcome(None, built)
            if isinstance(built, AlreadyPublished):
                return PublishOutcome(built.dmq_id, None, built.inner_id)
            body = built
        try:
            message = self.signer.sign(body, entry.expires_at(now))
        except SigningError as exc:
            return PublishOutcome(None, Reject(NO_SIGNER, str(exc)))
        outcome = await self.ingress.submit_own(message.raw)
        if outcome.error is None:
            return PublishOutcome(message.message_id, None, outcome.inner_id)
        error = outcome.error
        if isinstance(error, TopicRejected):
            reason = reason_by_code(error.code) or RejectReason(error.code, error.reason)
            return PublishOutcome(None, Reject(reason, error.detail))
        # A DMQ rule refused the node's own message (a duplicate, a key out of its period):
        # there is no topic code for it, so it is reported as malformed with the core's text.
        return PublishOutcome(None, Reject(MALFORMED, error.show()))
