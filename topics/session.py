"""One protocol-1000 connection's view of the node: its subscriptions and requests (TOPICS.md 3.4).

The session answers each request of :mod:`miniprotocols.local_topic_subscription` with a
message; the protocol loop sends it. Subscriptions are objects of the instance's
:class:`~topics.subscriptions.SubscriptionHub`; this session attaches and detaches them,
reads their queues into replies and applies acknowledgements. Durable state changes
(creation, acknowledgements, forgetting) are committed in LMDB transactions of their own,
in a worker thread.
"""

from __future__ import annotations

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

from .adapter import JOIN_FAILURE, MembershipOperations, Priority, Start
from .auth import verify_auth
from .filters import FilterError, check_filter
from .ingress import HUB_OWNER
from .raw import is_raw_message, raw_delivery
from .reasons import BUSY, MALFORMED, NOT_AUTHORIZED, RATE_LIMITED, UNKNOWN_TOPIC, RejectReason
from .subscriptions import DURABLE_DB, MAX_SUBSCRIPTIONS, QUEUE_DB, Subscription, SubscriptionHub

__all__ = ["TopicSession", "BLOCKING_WAIT", "PULL_STATUS_NOT_MEMBER"]

#: A blocking request with nothing to deliver is answered empty after this long (P).
BLOCKING_WAIT = 60.0
PULL_STATUS_NOT_MEMBER = 4
RAW = 0
UPSYCLE = 1


def _reject(reason: RejectReason, retry_after: int | None = None) -> MsgReject:
    return MsgReject(reason.code, reason.name, retry_after)


class TopicSession:
    """The handler of one connection (see ``miniprotocols.local_topic_subscription.serve``)."""

    def __init__(self, service: Any, client: str, *, blocking_wait: float = BLOCKING_WAIT) -> None:
        self.service = service
        self.client = client
        self.blocking_wait = blocking_wait
        self.subs: dict[int, Subscription] = {}
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
        if len(self.subs) >= MAX_SUBSCRIPTIONS:
            return _reject(RATE_LIMITED)
        try:
            filter_ = check_filter(request.filter)
        except FilterError:
            return _reject(MALFORMED)
        if request.durable is None:
            if isinstance(request.start, Resume):
                return _reject(MALFORMED)
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

    async def _attach_durable(self, filter_: list[dict[int, Any]], request: MsgSubscribe) -> Any:
        durable = request.durable
        name = durable.name
        if any(s[0] == UPSYCLE for s in filter_):
            auth = durable.auth
            if auth is None or len(name) != 32 or not verify_auth(
                    "attach", name, None, auth.ts, auth.sig, self.service.network_magic, self._now()):
                return _reject(NOT_AUTHORIZED)
        existing = self.hub.durable.get(name)
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

        def create(txn: Any) -> Any:
            txn.put(DURABLE_DB, name, sub.record())
            return self.hub.stage(txn, [sub], initial, now)

        self.hub.apply(await self._write(create))
        self.hub.durable[name] = sub
        return sub

    async def unsubscribe(self, request: MsgUnsubscribe) -> Any:
        sub = self.subs.pop(request.sub_id, None)
        if sub is None:
            return _reject(MALFORMED)
        sub.attached = False
        if not sub.durable:
            self.hub.ephemeral.discard(sub)
        elif request.forget:
            self.hub.durable.pop(sub.name, None)
            prefix = bytes((len(sub.name),)) + sub.name

            def forget(txn: Any) -> None:
                txn.delete(DURABLE_DB, sub.name)
                for key, _ in list(txn.scan(QUEUE_DB, prefix)):
                    txn.delete(QUEUE_DB, key)

            await self._write(forget)
        return MsgUnsubscribed(request.sub_id)

    # -- reading ----------------------------------------------------------------------------

    async def request_next(self, request: MsgRequestNext) -> MsgReplyNext:
        await self._acknowledge(request.acks)
        limit = min(request.max_items, MAX_ITEMS_PER_REPLY)
        items = self._collect(limit)
        if request.blocking and not items:
            with trio.move_on_after(self.blocking_wait):
                while not items:
                    await self.hub.wait_changed()
                    items = self._collect(limit)
            if not items:
                return MsgReplyNext((), False)
        now = self._now()
        has_more = any(self.hub.has_ready(sub, now) for sub in self.subs.values())
        return MsgReplyNext(tuple(items), has_more)

    def _collect(self, limit: int) -> list[bytes]:
        out: list[bytes] = []
        budget = MAX_REPLY_BYTES - 16
        now = self._now()
        for sub_id, sub in self.subs.items():
            if len(out) >= limit or budget <= 0:
                break
            items, used = self.hub.take(sub, sub_id, limit - len(out), budget, now)
            out.extend(items)
            budget -= used
        return out

    async def _acknowledge(self, acks: Any) -> None:
        removed: list[bytes] = []
        touched: list[Subscription] = []
        for sub_id, dseq in acks:
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
                for key in removed:
                    txn.delete(QUEUE_DB, key)
                for name, record in records:
                    txn.put(DURABLE_DB, name, record)

            await self._write(commit)

    # -- publication and membership ---------------------------------------------------------

    async def publish(self, request: MsgPublish) -> Any:
        outcome = await self.service.publish(request.body, Priority.CLIENT)
        if outcome.reject is not None:
            r = outcome.reject
            return MsgReject(r.reason.code, r.reason.name, r.retry_after)
        return MsgPublished(outcome.dmq_id, outcome.inner_id)

    def _membership(self) -> MembershipOperations | None:
        adapter = self.service.ingress.adapters.get("upsycle")
        return adapter if isinstance(adapter, MembershipOperations) else None

    def _authorized(self, op: str, subscriber: bytes, group: bytes, auth: Any) -> bool:
        return verify_auth(op, subscriber, group, auth.ts, auth.sig, self.service.network_magic, self._now())

    async def join(self, request: MsgJoin) -> MsgJoinAck:
        ops = self._membership()
        if ops is None:
            return MsgJoinAck(request.group, JOIN_FAILURE, UNKNOWN_TOPIC.code)
        if not self._authorized("join", request.subscriber, request.group, request.auth):
            return MsgJoinAck(request.group, JOIN_FAILURE, NOT_AUTHORIZED.code)
        result, detail = await ops.join(request.subscriber, request.group, request.local)
        return MsgJoinAck(request.group, result, detail)

    async def leave(self, request: MsgLeave) -> MsgLeaveAck:
        ops = self._membership()
        if ops is None:
            return MsgLeaveAck(request.group, JOIN_FAILURE, UNKNOWN_TOPIC.code)
        if not self._authorized("leave", request.subscriber, request.group, request.auth):
            return MsgLeaveAck(request.group, JOIN_FAILURE, NOT_AUTHORIZED.code)
        result, detail = await ops.leave(request.subscriber, request.group)
        return MsgLeaveAck(request.group, result, detail)

    async def pull(self, request: MsgPull) -> Any:
        ops = self._membership()
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


