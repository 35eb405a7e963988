"""Subscriptions of protocol 1000: queues, delivery sequences, durable state (docs/topics-design.md 3.4).

Every subscription has a gap-free ``dseq`` (0, 1, 2, ...) and a queue of encoded items not
yet acknowledged. A connection reads its subscriptions' queues through one reply stream;
acknowledgements are cumulative per subscription. Durable subscriptions keep their filter,
counters and queue in LMDB: their queue appends are written in the same transaction as the
message that produced them (C7), so a crash never loses an acknowledged-to-the-network item
and never delivers an acknowledged one again. Ephemeral subscriptions live in memory.

Queues are capped (:class:`QueueLimits`, configurable): an item that does not fit is
dropped and counted, and an ``[4, n]`` "items dropped" item reports the count in the stream.
Dseqs are fixed when an item is queued (in the commit that queues it), so the cap keeps the
oldest items and drops the newest: dropping queued items would open a gap in ``dseq``, which
3.4 forbids. One slot is kept free for the first notice of an overflow, so a subscriber whose
queue is full learns it at once; drops after it are reported by a notice placed before the
next item that fits, so the notices sum to every item lost, each where the loss happened.

The hub is touched from the event loop only; the part that runs inside a commit
(:meth:`SubscriptionHub.stage`) works on a snapshot taken before the commit and its effects
are applied to memory after the commit succeeded (:meth:`SubscriptionHub.apply`).
"""

from __future__ import annotations

import struct
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from . import cbor
from .adapter import ITEM_DROPPED, Delivery
from .filters import matches

__all__ = [
    "QueuedItem",
    "QueueLimits",
    "Subscription",
    "SubscriptionHub",
    "Staged",
    "MAX_SUBSCRIPTIONS",
    "MAX_UNACKED",
    "DURABLE_DB",
    "QUEUE_DB",
    "HUB_DATABASES",
    "encode_item",
    "DROP_NOTICE_SIZE",
]

MAX_SUBSCRIPTIONS = 64          # per connection (P)
MAX_UNACKED = 4000              # delivered, not acknowledged, per subscription (P)
DEDUP_MEMORY = 4096             # inner ids remembered per subscription
DURABLE_DB = "durable"
QUEUE_DB = "queue"
HUB_DATABASES = (DURABLE_DB, QUEUE_DB)
_U64 = struct.Struct(">Q")
#: Bytes a drop notice counts for against the byte cap (its encoding is at most 11).
DROP_NOTICE_SIZE = 16


@dataclass(frozen=True, slots=True)
class QueueLimits:
    """Caps of one subscription's queue (delivered-unacknowledged items included), P numbers
    as for UPSYCLE subscriber queues (docs/topics-design.md 4.5)."""

    max_items: int = 10_000
    max_bytes: int = 64 << 20

    def __post_init__(self) -> None:
        if self.max_items < 3 or self.max_bytes < 3 * DROP_NOTICE_SIZE:
            raise ValueError("a queue holds at least 3 items (an item, a notice, the reserved slot)")


@dataclass(slots=True)
class QueuedItem:
    dseq: int
    item_body: bytes             # encoded itemBody
    deadline: float | None
    dedup: bytes | None = None


@dataclass(eq=False)
class Subscription:
    """One subscription; ``cursor`` is the next dseq to send, ``acked`` the last acknowledged."""

    filter: list[dict[int, Any]]
    name: bytes | None = None
    next_dseq: int = 0
    acked: int = -1
    cursor: int = 0
    queue: deque[QueuedItem] = field(default_factory=deque)
    attached: bool = False
    seen: OrderedDict[bytes, None] = field(default_factory=OrderedDict)
    #: Items dropped by the caps and not yet reported by a notice.
    dropped: int = 0
    #: Whether the queue overflowed since its last admitted item (the reserved slot is used).
    overflow: bool = False
    #: Encoded size of the queued item bodies.
    queued_bytes: int = 0

    @property
    def durable(self) -> bool:
        return self.name is not None

    def fresh(self, dedup: bytes | None) -> bool:
        """Whether an item with inner id ``dedup`` was not queued before (and remember it)."""
        if dedup is None:
            return True
        if dedup in self.seen:
            return False
        self.seen[dedup] = None
        if len(self.seen) > DEDUP_MEMORY:
            self.seen.popitem(last=False)
        return True

    def record(self, next_dseq: int | None = None, overflow: tuple[int, bool] | None = None) -> bytes:
        dropped, overflowing = (self.dropped, self.overflow) if overflow is None else overflow
        return cbor.encode([self.filter_wire(), self.next_dseq if next_dseq is None else next_dseq, self.acked + 1,
                            dropped, overflowing])

    def filter_wire(self) -> list[dict[int, Any]]:
        return [{k: (list(v) if isinstance(v, tuple) else v) for k, v in s.items()} for s in self.filter]


@dataclass(slots=True)
class Staged:
    """Items assigned inside a commit, applied to memory after it."""

    items: list[tuple[Subscription, QueuedItem]] = field(default_factory=list)
    #: ``(dropped, overflow)`` of every subscription the commit changed them for.
    overflow: dict[Subscription, tuple[int, bool]] = field(default_factory=dict)


@dataclass(slots=True)
class _Fill:
    """A subscription's queue during one staging: what memory holds plus what was staged."""

    items: int
    bytes: int
    dropped: int
    overflow: bool
    next_dseq: int


def encode_item(sub_id: int, dseq: int, item_body: bytes) -> bytes:
    """``item = [subId, dseq, itemBody]`` around an already encoded ``itemBody``."""
    return cbor.head(4, 3) + cbor.encode(sub_id) + cbor.encode(dseq) + item_body


def _queue_key(name: bytes, dseq: int) -> bytes:
    return bytes((len(name),)) + name + _U64.pack(dseq)


class SubscriptionHub:
    """All subscriptions of one instance, durable ones persisted in ``topics/*`` databases."""

    def __init__(self, limits: QueueLimits = QueueLimits()) -> None:
        self.limits = limits
        self.durable: dict[bytes, Subscription] = {}
        self.ephemeral: set[Subscription] = set()
        self._changed = trio.Event()

    # -- durable state ----------------------------------------------------------------------

    def load(self, view: Any, now: float) -> list[bytes]:
        """Reload durable subscriptions; return the queue keys past their deadline (to delete)."""
        expired: list[bytes] = []
        for name, raw in view.scan(DURABLE_DB):
            filter_, next_dseq, first_unacked, *rest = cbor.decode(raw)
            sub = Subscription(filter=[{k: (tuple(v) if isinstance(v, list) else v) for k, v in s.items()}
                                       for s in filter_],
                               name=name, next_dseq=next_dseq, acked=first_unacked - 1,
                               dropped=rest[0] if rest else 0, overflow=bool(rest[1]) if rest else False)
            sub.cursor = first_unacked
            prefix = bytes((len(name),)) + name
            for key, value in view.scan(QUEUE_DB, prefix):
                dseq = _U64.unpack(key[len(prefix):])[0]
                deadline, item_body = cbor.decode(value)
                if dseq <= sub.acked or (deadline is not None and deadline < now):
                    expired.append(key)
                    continue
                sub.queue.append(QueuedItem(dseq, item_body, deadline))
                sub.queued_bytes += len(item_body)
                # A record written by an acknowledgement may predate the last queued item.
                sub.next_dseq = max(sub.next_dseq, dseq + 1)
            self.durable[name] = sub
        return expired

    # -- staging inside a commit ------------------------------------------------------------

    def targets(self) -> list[Subscription]:
        """Subscriptions an accepted message may feed (snapshot taken before a commit)."""
        return [*self.durable.values(), *self.ephemeral]

    def stage(self, txn: Any, targets: Sequence[Subscription], deliveries: Iterable[Delivery],
              now: float) -> Staged:
        """Assign dseqs for matching subscriptions within their caps; write durable queue
        records into ``txn``."""
        staged = Staged()
        fills: dict[Subscription, _Fill] = {}
        for delivery in deliveries:
            if delivery.deadline is not None and delivery.deadline < now:
                continue
            encoded = cbor.encode(delivery.body)
            for sub in targets:
                if not matches(sub.filter, delivery) or (delivery.dedup is not None and delivery.dedup in sub.seen):
                    continue
                fill = fills.get(sub)
                if fill is None:
                    fill = fills[sub] = _Fill(len(sub.queue), sub.queued_bytes, sub.dropped, sub.overflow,
                                              sub.next_dseq)
                self._admit(txn, staged, sub, fill, QueuedItem(0, encoded, delivery.deadline, delivery.dedup))
        for sub, fill in fills.items():
            overflow = (fill.dropped, fill.overflow)
            if overflow != (sub.dropped, sub.overflow):
                staged.overflow[sub] = overflow
            if sub.durable and txn is not None and (fill.next_dseq != sub.next_dseq or sub in staged.overflow):
                txn.put(DURABLE_DB, sub.name, sub.record(fill.next_dseq, overflow))
        return staged

    def _admit(self, txn: Any, staged: Staged, sub: Subscription, fill: _Fill, item: QueuedItem) -> None:
        """Queue ``item`` if it fits beside a pending notice and the reserved slot; else count
        it as dropped, reporting the first drop of an overflow in the reserved slot."""
        limits = self.limits
        notice = 1 if fill.dropped else 0
        if (fill.items + notice + 2 <= limits.max_items
                and fill.bytes + notice * DROP_NOTICE_SIZE + len(item.item_body) + DROP_NOTICE_SIZE <= limits.max_bytes):
            if fill.dropped:
                self._queue(txn, staged, sub, fill, QueuedItem(0, cbor.encode([ITEM_DROPPED, fill.dropped]), None))
                fill.dropped = 0
            self._queue(txn, staged, sub, fill, item)
            fill.overflow = False
        elif not fill.overflow:
            # The slot every admission left free: the overflow is reported at once.
            self._queue(txn, staged, sub, fill, QueuedItem(0, cbor.encode([ITEM_DROPPED, 1]), None))
            fill.overflow = True
        else:
            fill.dropped += 1

    @staticmethod
    def _queue(txn: Any, staged: Staged, sub: Subscription, fill: _Fill, item: QueuedItem) -> None:
        item.dseq = fill.next_dseq
        fill.next_dseq += 1
        fill.items += 1
        fill.bytes += len(item.item_body)
        staged.items.append((sub, item))
        if sub.durable and txn is not None:
            txn.put(QUEUE_DB, _queue_key(sub.name, item.dseq), cbor.encode([item.deadline, item.item_body]))

    def apply(self, staged: Staged) -> None:
        """Make staged items visible (after their commit)."""
        for sub, item in staged.items:
            sub.next_dseq = max(sub.next_dseq, item.dseq + 1)
            sub.queue.append(item)
            sub.queued_bytes += len(item.item_body)
            sub.fresh(item.dedup)
        for sub, (dropped, overflow) in staged.overflow.items():
            sub.dropped, sub.overflow = dropped, overflow
        if staged.items:
            self.wake()

    def add_initial(self, sub: Subscription, deliveries: Iterable[Delivery], now: float) -> Staged:
        """Queue a new subscription's retained or snapshot items (memory only for ephemeral)."""
        return self.stage(None, [sub], deliveries, now)

    # -- waking readers ---------------------------------------------------------------------

    def wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def wait_changed(self) -> None:
        await self._changed.wait()

    def next_change(self) -> trio.Event:
        """The event the next :meth:`wake` sets: take it before looking, then wait on it,
        so that a change made while looking is not missed."""
        return self._changed

    # -- reading ----------------------------------------------------------------------------

    @staticmethod
    def take(sub: Subscription, sub_id: int, limit: int, budget: int, now: float) -> tuple[list[bytes], int]:
        """Encoded ``item``s of ``sub`` from its cursor, at most ``limit`` and ``budget`` bytes.

        Items past their local deadline are skipped (never delivered, C6) and count as
        acknowledged-away: they are dropped from the queue when the cursor passes them.
        """
        out: list[bytes] = []
        used = 0
        for item in sub.queue:
            if len(out) >= limit or sub.cursor - sub.acked - 1 >= MAX_UNACKED:
                break
            if item.dseq < sub.cursor:
                continue
            if item.deadline is not None and item.deadline < now:
                sub.cursor = item.dseq + 1
                continue
            encoded = encode_item(sub_id, item.dseq, item.item_body)
            if out and used + len(encoded) > budget:
                break
            out.append(encoded)
            used += len(encoded)
            sub.cursor = item.dseq + 1
        return out, used

    @staticmethod
    def has_ready(sub: Subscription, now: float) -> bool:
        if sub.cursor - sub.acked - 1 >= MAX_UNACKED:
            return False
        return any(item.dseq >= sub.cursor and (item.deadline is None or item.deadline >= now) for item in sub.queue)

    @staticmethod
    def ack(sub: Subscription, dseq: int) -> list[bytes]:
        """Acknowledge up to ``dseq``; return the durable queue keys to delete."""
        removed: list[bytes] = []
        if dseq <= sub.acked:
            return removed
        sub.acked = dseq
        while sub.queue and sub.queue[0].dseq <= dseq:
            item = sub.queue.popleft()
            sub.queued_bytes -= len(item.item_body)
            if sub.durable:
                removed.append(_queue_key(sub.name, item.dseq))
        return removed
