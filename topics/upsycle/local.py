"""UPSYCLE's local operations as protocol 1000 reaches them (docs/topics-design.md 3.4, 4.5, 4.6).

The adapter's operations (:class:`~topics.upsycle.adapter.UpsycleAdapter`) work inside a
transaction the caller opens. Here each runs in a write transaction of its own, in a worker
thread, under the ingress lock: a JOIN is ordered against message acceptance, so a message
is queued for a subscriber exactly when it arrived after the subscriber's JOIN (U3). After
each change, readers blocked on the subscription hub are woken (a queue may have grown).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Callable

import trio

from topics.adapter import Reject

from .adapter import UpsycleAdapter
from .membership import Ack, Detail
from .queues import QueuedDelivery
from .wire import Envelope

__all__ = ["UpsycleLocal"]


class UpsycleLocal:
    """The adapter's subscriber, membership and local-publication operations for one instance."""

    def __init__(self, adapter: UpsycleAdapter, ingress: Any) -> None:
        self.adapter = adapter
        self.ingress = ingress

    async def _write(self, fn: Callable[[Any], Any]) -> Any:
        async with self.ingress.lock:
            result = await trio.to_thread.run_sync(self.ingress.dbs.write, self.adapter.name, fn)
        self.ingress.hub.wake()
        return result

    def _now(self) -> float:
        return self.ingress.validator.clock.now()

    # -- subscribers and membership ------------------------------------------------------------

    async def attach(self, subscriber: bytes) -> Detail:
        """Create the durable subscriber K if needed (``MsgSubscribe`` with a valid auth)."""
        return await self._write(lambda txn: self.adapter.membership.ensure_subscriber(txn, subscriber))

    async def join(self, subscriber: bytes, group: bytes, local: bool, auth: list) -> Ack:
        now = self._now()
        return await self._write(lambda txn: self.adapter.join(txn, subscriber, group, local, auth, now))

    async def leave(self, subscriber: bytes, group: bytes, auth: list) -> Ack:
        now = self._now()
        return await self._write(lambda txn: self.adapter.leave(txn, subscriber, group, auth, now))

    async def pull(self, subscriber: bytes, group: bytes, ids: Sequence[bytes]) -> list[tuple[bytes, int]]:
        now = self._now()
        return await self._write(lambda txn: self.adapter.pull(txn, subscriber, group, list(ids), now))

    async def forget(self, subscriber: bytes) -> None:
        """``MsgUnsubscribe`` with ``forget``: K leaves every group and its queue is dropped."""
        state = self.adapter.state

        def forget(txn: Any) -> None:
            for group in list(state.groups_of(txn, subscriber)):
                state.remove_membership(txn, subscriber, group)
            held = state.subscriber(txn, subscriber)
            if held is None:
                return
            for item in list(state.queue(txn, subscriber)):
                held = state.remove(txn, subscriber, held, item)
            state.put_subscriber(txn, subscriber, held)

        await self._write(forget)

    # -- the subscriber's queue -------------------------------------------------------------------

    async def next_items(self, subscriber: bytes, cursor: int | None, max_items: int) -> list[QueuedDelivery]:
        """Items from ``cursor`` (None: the oldest unacknowledged); numbering them writes."""
        now = self._now()
        return await self._write(lambda txn: self.adapter.next_items(txn, subscriber, cursor, max_items, now))

    async def ack(self, subscriber: bytes, dseq: int) -> int:
        """Cumulative acknowledgement; :class:`~topics.upsycle.queues.AckError` if not delivered."""
        return await self._write(lambda txn: self.adapter.ack(txn, subscriber, dseq))

    def known(self, subscriber: bytes) -> bool:
        """Whether the durable subscriber K exists here (an attach would not create it)."""
        with self.ingress.dbs.reading(self.adapter.name) as view:
            return self.adapter.state.subscriber(view, subscriber) is not None

    def head(self, subscriber: bytes) -> int:
        """The ``dseq`` a fresh attachment starts from."""
        with self.ingress.dbs.reading(self.adapter.name) as view:
            return self.adapter.queues.head_dseq(view, subscriber)

    def has_ready(self, subscriber: bytes, cursor: int | None) -> bool:
        """Whether an item at or after ``cursor`` is waiting (numbered or not), unexpired."""
        now = self._now()
        with self.ingress.dbs.reading(self.adapter.name) as view:
            for item in self.adapter.state.queue(view, subscriber):
                if item.deadline > now and (item.dseq is None or cursor is None or item.dseq >= cursor):
                    return True
        return False

    # -- publication --------------------------------------------------------------------------------

    async def publish_local(self, inner: Envelope) -> Reject | bytes | None:
        """A multicast to a node-local group: queued for its members, never wrapped (None: wrap)."""
        now = self._now()
        return await self._write(lambda txn: self.adapter.publish_local(txn, inner, now))
