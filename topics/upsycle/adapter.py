"""The UPSYCLE adapter: the hooks of docs/topics-design.md 2.4 for the multicast routing design (section 4).

The framework owns the DMQ checks, the transaction and delivery to connections; this class
decides what an UPSYCLE body means. Besides the contract hooks it offers the local
operations of protocol 1000 that only UPSYCLE has (JOIN, LEAVE, PULL, reading and
acknowledging a durable subscriber's queue, node-local group publication), each inside a
transaction the caller opens.
"""

from __future__ import annotations

import math

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topics.adapter import (
    FLAG_ANSWER,
    FLAG_LATE,
    FLAG_LOCAL,
    ITEM_MESSAGE,
    OK,
    Accepted,
    AdapterTxn,
    Delivery,
    Origin,
    Priority,
    Reject,
    Start,
    StoreView,
    TopicAdapter,
    ValidationContext,
    Verdict,
)
from topics.classify import tag_of
from topics.filters import matches
from topics.reasons import BAD_SIGNATURE, INNER_EXPIRED, NOT_AUTHORIZED

from .errors import UpsycleReject
from .identity import verify
from .membership import Ack, Membership
from .params import ADAPTER_NAME, ADAPTER_NUMBER, TAG, UpsycleParams
from .queues import QueuedDelivery, SubscriberQueues, item_meta
from .recovery import GapNotice, Recovery
from .state import DATABASES, StoredMessage, UpsycleState
from .timebase import queue_deadline, wrap_expires_at
from .validation import check_advertisement, check_pull_request, check_reissue, check_routed
from .wire import (
    KIND_ADVERTISEMENT,
    KIND_ROUTED,
    Envelope,
    PeerAdvertisement,
    PullRequest,
    Reissue,
    RoutedMessage,
    decode_envelope,
    decode_routed,
)

__all__ = ["UpsycleAdapter", "PullStatus"]


class PullStatus:
    """``pullStatus`` of docs/topics-design.md 3.5."""

    QUEUED = 0
    REQUESTED = 1
    NOT_FOUND = 2
    EXPIRED = 3
    NOT_MEMBER = 4
    RATE_LIMITED = 5


class UpsycleAdapter(TopicAdapter):
    name = ADAPTER_NAME
    tag = TAG
    number = ADAPTER_NUMBER
    databases = DATABASES

    def __init__(self, params: UpsycleParams = UpsycleParams(), *, services: Iterable[bytes] | None = None,
                 can_publish: bool = False, network_magic: int = 0, seed: int | None = None) -> None:
        self.params = params
        self.network_magic = network_magic
        self.state = UpsycleState()
        self.queues = SubscriberQueues(self.state, params)
        self.membership = Membership(self.state, self.queues, params,
                                     None if services is None else frozenset(services))
        self.recovery = Recovery(self.state, self.queues, params, can_publish=can_publish, seed=seed)
        self._pulls: dict[bytes, list[float]] = {}

    # -- classification and decoding ---------------------------------------------------------

    def classify(self, body: bytes) -> bytes | None:
        if tag_of(body) != TAG:
            return None
        try:
            return decode_envelope(body, self.params).topic_key
        except UpsycleReject:
            return None

    def decode(self, body: bytes) -> Envelope | Reject:
        try:
            return decode_envelope(body, self.params)
        except UpsycleReject as exc:
            return Reject(exc.reason, exc.detail)

    def inner_id(self, inner: Envelope) -> bytes | None:
        content = inner.content
        if isinstance(content, RoutedMessage):
            return content.id
        if isinstance(content, Reissue):
            return content.message.id
        return None

    def provides(self, inner: Envelope) -> Iterable[bytes]:
        ident = self.inner_id(inner)
        return () if ident is None or isinstance(inner.content, Reissue) else (ident,)

    # -- validation --------------------------------------------------------------------------

    def validate(self, inner: Envelope, ctx: ValidationContext) -> Verdict:
        facts, now, view = ctx.facts, ctx.now, ctx.store
        content = inner.content
        found: Any
        if isinstance(content, RoutedMessage):
            found = None
            if facts.origin is not Origin.PEER:
                found = self.authorize_publication(inner)
            if found is None:
                found = check_routed(content, facts.expires_at, now, view, self.state, self.params)
        elif isinstance(content, PullRequest):
            found = check_pull_request(content, facts.pool_id, facts.expires_at, now, view, self.state, self.params)
        elif isinstance(content, Reissue):
            found = check_reissue(content, facts.expires_at, now, view, self.state, self.params)
        else:
            found = check_advertisement(content, facts.expires_at, now, view, self.state, self.params)
        return OK if found is None else found

    def authorize_publication(self, inner: Envelope) -> Reject | None:
        """A unicast needs a permitted local service as ``src`` (docs/topics-design.md 4.5)."""
        content = inner.content
        if isinstance(content, RoutedMessage) and not content.is_multicast:
            if not self.membership.permitted(content.src):  # type: ignore[arg-type]
                return Reject(NOT_AUTHORIZED, "the unicast source is not a permitted local service")
        return None

    def publication_key(self, inner: Envelope) -> bytes | None:
        """The unicast source, the multicast group, the advertising service (2.7)."""
        content = inner.content
        if isinstance(content, RoutedMessage):
            return content.grp if content.is_multicast else content.src
        if isinstance(content, PeerAdvertisement):
            return content.id
        return None

    def publication_priority(self, inner: Envelope) -> Priority | None:
        """Answers before requests; advertisements are refreshes (2.7)."""
        content = inner.content
        if isinstance(content, Reissue):
            return Priority.ANSWER
        if isinstance(content, PullRequest):
            return Priority.REQUEST
        return Priority.REFRESH if isinstance(content, PeerAdvertisement) else None

    def expires_at(self, inner: Envelope, now: float) -> int:
        t = int(now)
        content = inner.content
        if isinstance(content, PullRequest):
            return t + self.params.request_lifetime
        if isinstance(content, Reissue):
            content = content.message
        assert isinstance(content, (RoutedMessage, PeerAdvertisement))
        return wrap_expires_at(content.inner_expiry, content.ttl, t, self.params)

    # -- acceptance --------------------------------------------------------------------------

    def on_accept(self, message: Accepted, txn: AdapterTxn) -> Sequence[Delivery]:
        content = message.inner.content
        flags = (FLAG_LATE if message.late else 0) | (0 if message.facts.origin is Origin.PEER else FLAG_LOCAL)
        if isinstance(content, RoutedMessage):
            return self._route(txn, content, message, flags)
        if isinstance(content, Reissue):
            self.state.count_answer(txn, content.request, content.message.id)
            if self.state.seen_until(txn, content.message.id) is not None:
                return ()
            return self._route(txn, content.message, message, flags | FLAG_ANSWER)
        if isinstance(content, PullRequest):
            facts = message.facts
            self.state.put_request(txn, facts.dmq_id, content.group, list(content.ids), facts.expires_at,
                                   facts.pool_id, message.arrival)
            if facts.origin is not Origin.OWN:
                self.recovery.schedule_answers(txn, facts.dmq_id, list(content.ids), message.arrival)
            return ()
        return self._advertise(txn, content, message)

    def _route(self, txn: AdapterTxn, routed: RoutedMessage, message: Accepted, flags: int) -> list[Delivery]:
        arrival = message.arrival
        inner_expiry = routed.inner_expiry
        self.state.mark_seen(txn, routed.id, min(inner_expiry, arrival + self.params.queue_lifetime))
        key = routed.topic_key
        if routed.is_multicast:
            self.state.close_gap(txn, key, routed.id)
            recipients = self.state.members(txn, key)
        else:
            recipients = [key] if self.state.subscriber(txn, key) is not None else []
        deadline = queue_deadline(inner_expiry, routed.ttl, arrival, self.params)
        size = len(message.message.raw)
        retain = 0
        if routed.ttl > 0 and deadline > arrival:
            for member in recipients:
                self.queues.append_message(txn, member, routed.id, key, deadline, size, arrival, flags)
            if recipients:
                retain = deadline
        if routed.is_multicast and recipients:
            retain = max(retain, min(arrival + self.params.pull_window, inner_expiry))
            self.recovery.observe_seen(txn, key, routed.seen, arrival)
        if retain > arrival:
            self.state.put_message(txn, routed.id, StoredMessage(
                routed.raw, message.message.raw, message.facts.dmq_id, message.facts.pool_id, arrival,
                inner_expiry, retain, flags))
        meta = item_meta(key, routed.id, message.facts.pool_id, arrival, flags)
        # Attached connections get the message at arrival even when it is never queued
        # (ttl = 0): its live item stays deliverable until the end of the arrival second.
        return [Delivery(ADAPTER_NUMBER, [ITEM_MESSAGE, meta, message.message.raw],
                         facets=self._facets(routed, message.facts.pool_id),
                         deadline=max(deadline, arrival + 1), dedup=routed.id)]

    @staticmethod
    def _facets(routed: RoutedMessage, pool: bytes) -> dict[int, frozenset[Any]]:
        return {1 if routed.is_multicast else 2: frozenset({routed.topic_key}), 4: frozenset({pool}),
                9: frozenset({KIND_ROUTED})}

    def _advertise(self, txn: AdapterTxn, ad: PeerAdvertisement, message: Accepted) -> list[Delivery]:
        remove_at = min(ad.inner_expiry, message.arrival + ad.ttl)
        self.state.put_advertisement(txn, ad.id, ad.raw, message.message.raw, ad.rev, remove_at, message.arrival)
        meta = item_meta(ad.id, None, message.facts.pool_id, message.arrival, 0)
        return [Delivery(ADAPTER_NUMBER, [ITEM_MESSAGE, meta, message.message.raw],
                         facets={4: frozenset({message.facts.pool_id}), 9: frozenset({KIND_ADVERTISEMENT})},
                         deadline=remove_at)]

    # -- subscriptions -----------------------------------------------------------------------

    def deliver(self, filters: Sequence[Mapping[int, Any]], start: Start, view: StoreView,
                now: float) -> Iterable[Delivery]:
        if start is Start.STATE:
            items = []
            for advertiser, (_, dmq_message, _, remove_at, arrival) in self.state.advertisements(view):
                if remove_at > now:
                    items.append((arrival, Delivery(
                        ADAPTER_NUMBER, [ITEM_MESSAGE, item_meta(advertiser, None, None, arrival, 0), dmq_message],
                        facets={9: frozenset({KIND_ADVERTISEMENT})}, deadline=remove_at)))
        elif start is Start.RETAINED:
            items = []
            for ident, stored in self._retained(view, now):
                routed = decode_routed(stored.routed)
                meta = item_meta(routed.topic_key, ident, stored.pool, stored.arrival, stored.flags)
                items.append((stored.arrival, Delivery(
                    ADAPTER_NUMBER, [ITEM_MESSAGE, meta, stored.dmq_message],
                    facets=self._facets(routed, stored.pool), deadline=stored.retain_until, dedup=ident)))
        else:
            return []
        items.sort(key=lambda pair: pair[0])
        return [d for _, d in items if not filters or matches(filters, d)]

    def _retained(self, view: StoreView, now: float) -> Iterable[tuple[bytes, StoredMessage]]:
        for key, _ in view.scan("msg", b"m"):
            stored = self.state.message(view, key[1:])
            if stored is not None and stored.retain_until > now and stored.inner_expiry > now:
                yield key[1:], stored

    # -- local operations of protocol 1000 ---------------------------------------------------

    def join(self, txn: AdapterTxn, subscriber: bytes, group: bytes, local: bool, auth: object, now: float) -> Ack:
        return self.membership.join(txn, subscriber, group, local, auth, now, self.network_magic)

    def leave(self, txn: AdapterTxn, subscriber: bytes, group: bytes, auth: object, now: float) -> Ack:
        return self.membership.leave(txn, subscriber, group, auth, now, self.network_magic)

    def next_items(self, txn: AdapterTxn, subscriber: bytes, cursor: int | None, max_items: int,
                   now: float) -> list[QueuedDelivery]:
        return self.queues.next_items(txn, subscriber, cursor, max_items, now)

    def ack(self, txn: AdapterTxn, subscriber: bytes, dseq: int) -> int:
        return self.queues.ack(txn, subscriber, dseq)

    def pull(self, txn: AdapterTxn, subscriber: bytes, group: bytes, ids: Sequence[bytes],
             now: float) -> list[tuple[bytes, int]]:
        """``MsgPull``: queue held messages again, request the others from the network (4.6)."""
        if not self.state.is_member(txn, subscriber, group):
            return [(ident, PullStatus.NOT_MEMBER) for ident in ids]
        statuses: list[tuple[bytes, int]] = []
        wanted: list[bytes] = []
        recent = [t for t in self._pulls.get(subscriber, []) if t > now - self.params.request_window]
        for ident in ids:
            stored = self.state.message(txn, ident)
            if stored is not None:
                if stored.inner_expiry <= now:
                    statuses.append((ident, PullStatus.EXPIRED))
                else:
                    routed = decode_routed(stored.routed)
                    if routed.topic_key != group:
                        statuses.append((ident, PullStatus.NOT_FOUND))
                        continue
                    deadline = max(queue_deadline(stored.inner_expiry, max(routed.ttl, 1), int(now), self.params),
                                   int(now) + 1)
                    self.queues.append_message(txn, subscriber, ident, group, deadline, len(stored.dmq_message),
                                               int(now), stored.flags)
                    statuses.append((ident, PullStatus.QUEUED))
            elif not self.recovery.can_publish:
                statuses.append((ident, PullStatus.NOT_FOUND))
            elif len(recent) >= self.params.requests_per_window:
                statuses.append((ident, PullStatus.RATE_LIMITED))
            else:
                wanted.append(ident)
                statuses.append((ident, PullStatus.REQUESTED))
        if wanted:
            recent.append(now)
            self.recovery.request(group, wanted, now)
        self._pulls[subscriber] = recent
        return statuses

    def publish_local(self, txn: AdapterTxn, inner: Envelope, now: float) -> Reject | bytes | None:
        """A multicast to a node-local group: members get it as kind 5, it is never wrapped.

        Returns None when the publication is not for a local group (the node wraps it), the
        inner id once delivered locally, or the reject.
        """
        routed = inner.content
        if not isinstance(routed, RoutedMessage) or not routed.is_multicast:
            return None
        if not self.state.local_group(txn, routed.grp):  # type: ignore[arg-type]
            return None
        if routed.inner_expiry <= now:
            return Reject(INNER_EXPIRED, "the inner expiry has passed")
        if not verify(routed.signer, routed.signed_bytes, routed.sig):
            return Reject(BAD_SIGNATURE, "the group signature does not verify")
        deadline = queue_deadline(routed.inner_expiry, routed.ttl, int(now), self.params)
        if routed.ttl > 0 and deadline > now:
            for member in self.state.members(txn, routed.grp):  # type: ignore[arg-type]
                self.queues.append_local(txn, member, routed.raw, routed.grp, deadline, int(now))  # type: ignore[arg-type]
        return routed.id

    def due_publications(self, view: StoreView, now: float) -> list[bytes]:
        """Bodies this node should publish now (pull requests, answers)."""
        return self.recovery.due_publications(view, now)

    def publications_scheduled(self) -> bool:
        """Whether :meth:`due_publications` may return something before the state changes."""
        return self.recovery.publications_scheduled()

    # -- retention ---------------------------------------------------------------------------

    def prune(self, now: float, txn: AdapterTxn) -> None:
        self.prune_and_notify(now, txn)

    def next_prune(self, view: StoreView) -> int | None:
        """The first whole second at which :meth:`prune_and_notify` has something to do, read
        from the time indexes it walks (None: nothing held that expires or comes due): the
        node skips the prune's transaction, and its thread hop, until then."""
        state = self.state
        times = [t + 1 for t in (state.soonest(view, db) for db in ("q", "msg", "seen", "ad")) if t is not None]
        requested = state.soonest(view, "req")
        if requested is not None:
            times.append(requested + self.params.request_window + 1)
        soonest = min(times, default=math.inf)
        soonest = self.recovery.next_gap_change(view, soonest)
        return None if soonest == math.inf else int(soonest)

    def prune_and_notify(self, now: float, txn: AdapterTxn) -> list[GapNotice]:
        """Drop everything past its deadline, then emit the gap notices that are due."""
        t = int(now)
        self.queues.prune(txn, t)
        for index_key in self.state.due(txn, "msg", t):
            txn.delete("msg", index_key)
            txn.delete("msg", b"m" + index_key[9:])
        for index_key in self.state.due(txn, "seen", t):
            txn.delete("seen", index_key)
            txn.delete("seen", b"i" + index_key[9:])
        for index_key in self.state.due(txn, "ad", t):
            txn.delete("ad", index_key)
            txn.delete("ad", b"a" + index_key[9:])
        for index_key in self.state.due(txn, "req", t - self.params.request_window):
            self._drop_request(txn, index_key[9:])
            txn.delete("req", index_key)
        return self.recovery.check_gaps(txn, t)

    def _drop_request(self, txn: AdapterTxn, dmq_id: bytes) -> None:
        held = self.state.request(txn, dmq_id)
        txn.delete("req", b"r" + dmq_id)
        for key, _ in list(txn.scan("req", b"n" + dmq_id)):
            txn.delete("req", key)
        if held is not None:
            group, _, _, pool = held
            prefix = b"p" + pool + group
            for key, _ in list(txn.scan("req", prefix)):
                if key.endswith(dmq_id):
                    txn.delete("req", key)

