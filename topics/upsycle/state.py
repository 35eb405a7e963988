"""The UPSYCLE adapter store: key layouts over the framework's transaction (docs/topics-design.md 4.5).

The framework gives each adapter named LMDB databases inside the instance's one environment
and writes them in the same transaction as the DMQ store, so every method here takes the
:class:`~topics.adapter.AdapterTxn` (or read-only view) it works in and keeps no state of its
own: a reject or a crash can never leave half an update.

========  =============================================  ===========================================
database  key                                            value
========  =============================================  ===========================================
``msg``   ``m`` id                                       ``[routed, dmqMessage, dmqId, pool, arrival,
                                                         E, retainUntil, flags]``
          ``t`` u64(retainUntil) id                      empty (prune order)
``seen``  ``i`` id                                       u64(until): the inner-id index
          ``t`` u64(until) id                            empty
``sub``   ``s`` K                                        ``[nextQseq, nextDseq, items, bytes]``
          ``g`` K G                                      ``local`` flag (K's groups)
          ``m`` G K                                      empty (members of G)
``q``     ``q`` K u64(qseq)                              ``[itemKind, payload, deadline, size,
                                                         group, dseq or null, flags]``
          ``t`` u64(deadline) K u64(qseq)                empty
``gap``   ``c`` G id                                     ``[openedAt, notified]``: gap candidates
          ``t`` u64(openedAt) G id                       empty
``ad``    ``a`` advertiser                               ``[advertisement, dmqMessage, rev,
                                                         removeAt, arrival]``
          ``t`` u64(removeAt) advertiser                 empty
``req``   ``r`` requestDmqId                             ``[group, ids, expiresAt, pool]``
          ``n`` requestDmqId id                          u64(answers accepted)
          ``p`` pool G u64(arrival) requestDmqId         empty (request rate window)
          ``t`` u64(expiresAt) requestDmqId              empty
========  =============================================  ===========================================

Queue positions (``qseq``) record arrival order; delivery sequence numbers (``dseq``) are
given to items only when first delivered, so that what a subscriber sees is numbered without
gaps even when items were purged by LEAVE or dropped at their deadline before delivery.

Records are the adapter's own bytes and are encoded with cbor2's C codec; received bytes
(routed messages, advertisements, DMQ messages) are stored inside them untouched.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import cbor2

from topics.adapter import AdapterTxn, StoreView

__all__ = [
    "DATABASES",
    "StoredMessage",
    "QueueItem",
    "SubscriberState",
    "UpsycleState",
]

DATABASES = ("msg", "seen", "sub", "q", "gap", "ad", "req")

_U64 = struct.Struct(">Q")

encode = cbor2.dumps
decode = cbor2.loads
_KEY = 32


def u64(value: int) -> bytes:
    return _U64.pack(max(0, min(int(value), 2**64 - 1)))


def _read_u64(raw: bytes) -> int:
    return _U64.unpack(raw)[0]


@dataclass(frozen=True, slots=True)
class StoredMessage:
    routed: bytes
    dmq_message: bytes
    dmq_id: bytes
    pool: bytes
    arrival: int
    inner_expiry: int
    retain_until: int
    flags: int


@dataclass(frozen=True, slots=True)
class QueueItem:
    """One entry of a subscriber's queue; ``payload`` depends on ``kind`` (3.5 itemBody)."""

    qseq: int
    kind: int
    payload: Any
    deadline: int
    size: int
    group: bytes | None
    dseq: int | None
    flags: int


@dataclass(frozen=True, slots=True)
class SubscriberState:
    next_qseq: int = 0
    next_dseq: int = 0
    items: int = 0
    bytes: int = 0


class UpsycleState:
    """Typed reads and writes of the adapter's databases; one instance serves any transaction."""

    # -- messages -----------------------------------------------------------------------------

    def message(self, view: StoreView, ident: bytes) -> StoredMessage | None:
        raw = view.get("msg", b"m" + ident)
        return None if raw is None else StoredMessage(*decode(raw))

    def put_message(self, txn: AdapterTxn, ident: bytes, stored: StoredMessage) -> None:
        old = self.message(txn, ident)
        if old is not None:
            if old.retain_until >= stored.retain_until:
                return
            txn.delete("msg", b"t" + u64(old.retain_until) + ident)
        txn.put("msg", b"m" + ident, encode([
            stored.routed, stored.dmq_message, stored.dmq_id, stored.pool, stored.arrival,
            stored.inner_expiry, stored.retain_until, stored.flags]))
        txn.put("msg", b"t" + u64(stored.retain_until) + ident, b"")

    # -- the inner-id index -----------------------------------------------------------------

    def seen_until(self, view: StoreView, ident: bytes) -> int | None:
        raw = view.get("seen", b"i" + ident)
        return None if raw is None else _read_u64(raw)

    def mark_seen(self, txn: AdapterTxn, ident: bytes, until: int) -> None:
        old = self.seen_until(txn, ident)
        if old is not None:
            if old >= until:
                return
            txn.delete("seen", b"t" + u64(old) + ident)
        txn.put("seen", b"i" + ident, u64(until))
        txn.put("seen", b"t" + u64(until) + ident, b"")

    # -- subscribers and membership ----------------------------------------------------------

    def subscriber(self, view: StoreView, key: bytes) -> SubscriberState | None:
        raw = view.get("sub", b"s" + key)
        return None if raw is None else SubscriberState(*decode(raw))

    def put_subscriber(self, txn: AdapterTxn, key: bytes, state: SubscriberState) -> None:
        txn.put("sub", b"s" + key, encode([state.next_qseq, state.next_dseq, state.items, state.bytes]))

    def subscriber_count(self, view: StoreView) -> int:
        return sum(1 for _ in view.scan("sub", b"s"))

    def groups_of(self, view: StoreView, key: bytes) -> dict[bytes, bool]:
        prefix = b"g" + key
        return {k[len(prefix):]: decode(v) for k, v in view.scan("sub", prefix)}

    def is_member(self, view: StoreView, key: bytes, group: bytes) -> bool:
        return view.get("sub", b"g" + key + group) is not None

    def members(self, view: StoreView, group: bytes) -> list[bytes]:
        prefix = b"m" + group
        return [k[len(prefix):] for k, _ in view.scan("sub", prefix)]

    def has_members(self, view: StoreView, group: bytes) -> bool:
        return next(iter(view.scan("sub", b"m" + group)), None) is not None

    def local_group(self, view: StoreView, group: bytes) -> bool:
        """Whether any member joined ``group`` as node-local (4.5, ``local = true``)."""
        return any(self.groups_of(view, member).get(group) for member in self.members(view, group))

    def add_membership(self, txn: AdapterTxn, key: bytes, group: bytes, local: bool) -> None:
        txn.put("sub", b"g" + key + group, encode(bool(local)))
        txn.put("sub", b"m" + group + key, b"")

    def remove_membership(self, txn: AdapterTxn, key: bytes, group: bytes) -> None:
        txn.delete("sub", b"g" + key + group)
        txn.delete("sub", b"m" + group + key)

    # -- queues ------------------------------------------------------------------------------

    def queue(self, view: StoreView, key: bytes) -> Iterator[QueueItem]:
        """K's queue in arrival order."""
        prefix = b"q" + key
        for k, v in view.scan("q", prefix):
            yield QueueItem(_read_u64(k[len(prefix):]), *decode(v))

    def append(self, txn: AdapterTxn, key: bytes, state: SubscriberState, kind: int, payload: Any,
               deadline: int, size: int, group: bytes | None, flags: int = 0) -> SubscriberState:
        qseq = state.next_qseq
        self._write_item(txn, key, QueueItem(qseq, kind, payload, deadline, size, group, None, flags))
        txn.put("q", b"t" + u64(deadline) + key + u64(qseq), b"")
        return SubscriberState(qseq + 1, state.next_dseq, state.items + 1, state.bytes + size)

    def _write_item(self, txn: AdapterTxn, key: bytes, item: QueueItem) -> None:
        txn.put("q", b"q" + key + u64(item.qseq), encode(
            [item.kind, item.payload, item.deadline, item.size, item.group, item.dseq, item.flags]))

    def assign_dseq(self, txn: AdapterTxn, key: bytes, item: QueueItem, dseq: int) -> QueueItem:
        numbered = QueueItem(item.qseq, item.kind, item.payload, item.deadline, item.size, item.group,
                             dseq, item.flags)
        self._write_item(txn, key, numbered)
        return numbered

    def remove(self, txn: AdapterTxn, key: bytes, state: SubscriberState, item: QueueItem) -> SubscriberState:
        txn.delete("q", b"q" + key + u64(item.qseq))
        txn.delete("q", b"t" + u64(item.deadline) + key + u64(item.qseq))
        return SubscriberState(state.next_qseq, state.next_dseq, state.items - 1, state.bytes - item.size)

    def due_queue_items(self, view: StoreView, now: int) -> list[tuple[bytes, int]]:
        """``(subscriber, qseq)`` of every queued item whose deadline is before ``now``."""
        due = []
        for k, _ in view.scan("q", b"t"):
            if _read_u64(k[1:9]) >= now:
                break
            due.append((k[9:9 + _KEY], _read_u64(k[9 + _KEY:])))
        return due

    def queue_item(self, view: StoreView, key: bytes, qseq: int) -> QueueItem | None:
        raw = view.get("q", b"q" + key + u64(qseq))
        return None if raw is None else QueueItem(qseq, *decode(raw))

    # -- gap candidates ----------------------------------------------------------------------

    def gap(self, view: StoreView, group: bytes, ident: bytes) -> tuple[int, bool] | None:
        """``(openedAt, notified)`` of the candidate for ``ident`` in ``group``."""
        raw = view.get("gap", b"c" + group + ident)
        return None if raw is None else tuple(decode(raw))  # type: ignore[return-value]

    def open_gap(self, txn: AdapterTxn, group: bytes, ident: bytes, now: int) -> None:
        txn.put("gap", b"c" + group + ident, encode([now, False]))
        txn.put("gap", b"t" + u64(now) + group + ident, b"")

    def mark_notified(self, txn: AdapterTxn, group: bytes, ident: bytes, opened: int) -> None:
        txn.put("gap", b"c" + group + ident, encode([opened, True]))

    def close_gap(self, txn: AdapterTxn, group: bytes, ident: bytes) -> None:
        found = self.gap(txn, group, ident)
        if found is not None:
            txn.delete("gap", b"c" + group + ident)
            txn.delete("gap", b"t" + u64(found[0]) + group + ident)

    def gaps_opened_before(self, view: StoreView, time: int) -> list[tuple[int, bytes, bytes]]:
        """``(openedAt, group, id)`` of every candidate opened before ``time``, oldest first."""
        found = []
        for k, _ in view.scan("gap", b"t"):
            opened = _read_u64(k[1:9])
            if opened >= time:
                break
            found.append((opened, k[9:9 + _KEY], k[9 + _KEY:]))
        return found

    # -- advertisements ----------------------------------------------------------------------

    def advertisement(self, view: StoreView, advertiser: bytes) -> tuple[bytes, bytes, int, int, int] | None:
        raw = view.get("ad", b"a" + advertiser)
        return None if raw is None else tuple(decode(raw))  # type: ignore[return-value]

    def put_advertisement(self, txn: AdapterTxn, advertiser: bytes, ad_raw: bytes, dmq_message: bytes,
                          rev: int, remove_at: int, arrival: int) -> None:
        self.drop_advertisement(txn, advertiser)
        txn.put("ad", b"a" + advertiser, encode([ad_raw, dmq_message, rev, remove_at, arrival]))
        txn.put("ad", b"t" + u64(remove_at) + advertiser, b"")

    def drop_advertisement(self, txn: AdapterTxn, advertiser: bytes) -> None:
        old = self.advertisement(txn, advertiser)
        if old is not None:
            txn.delete("ad", b"a" + advertiser)
            txn.delete("ad", b"t" + u64(old[3]) + advertiser)

    def advertisements(self, view: StoreView) -> Iterator[tuple[bytes, tuple[bytes, bytes, int, int, int]]]:
        for k, v in view.scan("ad", b"a"):
            yield k[1:], tuple(decode(v))  # type: ignore[misc]

    # -- held requests and answers -----------------------------------------------------------

    def request(self, view: StoreView, dmq_id: bytes) -> tuple[bytes, list[bytes], int, bytes] | None:
        raw = view.get("req", b"r" + dmq_id)
        return None if raw is None else tuple(decode(raw))  # type: ignore[return-value]

    def put_request(self, txn: AdapterTxn, dmq_id: bytes, group: bytes, ids: list[bytes], expires_at: int,
                    pool: bytes, arrival: int) -> None:
        txn.put("req", b"r" + dmq_id, encode([group, list(ids), expires_at, pool]))
        txn.put("req", b"p" + pool + group + u64(arrival) + dmq_id, b"")
        txn.put("req", b"t" + u64(expires_at) + dmq_id, b"")

    def requests_since(self, view: StoreView, pool: bytes, group: bytes, since: int) -> int:
        prefix = b"p" + pool + group
        return sum(1 for k, _ in view.scan("req", prefix) if _read_u64(k[len(prefix):len(prefix) + 8]) >= since)

    def answers(self, view: StoreView, dmq_id: bytes, ident: bytes) -> int:
        raw = view.get("req", b"n" + dmq_id + ident)
        return 0 if raw is None else _read_u64(raw)

    def count_answer(self, txn: AdapterTxn, dmq_id: bytes, ident: bytes) -> int:
        count = self.answers(txn, dmq_id, ident) + 1
        txn.put("req", b"n" + dmq_id + ident, u64(count))
        return count

    # -- pruning by time index ---------------------------------------------------------------

    def soonest(self, view: StoreView, db: str) -> int | None:
        """The earliest time in ``db``'s time index (``t`` u64 ...); None when it is empty."""
        first = next(view.scan(db, b"t"), None)
        return None if first is None else _read_u64(first[0][1:9])

    def due(self, view: StoreView, db: str, now: int) -> list[bytes]:
        """Index keys (``t`` u64 ...) of ``db`` whose time is before ``now``."""
        keys = []
        for k, _ in view.scan(db, b"t"):
            if _read_u64(k[1:9]) >= now:
                break
            keys.append(k)
        return keys
