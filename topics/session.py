"""One protocol-1000 connection's view of the node: its subscriptions and requests (docs/topics-design.md 3.4).

The session answers each request of :mod:`miniprotocols.local_topic_subscription` with a
message; the protocol loop sends it. Subscriptions are objects of the instance's
:class:`~topics.subscriptions.SubscriptionHub`; this session attaches and detaches them,
reads their queues into replies and applies acknowledgements. Durable state changes
(creation, acknowledgements, forgetting) are committed in LMDB transactions of their own,
in a worker thread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import trio

from miniprotocols.local_topic_subscription import (
    MAX_ITEMS_PER_REPLY,
    MAX_REPLY_BYTES,
    MsgJoin,
    MsgJoinAck,
    MsgLeave,
    MsgLeaveAck,
    MsgPublish,
    MsgPublished,
    MsgPull,
    MsgPullReply,
    MsgReject,
    MsgReplyNext,
    MsgRequestNext,
    MsgSubscribe,
    MsgSubscribed,
    MsgUnsubscribe,
    MsgUnsubscribed,
    Resume,
    TopicProtocolError,
)

from . import cbor
from .adapter import JOIN_FAILURE, Reject, Start
from .auth import verify_auth
from .classify import tag_of
from .filters import FilterError, check_filter
from .ingress import HUB_OWNER
from .trace import TopicSubscriptionRefused
from .raw import is_raw_message, raw_delivery
from .reasons import (
    BUSY,
    LIMIT_REACHED,
    MALFORMED,
    NOT_AUTHORIZED,
    RATE_LIMITED,
    TOPIC_NOT_CARRIED,
    UNKNOWN_TOPIC,
    RejectReason,
)
from .subscriptions import (
    DURABLE_DB,
    MAX_SUBSCRIPTIONS,
    Subscription,
    SubscriptionHub,
    encode_item,
    queue_records,
    release,
)

__all__ = ["TopicSession", "QueueAttachment", "BLOCKING_WAIT", "PULL_STATUS_NOT_MEMBER"]

#: A blocking request with nothing to deliver is answered empty after this long (P).
BLOCKING_WAIT = 60.0
PULL_STATUS_NOT_MEMBER = 4
#: ``detail`` of a JOIN / LEAVE acknowledgement on an instance without UPSYCLE (docs/topics-design.md 4.5).
DETAIL_TOPIC_NOT_CARRIED = 4
RAW = 0
UPSYCLE = 1
#: Queue items handed out per subscriber and request: 256 KiB holds about 110 of the largest.
QUEUE_BATCH = 128
#: Room a new durable subscription needs on disk: its record and a first queue page.
NEW_DURABLE_BYTES = 4096


def _reject(reason: RejectReason, retry_after: int | None = None) -> MsgReject:
    return MsgReject(reason.code, reason.name, retry_after)


def _refused(reject: Reject) -> MsgReject:
    return MsgReject(reject.reason.code, reject.reason.name, reject.retry_after)


@dataclass(eq=False)
class QueueAttachment:
    """A durable subscription with an UPSYCLE selector, named by the subscriber's service key K.

    Its items are K's store-and-forward queue in the UPSYCLE store (docs/topics-design.md 4.5: unicasts to
    K and multicasts of the groups K had joined when they arrived), numbered and acknowledged
    there; ``cursor`` is the next dseq to hand out (None: the oldest unacknowledged).
    """

    key: bytes
    cursor: int | None = None


class TopicSession:
    """The handler of one connection (see ``miniprotocols.local_topic_subscription.serve``)."""

    def __init__(self, service: Any, client: str, *, blocking_wait: float = BLOCKING_WAIT) -> None:
        self.service = service
        self.client = client
        self.blocking_wait = blocking_wait
        self.subs: dict[int, Subscription] = {}
        self.queues: dict[int, QueueAttachment] = {}
        self._next_id = 0

    @property
    def hub(self) -> SubscriptionHub:
        return self.service.hub

    def _now(self) -> float:
        return self.service.clock.now()

    async def _write(self, fn: Any) -> Any:
        return await trio.to_thread.run_sync(self.service.dbs.write, HUB_OWNER, fn)

    # -- subscriptions ----------------------------------------------------------------------

    async def subscribe(self, request: MsgSubscribe) -> Any:
        if len(self.subs) + len(self.queues) >= MAX_SUBSCRIPTIONS:
            return _reject(RATE_LIMITED)
        try:
            filter_ = check_filter(request.filter)
        except FilterError:
            return _reject(MALFORMED)
        if request.durable is not None and any(s[0] == UPSYCLE for s in filter_):
            return await self._attach_queue(filter_, request)
        if request.durable is None and isinstance(request.start, Resume):
            return _reject(MALFORMED)
        # Under the ingress lock: no commit runs between reading the initial items and adding
        # the subscription to the hub, so a message accepted meanwhile is in one or the other
        # (a commit takes its targets before it awaits the disk; an item lost between the two
        # was never delivered to a client subscribing while a node catches up).
        async with self.service.ingress.lock:
            if request.durable is None:
                caps = self.hub.caps
                if len(self.hub.ephemeral) >= caps.ephemeral:
                    return self._limit("ephemeral subscriptions in total", caps.ephemeral)
                sub = Subscription(filter_)
                self.hub.apply(self.hub.stage(None, [sub], await self._initial(filter_, request.start), self._now()))
                self.hub.ephemeral.add(sub)
            else:
                sub = await self._attach_durable(filter_, request)
        if isinstance(sub, MsgReject):
            return sub
        sub.attached = True
        sub_id = self._next_id
        self._next_id += 1
        self.subs[sub_id] = sub
        return MsgSubscribed(sub_id, sub.cursor)

    async def _initial(self, filter_: list[dict[int, Any]], start: Any) -> list[Any]:
        if isinstance(start, Resume) or start == Start.NOW.value:
            return []
        wanted = {s[0] for s in filter_}
        out = []
        if RAW in wanted:
            out.extend(await self._retained_raw())
        for adapter in self.service.ingress.adapters.values():
            if adapter.number in wanted:
                with self.service.dbs.reading(adapter.name) as view:
                    out.extend(adapter.deliver(filter_, Start(start), view, self._now()))
        return out

    async def _retained_raw(self) -> list[Any]:
        """The raw topic retains what the DMQ store holds (its unexpired raw messages)."""
        ingress = self.service.ingress
        cursor = ingress.mempool.cursor()
        out = []
        while True:
            entries, has_more = await cursor.next_batch(False, 1000)
            for entry in entries:
                if is_raw_message(entry.raw):
                    out.append(raw_delivery(ingress.decode(entry.raw), int(self._now())))
            if not has_more:
                return out

    async def _attach_queue(self, filter_: list[dict[int, Any]], request: MsgSubscribe) -> Any:
        """Attach subscriber K's UPSYCLE queue; K is created on the first valid ``auth``."""
        ops = self.service.upsycle
        if ops is None:
            return _reject(TOPIC_NOT_CARRIED)
        if any(s[0] != UPSYCLE for s in filter_):
            return _reject(MALFORMED)       # K's queue holds UPSYCLE items only
        name, auth = request.durable.name, request.durable.auth
        if auth is None or len(name) != 32 or not verify_auth(
                "attach", name, None, auth.ts, auth.sig, self.service.network_magic, self._now()):
            return _reject(NOT_AUTHORIZED)
        if name in self.service.attached:
            return _reject(BUSY)
        # K's queue is a durable subscription: the per-connection cap and the disk share
        # apply to it (UPSYCLE's own caps, 4.5, bound the subscribers and each queue).
        refused = self._durable_refusal(new=not ops.known(name), upsycle=True)
        if refused is not None:
            return refused
        detail = await ops.attach(name)
        if detail:
            return _reject(NOT_AUTHORIZED if detail == 1 else RATE_LIMITED)
        if name in self.service.attached:
            return _reject(BUSY)
        self.service.attached.add(name)
        cursor = request.start.dseq if isinstance(request.start, Resume) else None
        sub_id = self._next_id
        self._next_id += 1
        self.queues[sub_id] = QueueAttachment(name, cursor)
        return MsgSubscribed(sub_id, ops.head(name) if cursor is None else cursor)

    def _limit(self, what: str, value: float) -> MsgReject:
        """The refusal of a subscription by a cap, traced; its text names the cap."""
        tracer = self.service.ingress.tracer
        tracer.emit(TopicSubscriptionRefused(tracer.now(), self.client, what, value))
        shown = f"{value:g}" if isinstance(value, float) else str(value)
        return MsgReject(LIMIT_REACHED.code, f"{LIMIT_REACHED.name}: {what} ({shown})")

    def _durable_refusal(self, new: bool, upsycle: bool = False) -> MsgReject | None:
        """The cap a durable subscription (``new``: one to create; ``upsycle``: a subscriber's
        queue, counted by UPSYCLE's own caps) would pass, if any."""
        caps, hub = self.hub.caps, self.hub
        if sum(1 for s in self.subs.values() if s.durable) + len(self.queues) >= caps.durable_per_connection:
            return self._limit("durable subscriptions per connection", caps.durable_per_connection)
        if not new:
            return None
        if not upsycle and len(hub.durable) + len(hub.creating) >= caps.durable:
            return self._limit("durable subscriptions in total", caps.durable)
        if not upsycle and hub.durable_bytes + NEW_DURABLE_BYTES > caps.durable_bytes:
            return self._limit("bytes queued for durable subscriptions in total", caps.durable_bytes)
        if hub.disk is not None:
            hub.disk.measure_if_due()
        if hub.disk is not None and not hub.disk.room(NEW_DURABLE_BYTES):
            return self._limit("share of the disk the database may use", caps.disk_share)
        return None

    async def _attach_durable(self, filter_: list[dict[int, Any]], request: MsgSubscribe) -> Any:
        durable = request.durable
        name = durable.name
        existing = self.hub.durable.get(name)
        refused = self._durable_refusal(new=existing is None)
        if refused is not None:
            return refused
        if existing is not None:
            if existing.attached:
                return _reject(BUSY)
            resume = request.start.dseq if isinstance(request.start, Resume) else existing.acked + 1
            existing.cursor = max(existing.acked + 1, min(resume, existing.next_dseq))
            return existing
        if isinstance(request.start, Resume):
            return _reject(MALFORMED)
        sub = Subscription(filter_, name=name)
        initial = await self._initial(filter_, request.start)
        now = self._now()
        # Checked again after the awaits: another connection may have taken the last place.
        if name in self.hub.durable or name in self.hub.creating:
            return _reject(BUSY)
        refused = self._durable_refusal(new=True)
        if refused is not None:
            return refused

        def create(txn: Any) -> Any:
            txn.put(DURABLE_DB, name, sub.record())
            return self.hub.stage(txn, [sub], initial, now)

        self.hub.creating.add(name)
        try:
            self.hub.apply(await self._write(create))
        finally:
            self.hub.creating.discard(name)
        self.hub.durable[name] = sub
        return sub

    async def unsubscribe(self, request: MsgUnsubscribe) -> Any:
        attachment = self.queues.pop(request.sub_id, None)
        if attachment is not None:
            self.service.attached.discard(attachment.key)
            if request.forget:
                await self.service.upsycle.forget(attachment.key)
            return MsgUnsubscribed(request.sub_id)
        sub = self.subs.pop(request.sub_id, None)
        if sub is None:
            return _reject(MALFORMED)
        sub.attached = False
        if not sub.durable:
            self.hub.ephemeral.discard(sub)
        elif request.forget:
            self.hub.forget(sub)

            def forget(txn: Any) -> None:
                txn.delete(DURABLE_DB, sub.name)
                release(txn, queue_records(txn, sub.name))

            await self._write(forget)
        return MsgUnsubscribed(request.sub_id)

    # -- reading ----------------------------------------------------------------------------

    async def request_next(self, request: MsgRequestNext) -> MsgReplyNext:
        await self._acknowledge(request.acks)
        limit = min(request.max_items, MAX_ITEMS_PER_REPLY)
        items = await self._collect(limit)
        if request.blocking and not items:
            with trio.move_on_after(self.blocking_wait):
                while not items:
                    changed = self.hub.next_change()
                    items = await self._collect(limit)
                    if not items:
                        await changed.wait()
            if not items:
                return MsgReplyNext((), False)
        now = self._now()
        has_more = (any(self.hub.has_ready(sub, now) for sub in self.subs.values())
                    or any(self.service.upsycle.has_ready(a.key, a.cursor) for a in self.queues.values()))
        return MsgReplyNext(tuple(items), has_more)

    async def _collect(self, limit: int) -> list[bytes]:
        out: list[bytes] = []
        budget = MAX_REPLY_BYTES - 16
        now = self._now()
        for sub_id, sub in self.subs.items():
            if len(out) >= limit or budget <= 0:
                break
            items, used = self.hub.take(sub, sub_id, limit - len(out), budget, now)
            out.extend(items)
            budget -= used
        for sub_id, attachment in self.queues.items():
            if len(out) >= limit or budget <= 0:
                break
            items, used = await self._take_queue(sub_id, attachment, limit - len(out), budget)
            out.extend(items)
            budget -= used
        return out

    async def _take_queue(self, sub_id: int, attachment: QueueAttachment, limit: int,
                          budget: int) -> tuple[list[bytes], int]:
        """Items of K's queue from the attachment's cursor, within ``limit`` and ``budget``.

        Items numbered but left out for the byte budget are handed out again next time: the
        cursor only passes what was sent.
        """
        ops = self.service.upsycle
        if not ops.has_ready(attachment.key, attachment.cursor):
            return [], 0
        out: list[bytes] = []
        used = 0
        for queued in await ops.next_items(attachment.key, attachment.cursor, min(limit, QUEUE_BATCH)):
            encoded = encode_item(sub_id, queued.dseq, cbor.encode(queued.body))
            if out and used + len(encoded) > budget:
                break
            out.append(encoded)
            used += len(encoded)
            attachment.cursor = queued.dseq + 1
        return out, used

    async def _acknowledge(self, acks: Any) -> None:
        removed: list[Any] = []
        touched: list[Subscription] = []
        for sub_id, dseq in acks:
            attachment = self.queues.get(sub_id)
            if attachment is not None:
                await self._acknowledge_queue(sub_id, attachment, dseq)
                continue
            sub = self.subs.get(sub_id)
            if sub is None:
                raise TopicProtocolError(f"acknowledgement of unknown subscription {sub_id}")
            if dseq >= sub.cursor:
                raise TopicProtocolError(f"acknowledgement of dseq {dseq} not yet delivered on {sub_id}")
            removed.extend(self.hub.ack(sub, dseq))
            if sub.durable:
                touched.append(sub)
        if touched:
            records = [(sub.name, sub.record()) for sub in touched]

            def commit(txn: Any) -> None:
                release(txn, removed)
                for name, record in records:
                    txn.put(DURABLE_DB, name, record)

            await self._write(commit)

    async def _acknowledge_queue(self, sub_id: int, attachment: QueueAttachment, dseq: int) -> None:
        from .upsycle.queues import AckError

        try:
            await self.service.upsycle.ack(attachment.key, dseq)
        except AckError:
            raise TopicProtocolError(f"acknowledgement of dseq {dseq} not yet delivered on {sub_id}") from None

    # -- publication and membership ---------------------------------------------------------

    async def publish(self, request: MsgPublish) -> Any:
        body = bytes(request.body)
        ops = self.service.upsycle
        if ops is not None and tag_of(body) == ops.adapter.tag:
            local = await self._publish_upsycle(ops, body)
            if local is not None:
                return local
        outcome = await self.service.publish(body, client=True)
        if outcome.reject is not None:
            return _refused(outcome.reject)
        return MsgPublished(outcome.dmq_id, outcome.inner_id)

    @staticmethod
    async def _publish_upsycle(ops: Any, body: bytes) -> Any:
        """The checks before wrapping (docs/topics-design.md 4.5): a unicast's source must be a permitted
        service; a multicast to a node-local group is queued here and never wrapped. None:
        wrap and publish."""
        inner = ops.adapter.decode(body)
        if isinstance(inner, Reject):
            return _refused(inner)
        refused = ops.adapter.authorize_publication(inner)
        if refused is not None:
            return _refused(refused)
        local = await ops.publish_local(inner)
        if isinstance(local, Reject):
            return _refused(local)
        return None if local is None else MsgPublished(None, local)

    async def join(self, request: MsgJoin) -> MsgJoinAck:
        ops = self.service.upsycle
        if ops is None:
            return MsgJoinAck(request.group, JOIN_FAILURE, DETAIL_TOPIC_NOT_CARRIED)
        ack = await ops.join(request.subscriber, request.group, request.local, [request.auth.ts, request.auth.sig])
        return MsgJoinAck(request.group, ack.result, int(ack.detail) or None)

    async def leave(self, request: MsgLeave) -> MsgLeaveAck:
        ops = self.service.upsycle
        if ops is None:
            return MsgLeaveAck(request.group, JOIN_FAILURE, DETAIL_TOPIC_NOT_CARRIED)
        ack = await ops.leave(request.subscriber, request.group, [request.auth.ts, request.auth.sig])
        return MsgLeaveAck(request.group, ack.result, int(ack.detail) or None)

    async def pull(self, request: MsgPull) -> Any:
        ops = self.service.upsycle
        if ops is None:
            return _reject(UNKNOWN_TOPIC)
        statuses = await ops.pull(request.subscriber, request.group, list(request.ids))
        return MsgPullReply(tuple((bytes(i), int(s)) for i, s in statuses))

    def close(self) -> None:
        """The connection ended: durable subscriptions detach, ephemeral ones end."""
        for sub in self.subs.values():
            sub.attached = False
            if not sub.durable:
                self.hub.ephemeral.discard(sub)
        self.subs.clear()
        for attachment in self.queues.values():
            self.service.attached.discard(attachment.key)
        self.queues.clear()


