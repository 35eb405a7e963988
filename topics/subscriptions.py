"""Subscriptions of protocol 1000: queues, delivery sequences, durable state (docs/topics-design.md 3.4).

Every subscription has a gap-free ``dseq`` (0, 1, 2, ...) and a queue of encoded items not
yet acknowledged. A connection reads its subscriptions' queues through one reply stream;
acknowledgements are cumulative per subscription. Durable subscriptions keep their filter,
counters and queue in LMDB: their queue appends are written in the same transaction as the
message that produced them (C7), so a crash never loses an acknowledged-to-the-network item
and never delivers an acknowledged one again. Ephemeral subscriptions live in memory.

Durable queues hold references: an item queued for many durable subscriptions is written
once, in ``topics/item`` (keyed by the Blake2b-256 of its encoding, with a count of the
queue records naming it), and each queue record holds the reference, so an event costs its
bytes once plus a few dozen bytes per subscription instead of a copy (and a B-tree page)
per subscription. Drop notices, a few bytes each, stay inline.

What local clients can make the node hold is capped (:class:`SubscriptionCaps`): the hub
keeps each durable queue within its byte cap, all durable queues within their total, and the
database within its share of the disk (:class:`~topics.disk.DiskGuard`); an item beyond a cap
is dropped and reported like a queue overflow. The counts of subscriptions are the session's.

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

import hashlib
import struct
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import trio

from dmq.config import TopicSubscriptionLimits as SubscriptionCaps

from . import cbor
from .adapter import ITEM_DROPPED, Delivery
from .filters import matches

__all__ = [
    "QueuedItem",
    "QueueLimits",
    "SubscriptionCaps",
    "ITEM_DB",
    "Released",
    "Subscription",
    "SubscriptionHub",
    "Staged",
    "MAX_SUBSCRIPTIONS",
    "MAX_UNACKED",
    "DURABLE_DB",
    "QUEUE_DB",
    "HUB_DATABASES",
    "encode_item",
    "release",
    "queue_records",
    "DROP_NOTICE_SIZE",
]

MAX_SUBSCRIPTIONS = 64          # per connection (P)
MAX_UNACKED = 4000              # delivered, not acknowledged, per subscription (P)
DEDUP_MEMORY = 4096             # inner ids remembered per subscription
DURABLE_DB = "durable"
QUEUE_DB = "queue"
ITEM_DB = "item"
HUB_DATABASES = (DURABLE_DB, QUEUE_DB, ITEM_DB)
#: Item bodies at least this long are stored once and referenced from durable queues.
REFERENCE_FROM = 64
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
    #: The item's key in ``topics/item`` when its durable queue record references it.
    ref: bytes | None = None


#: A durable queue record leaving: its key and the item it references (None: inline).
Released = tuple[bytes, bytes | None]


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
    #: Bytes queued for durable subscriptions, and references written, by this staging.
    durable_bytes: int = 0
    refs: dict[bytes, int] = field(default_factory=dict)


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


def _reference(item_body: bytes) -> bytes:
    return hashlib.blake2b(item_body, digest_size=32).digest()


def queue_records(view: Any, name: bytes) -> list[Released]:
    """Every queue record of the durable subscription ``name``, as :func:`release` takes them."""
    prefix = bytes((len(name),)) + name
    out: list[Released] = []
    for key, value in view.scan(QUEUE_DB, prefix):
        _, _, *reference = cbor.decode(value)
        out.append((key, reference[0] if reference else None))
    return out


def release(txn: Any, released: Iterable[Released]) -> None:
    """Delete durable queue records and drop one count of each item they reference (the
    item goes with its last reference)."""
    counts: dict[bytes, int] = {}
    for key, ref in released:
        txn.delete(QUEUE_DB, key)
        if ref is not None:
            counts[ref] = counts.get(ref, 0) + 1
    for ref, gone in counts.items():
        raw = txn.get(ITEM_DB, ref)
        if raw is None:
            continue
        count, body = cbor.decode(raw)
        if count <= gone:
            txn.delete(ITEM_DB, ref)
        else:
            txn.put(ITEM_DB, ref, cbor.encode([count - gone, body]))


class SubscriptionHub:
    """All subscriptions of one instance, durable ones persisted in ``topics/*`` databases."""

    def __init__(self, limits: QueueLimits = QueueLimits(), caps: SubscriptionCaps = SubscriptionCaps(),
                 disk: Any = None) -> None:
        self.limits = limits
        self.caps = caps
        #: A :class:`~topics.disk.DiskGuard`, or None: no disk share is enforced.
        self.disk = disk
        self.durable: dict[bytes, Subscription] = {}
        #: Names of durable subscriptions being created (counted against the total).
        self.creating: set[bytes] = set()
        self.ephemeral: set[Subscription] = set()
        #: Bytes queued in every durable subscription.
        self.durable_bytes = 0
        self._changed = trio.Event()

    # -- durable state ----------------------------------------------------------------------

    def load(self, view: Any, now: float) -> list[bytes]:
        """Reload durable subscriptions; return the queue keys past their deadline (to delete)."""
        expired: list[Released] = []
        bodies: dict[bytes, bytes | None] = {}
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
                deadline, item_body, *reference = cbor.decode(value)
                ref = reference[0] if reference else None
                if ref is not None:
                    if ref not in bodies:
                        held = view.get(ITEM_DB, ref)
                        bodies[ref] = None if held is None else cbor.decode(held)[1]
                    item_body = bodies[ref]
                if dseq <= sub.acked or (deadline is not None and deadline < now) or item_body is None:
                    expired.append((key, ref))
                    continue
                sub.queue.append(QueuedItem(dseq, item_body, deadline, ref=ref))
                sub.queued_bytes += len(item_body)
                # A record written by an acknowledgement may predate the last queued item.
                sub.next_dseq = max(sub.next_dseq, dseq + 1)
            self.durable[name] = sub
            self.durable_bytes += sub.queued_bytes
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
            ref = _reference(encoded) if len(encoded) >= REFERENCE_FROM else None
            for sub in targets:
                if not matches(sub.filter, delivery) or (delivery.dedup is not None and delivery.dedup in sub.seen):
                    continue
                fill = fills.get(sub)
                if fill is None:
                    fill = fills[sub] = _Fill(len(sub.queue), sub.queued_bytes, sub.dropped, sub.overflow,
                                              sub.next_dseq)
                self._admit(txn, staged, sub, fill, QueuedItem(0, encoded, delivery.deadline, delivery.dedup,
                                                               ref if sub.durable else None))
        for sub, fill in fills.items():
            overflow = (fill.dropped, fill.overflow)
            if overflow != (sub.dropped, sub.overflow):
                staged.overflow[sub] = overflow
            if sub.durable and txn is not None and (fill.next_dseq != sub.next_dseq or sub in staged.overflow):
                txn.put(DURABLE_DB, sub.name, sub.record(fill.next_dseq, overflow))
        if txn is not None:
            self._write_references(txn, staged)
        return staged

    @staticmethod
    def _write_references(txn: Any, staged: Staged) -> None:
        """Store each referenced item once, counting the queue records that name it."""
        bodies = {item.ref: item.item_body for sub, item in staged.items if item.ref is not None}
        for ref, added in staged.refs.items():
            held = txn.get(ITEM_DB, ref)
            count = added if held is None else cbor.decode(held)[0] + added
            txn.put(ITEM_DB, ref, cbor.encode([count, bodies[ref]]))

    def _fits_durable(self, sub: Subscription, fill: _Fill, staged: Staged, size: int) -> bool:
        """Whether ``size`` more bytes keep a durable queue, all durable queues and the
        database within their caps (the reserved slot's notice included)."""
        caps = self.caps
        need = size + DROP_NOTICE_SIZE
        if fill.bytes + need > caps.durable_queue_bytes:
            return False
        if self.durable_bytes + staged.durable_bytes + need > caps.durable_bytes:
            return False
        return self.disk is None or self.disk.room(staged.durable_bytes + need)

    def _admit(self, txn: Any, staged: Staged, sub: Subscription, fill: _Fill, item: QueuedItem) -> None:
        """Queue ``item`` if it fits beside a pending notice and the reserved slot; else count
        it as dropped, reporting the first drop of an overflow in the reserved slot."""
        limits = self.limits
        notice = 1 if fill.dropped else 0
        size = notice * DROP_NOTICE_SIZE + len(item.item_body)
        if (fill.items + notice + 2 <= limits.max_items
                and fill.bytes + size + DROP_NOTICE_SIZE <= limits.max_bytes
                and (not sub.durable or self._fits_durable(sub, fill, staged, size))):
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
        if sub.durable:
            staged.durable_bytes += len(item.item_body)
        if sub.durable and txn is not None:
            if item.ref is None:
                record = cbor.encode([item.deadline, item.item_body])
            else:
                record = cbor.encode([item.deadline, 0, item.ref])
                staged.refs[item.ref] = staged.refs.get(item.ref, 0) + 1
            txn.put(QUEUE_DB, _queue_key(sub.name, item.dseq), record)

    def apply(self, staged: Staged) -> None:
        """Make staged items visible (after their commit)."""
        for sub, item in staged.items:
            sub.next_dseq = max(sub.next_dseq, item.dseq + 1)
            sub.queue.append(item)
            sub.queued_bytes += len(item.item_body)
            sub.fresh(item.dedup)
        self.durable_bytes += staged.durable_bytes
        if self.disk is not None:
            self.disk.added(staged.durable_bytes)
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

    def ack(self, sub: Subscription, dseq: int) -> list[Released]:
        """Acknowledge up to ``dseq``; return the durable queue records to :func:`release`."""
        removed: list[Released] = []
        if dseq <= sub.acked:
            return removed
        sub.acked = dseq
        while sub.queue and sub.queue[0].dseq <= dseq:
            item = sub.queue.popleft()
            sub.queued_bytes -= len(item.item_body)
            if sub.durable:
                self.durable_bytes -= len(item.item_body)
                removed.append((_queue_key(sub.name, item.dseq), item.ref))
        return removed

    def forget(self, sub: Subscription) -> None:
        """Drop durable ``sub`` from memory (its records go with :func:`queue_records`)."""
        self.durable.pop(sub.name, None)
        self.durable_bytes -= sub.queued_bytes
        sub.queue.clear()
        sub.queued_bytes = 0
