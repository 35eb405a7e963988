"""Per-subscriber store-and-forward queues (docs/topics-design.md 4.4, 4.5; protocol 1000 semantics of 3.4).

A queue is FIFO in arrival order at this node, unicast and multicast interleaved. Items are
numbered with ``dseq`` when first handed out, redelivered until a cumulative acknowledgement
removes them (at-least-once), never handed out after their deadline, and capped: overflow
drops the oldest items and records how many in a kind 4 item, so a subscriber learns that
it lost something instead of silently missing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topics.adapter import ITEM_DROPPED, ITEM_GAP, ITEM_LOCAL, ITEM_MESSAGE, AdapterTxn, StoreView

from .params import ADAPTER_NUMBER, UpsycleParams
from .state import QueueItem, SubscriberState, UpsycleState

__all__ = ["QueuedDelivery", "SubscriberQueues", "AckError", "item_meta"]

#: Nominal size of a gap notice or drop notice against the byte cap.
_NOTICE_SIZE = 64


class AckError(ValueError):
    """An acknowledgement of a ``dseq`` not yet delivered (a protocol error, docs/topics-design.md 3.4)."""


@dataclass(frozen=True, slots=True)
class QueuedDelivery:
    """One handed-out queue item: its ``dseq`` and the ``itemBody`` of docs/topics-design.md 3.5."""

    dseq: int
    body: Any
    deadline: int


def item_meta(topic_key: bytes, ident: bytes | None, pool: bytes | None, arrival: int, flags: int) -> dict[int, Any]:
    """``meta`` of an item: adapter, topic key, inner id, wrapping pool, arrival, flags."""
    meta: dict[int, Any] = {0: ADAPTER_NUMBER, 1: topic_key, 4: int(arrival)}
    if ident is not None:
        meta[2] = ident
    if pool is not None:
        meta[3] = pool
    if flags:
        meta[5] = flags
    return meta


class SubscriberQueues:
    """Queue operations over the adapter store, inside the caller's transaction."""

    def __init__(self, state: UpsycleState, params: UpsycleParams) -> None:
        self.state = state
        self.params = params

    # -- appending ---------------------------------------------------------------------------

    def append_message(self, txn: AdapterTxn, key: bytes, ident: bytes, group: bytes | None, deadline: int,
                       size: int, arrival: int, flags: int = 0) -> None:
        self._append(txn, key, ITEM_MESSAGE, ident, deadline, size, group, arrival, flags)

    def append_local(self, txn: AdapterTxn, key: bytes, routed: bytes, group: bytes, deadline: int,
                     arrival: int) -> None:
        self._append(txn, key, ITEM_LOCAL, [routed, arrival], deadline, len(routed), group, arrival, 0)

    def append_gap(self, txn: AdapterTxn, key: bytes, group: bytes, ids: list[bytes], now: int) -> None:
        self._append(txn, key, ITEM_GAP, {0: group, 1: list(ids)}, now + self.params.queue_lifetime,
                     _NOTICE_SIZE, group, now, 0)

    def _append(self, txn: AdapterTxn, key: bytes, kind: int, payload: Any, deadline: int, size: int,
                group: bytes | None, now: int, flags: int) -> None:
        state = self.state.subscriber(txn, key) or SubscriberState()
        dropped = 0
        limit_items, limit_bytes = self.params.queue_max_items, self.params.queue_max_bytes
        # Room for the new item and for the drop notice that reports the overflow.
        while state.items and (state.items + 2 > limit_items or state.bytes + size + _NOTICE_SIZE > limit_bytes):
            scan = self.state.queue(txn, key)
            oldest = next(scan)
            scan.close()  # release the cursor before writing
            state = self.state.remove(txn, key, state, oldest)
            dropped += oldest.payload if oldest.kind == ITEM_DROPPED else 1
        if dropped:
            state = self.state.append(txn, key, state, ITEM_DROPPED, dropped, now + self.params.queue_lifetime,
                                      _NOTICE_SIZE, None)
        state = self.state.append(txn, key, state, kind, payload, deadline, size, group, flags)
        self.state.put_subscriber(txn, key, state)

    def purge_group(self, txn: AdapterTxn, key: bytes, group: bytes) -> int:
        """Drop K's unacknowledged items of ``group`` (LEAVE, docs/topics-design.md 4.5).

        Items handed out but not yet acknowledged go too: after LEAVE nothing of the group
        reaches the subscriber again, even on redelivery.
        """
        state = self.state.subscriber(txn, key)
        if state is None:
            return 0
        purged = 0
        for item in list(self.state.queue(txn, key)):
            if item.group == group and item.kind in (ITEM_MESSAGE, ITEM_LOCAL, ITEM_GAP):
                state = self.state.remove(txn, key, state, item)
                purged += 1
        self.state.put_subscriber(txn, key, state)
        return purged

    # -- handing out and acknowledging -------------------------------------------------------

    def next_items(self, txn: AdapterTxn, key: bytes, cursor: int | None, max_items: int,
                   now: float) -> list[QueuedDelivery]:
        """Up to ``max_items`` items from ``cursor`` (None: the oldest unacknowledged).

        Items already numbered below ``cursor`` were handed to this attachment before and
        are skipped; unnumbered ones get the next ``dseq``. Items past their deadline are
        never handed out (they wait for :meth:`prune`).
        """
        state = self.state.subscriber(txn, key)
        if state is None or max_items <= 0:
            return []
        handed: list[QueueItem] = []
        for item in self.state.queue(txn, key):
            if len(handed) >= max_items:
                break
            if item.deadline <= now:
                continue
            if item.dseq is not None and cursor is not None and item.dseq < cursor:
                continue
            handed.append(item)
        # Numbering writes the queue, so it waits until the cursor over it is done.
        out: list[QueuedDelivery] = []
        next_dseq = state.next_dseq
        for item in handed:
            if item.dseq is None:
                item = self.state.assign_dseq(txn, key, item, next_dseq)
                next_dseq += 1
            body = self._body(txn, item)
            if body is not None:
                out.append(QueuedDelivery(item.dseq, body, item.deadline))  # type: ignore[arg-type]
        if next_dseq != state.next_dseq:
            self.state.put_subscriber(txn, key, SubscriberState(state.next_qseq, next_dseq, state.items, state.bytes))
        return out

    def _body(self, view: StoreView, item: QueueItem) -> Any:
        if item.kind == ITEM_MESSAGE:
            stored = self.state.message(view, item.payload)
            if stored is None:
                return None
            meta = item_meta(item.group or b"", item.payload, stored.pool, stored.arrival, item.flags)
            return [ITEM_MESSAGE, meta, stored.dmq_message]
        if item.kind == ITEM_LOCAL:
            routed, arrival = item.payload
            return [ITEM_LOCAL, item_meta(item.group or b"", None, None, arrival, 4), routed]
        return [item.kind, item.payload]

    def ack(self, txn: AdapterTxn, key: bytes, dseq: int) -> int:
        """Remove every item numbered up to ``dseq``; how many were removed."""
        state = self.state.subscriber(txn, key)
        if state is None or dseq >= state.next_dseq:
            raise AckError(f"dseq {dseq} has not been delivered")
        removed = 0
        for item in list(self.state.queue(txn, key)):
            if item.dseq is None:
                # Never handed out: either the undelivered tail, or an item a read skipped
                # because its deadline had passed (prune removes it); delivered ones may follow.
                continue
            if item.dseq > dseq:
                break
            state = self.state.remove(txn, key, state, item)
            removed += 1
        self.state.put_subscriber(txn, key, state)
        return removed

    def head_dseq(self, view: StoreView, key: bytes) -> int:
        """The ``dseq`` the next delivery of a fresh attachment starts from."""
        for item in self.state.queue(view, key):
            if item.dseq is not None:
                return item.dseq   # expired items a read skipped may precede it
        state = self.state.subscriber(view, key)
        return 0 if state is None else state.next_dseq

    def pending(self, view: StoreView, key: bytes) -> int:
        state = self.state.subscriber(view, key)
        return 0 if state is None else state.items

    # -- deadlines ---------------------------------------------------------------------------

    def prune(self, txn: AdapterTxn, now: int) -> int:
        """Drop every queued item whose deadline has passed."""
        dropped = 0
        states: dict[bytes, SubscriberState] = {}
        for key, qseq in self.state.due_queue_items(txn, now):
            item = self.state.queue_item(txn, key, qseq)
            if item is None:
                continue
            state = states.get(key) or self.state.subscriber(txn, key) or SubscriberState()
            states[key] = self.state.remove(txn, key, state, item)
            dropped += 1
        for key, state in states.items():
            self.state.put_subscriber(txn, key, state)
        return dropped
