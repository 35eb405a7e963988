"""The stages a topic instance declares to the core's ingress (docs/topics-design.md 2.5).

:class:`TopicStages` is what :class:`~topics.ingress.TopicIngress` hands the core's
:class:`~dmq.ingress.Ingress` as its :class:`~dmq.ingress.IngressStages`:

2. duplicate: the DMQ store, every pending buffer, and the ids adapters rejected (:meth:`TopicStages.known`);
3. DMQ validation in the core's order, with the pool's budget in the message's topic as check 3
   (:class:`TopicRate`, on the times the pool signed: :mod:`topics.bucket`); the pool's state is
   recorded and the budget charged only at the commit (or when the message is parked), once no
   adapter can refuse it;
4. classification and the carried set; 5. adapter decode; 6. adapter validate;
7. one LMDB write transaction: DMQ store insert, core state, ``on_accept``, queue appends;
8. wake deliveries (peers are woken by the mempool itself).

Steps 4 to 8 are the commit stage (:meth:`TopicStages.commit`). Adapter rejections never change
core state, never close a connection (they are :class:`~dmq.validation.TopicRejected`,
trace-only) and are remembered until the message's ``expiresAt``. Messages are taken one at a
time under one lock, so ``validate`` always sees the adapter state of every message accepted
before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from dmq.ingress import LOCAL_ORIGINS, IngressStages, trace_outcomes
from dmq.mempool import DurableMempool
from dmq.message import DmqMessage
from dmq.trace import Tracer
from dmq.validation import Outcome, ReactionPolicy, SigValidationError, TopicRejected, Validator

from .adapter import Accepted, Defer, Delivery, DmqFacts, Origin, Reject, TopicAdapter, ValidationContext
from .bucket import TokenBucket
from .carried import CarriedSet
from .classify import TopicClass, classify
from .containment import Contained
from .pending import Parked, PendingBuffer, RejectedCache
from .raw import raw_delivery
from .reasons import BUFFER_OVERFLOW, BUSY, MALFORMED, RATE_LIMITED, TOPIC_NOT_CARRIED, UNKNOWN_TOPIC, RejectReason
from .store import AdapterDatabases
from .subscriptions import SubscriptionHub
from .trace import TopicAcceptedLate, TopicDeferred, TopicPendingDropped

__all__ = ["TopicStages", "TopicRate", "TopicOutcome", "HUB_OWNER", "TEMPORARY_REASONS"]

#: The framework's own databases (durable subscriptions) are registered under this name.
HUB_OWNER = "topics"
#: Refusals that depend on the moment, not on the message: the same message may be
#: offered again later and accepted, so they are never remembered in the rejected-id cache.
TEMPORARY_REASONS = frozenset({RATE_LIMITED.code, BUSY.code})


@dataclass(frozen=True, slots=True)
class TopicOutcome:
    """One message's fate with the topic details protocol 1000 needs."""

    message: DmqMessage
    error: SigValidationError | None
    deferred: bool = False
    inner_id: bytes | None = None

    @property
    def accepted(self) -> bool:
        return self.error is None


def _origin_of(origin: str) -> Origin:
    return {"local": Origin.LOCAL, "own": Origin.OWN}.get(origin, Origin.PEER)


def _reject_error(adapter: str, reject: Reject) -> TopicRejected:
    return TopicRejected(adapter, reject.reason.name, reject.reason.code, reject.detail)


def _reason_error(adapter: str, reason: RejectReason, detail: str = "") -> TopicRejected:
    return TopicRejected(adapter, reason.name, reason.code, detail)


class TopicRate:
    """Check 3 of a topic instance (a :class:`~dmq.validation.RateRule`): the budget of the
    message's pool in the message's topic, on the time the pool signed (``expiresAt``)."""

    def __init__(self, bucket: TokenBucket, tags: Mapping[int, str]) -> None:
        self.bucket = bucket
        self.tags = tags

    def topic(self, message: DmqMessage) -> str:
        found = classify(message.body, self.tags)
        return "unknown" if found.kind is TopicClass.UNKNOWN else found.name

    def refusal(self, message: DmqMessage, now: float) -> TopicRejected | None:
        topic = self.topic(message)
        if self.bucket.available(message.pool_id, message.expires_at, topic, now):
            return None
        retry = self.bucket.retry_after(message.pool_id, message.expires_at, topic, now)
        return _reason_error(topic, RATE_LIMITED, f"retry after {retry} s")

    def charge(self, message: DmqMessage, now: float) -> None:
        self.bucket.charge(message.pool_id, message.expires_at, self.topic(message), now)


class TopicStages(IngressStages):
    """The stages of a topic network instance: its known ids, its budgets, its commit.

    One message per round, under one lock: a commit changes the adapter state the next
    message is validated against.
    """

    round_size = 1
    record = False

    def __init__(self, mempool: DurableMempool, validator: Validator, tracer: Tracer, *,
                 adapters: Sequence[TopicAdapter], carried: CarriedSet, dbs: AdapterDatabases,
                 hub: SubscriptionHub, bucket: TokenBucket, stake: Any, network_magic: int,
                 params: Mapping[str, Any], reactions: ReactionPolicy, rejected: RejectedCache) -> None:
        super().__init__(mempool, validator)
        self.tracer = tracer
        self.reactions = reactions
        self.adapters = {a.name: a for a in adapters if carried.carries(a.name)}
        self.carried = carried
        self.dbs = dbs
        self.hub = hub
        self.bucket = bucket
        self.stake = stake
        self.network_magic = network_magic
        self.params = dict(params)
        self.rejected = rejected
        self._tags = {a.tag: a.name for a in adapters}
        self.rate = TopicRate(bucket, self._tags)
        self.pending = {name: PendingBuffer(a.pending_limit, a.pending_per_key) for name, a in self.adapters.items()}
        self.lock = trio.Lock()

    def is_known(self, dmq_id: bytes, now: float) -> bool:
        """Step 2: in the DMQ store, parked in a pending buffer, or rejected by an adapter."""
        return (self.mempool.contains(dmq_id)
                or any(buffer.holds(dmq_id) for buffer in self.pending.values())
                or self.rejected.holds(dmq_id, now))

    def known(self) -> Callable[[bytes], bool]:
        now = self.validator.clock.now()
        return lambda dmq_id: self.is_known(dmq_id, now)

    def contain(self, message: DmqMessage, origin: str) -> Contained:
        """A failure of the code (not a refusal) refuses this message only (:mod:`topics.containment`)."""
        return Contained(self.tracer, "ingress", f"{origin} {message.message_id.hex()}")

    def failed(self, message: DmqMessage, failure: str | None) -> TopicOutcome:
        """The outcome of a message whose processing failed: ``malformed``, naming the failure.

        Adapters rebuild their caches from the committed state, in case the failure left
        them half updated (a commit that did not happen)."""
        found = classify(message.body, self._tags)
        adapter = self.adapters.get(found.name) if found.kind is TopicClass.ADAPTER else None
        if adapter is not None:
            adapter.discard_caches()
        label = "unknown" if found.kind is TopicClass.UNKNOWN else found.name
        return TopicOutcome(message, _reason_error(label, MALFORMED, f"failed: {failure}"))

    async def commit(self, outcomes: list[Outcome], origin: str) -> list[Outcome]:
        (outcome,) = outcomes
        if outcome.error is not None:
            return [TopicOutcome(outcome.message, outcome.error)]
        return [await self._commit_valid(outcome.message, origin)]

    async def _commit_valid(self, message: DmqMessage, origin: str) -> TopicOutcome:
        """Steps 4 to 7 for a message that passed the DMQ checks."""
        now = self.validator.clock.now()
        found = classify(message.body, self._tags)
        # 4. classification and carried set
        if found.kind is TopicClass.RAW:
            if not self.carried.raw:
                return TopicOutcome(message, _reason_error("raw", TOPIC_NOT_CARRIED))
            await self._commit_raw(message, now)
            return TopicOutcome(message, None)
        if found.kind is TopicClass.UNKNOWN:
            return self._refuse(message, "unknown", Reject(UNKNOWN_TOPIC), now)
        adapter = self.adapters.get(found.name)
        if adapter is None:
            return self._refuse(message, found.name, Reject(TOPIC_NOT_CARRIED), now)
        # 5. adapter decode
        inner = adapter.decode(message.body)
        if isinstance(inner, Reject):
            return self._refuse(message, adapter.name, inner, now)
        facts = DmqFacts(message.message_id, message.pool_id, message.kes_period, message.expires_at,
                         _origin_of(origin), None if origin in LOCAL_ORIGINS else origin)
        return await self._validate_and_commit(adapter, message, inner, facts, now, charged=False, origin=origin)

    def _refuse(self, message: DmqMessage, adapter: str, reject: Reject, now: float) -> TopicOutcome:
        if reject.reason.code not in TEMPORARY_REASONS:
            self.rejected.add(message.message_id, message.expires_at)
        return TopicOutcome(message, _reject_error(adapter, reject))

    def _context(self, adapter: TopicAdapter, facts: DmqFacts, view: Any) -> ValidationContext:
        return ValidationContext(self.validator.clock, facts, self.stake, view, self.params, self.network_magic)

    async def _validate_and_commit(self, adapter: TopicAdapter, message: DmqMessage, inner: Any, facts: DmqFacts,
                                   now: float, *, charged: bool, origin: str,
                                   provided: list[bytes] | None = None) -> TopicOutcome:
        """Steps 6 and 7; ids the commit makes available go to ``provided`` when given, else
        parked messages waiting for them are released at once."""
        # 6. adapter validate, against the committed adapter state
        with self.dbs.reading(adapter.name) as view:
            verdict = adapter.validate(inner, self._context(adapter, facts, view))
        if isinstance(verdict, Reject):
            return self._refuse(message, adapter.name, verdict, now)
        if isinstance(verdict, Defer):
            if not charged:
                self.rate.charge(message, now)
            deadline = now + verdict.max_wait if verdict.max_wait is not None else float(message.expires_at)
            missing = {m for m in verdict.missing}
            parked = Parked(message, adapter.name, inner, facts, missing, deadline, origin,
                            key=adapter.pending_key(inner, facts))
            for evicted in self.pending[adapter.name].park(parked):
                self.tracer.emit(TopicPendingDropped(self.tracer.now(), evicted.facts.dmq_id, evicted.adapter,
                                                     BUFFER_OVERFLOW.name))
            self.tracer.emit(TopicDeferred(self.tracer.now(), facts.dmq_id, adapter.name, len(missing), origin))
            return TopicOutcome(message, None, deferred=True, inner_id=adapter.inner_id(inner))
        # 7. commit
        await self._commit_topic(adapter, message, inner, facts, now, charged=charged)
        made_available = [facts.dmq_id, *adapter.provides(inner)]
        if provided is not None:
            provided.extend(made_available)
        else:
            await self._release(adapter, made_available)
        return TopicOutcome(message, None, inner_id=adapter.inner_id(inner))

    async def _commit_raw(self, message: DmqMessage, now: float) -> None:
        self.validator.accept(message, rate=self.rate)
        updates = self.validator.state.updates([message.pool_id])
        await self._commit([message], updates, None, lambda txn: [raw_delivery(message, int(now))], now)

    async def _commit_topic(self, adapter: TopicAdapter, message: DmqMessage, inner: Any, facts: DmqFacts,
                            now: float, *, charged: bool) -> None:
        late = now > message.expires_at
        accepted = Accepted(message, facts, inner, int(now), late)

        def on_accept(txn: Any) -> Iterable[Delivery]:
            return adapter.on_accept(accepted, self.dbs.writer(txn, adapter.name)) or ()

        if late:
            # Accepted into the adapter store only: never stored for peers or protocol 15.
            await self._commit([], {}, adapter.name, on_accept, now)
            self.tracer.emit(TopicAcceptedLate(self.tracer.now(), facts.dmq_id, adapter.name))
        else:
            self.validator.accept(message, rate=self.rate, charged=charged)
            again = self._rediffuse(adapter, inner, now)
            updates = self.validator.state.updates(m.pool_id for m in (message, *again))
            await self._commit([message, *again], updates, adapter.name, on_accept, now)

    def _rediffuse(self, adapter: TopicAdapter, inner: Any, now: float) -> list[DmqMessage]:
        """Accept the messages carried inside ``inner`` that go back into the DMQ store, so that
        they diffuse again (2.8 step 4): only while within their own network lifetime, when not
        held already and when they pass the DMQ checks here, budgets included, as a direct copy
        would (a kept block its pool's node admitted when it was new passes them: budgets are on
        signed times)."""
        out = []
        for carried in adapter.rediffuse(inner):
            if not self.is_known(carried.message_id, now) and self.validator.check(carried, rate=self.rate) is None:
                self.validator.accept(carried, rate=self.rate)
                out.append(carried)
        return out

    async def _commit(self, messages: list[DmqMessage], updates: Mapping[str, Any], adapter: str | None,
                      make_deliveries: Any, now: float) -> None:
        targets = self.hub.targets()
        staged: list[Any] = []

        def in_txn(txn: Any) -> None:
            deliveries = list(make_deliveries(txn))
            staged.append(self.hub.stage(self.dbs.writer(txn, HUB_OWNER), targets, deliveries, now))

        assert isinstance(self.mempool, DurableMempool)
        await self.mempool.submit(messages, pool_state_updates=updates or None, in_txn=in_txn)
        if staged:
            self.hub.apply(staged[0])
        if adapter is not None:
            # An adapter's own queues (UPSYCLE subscribers) may have grown in this commit.
            self.hub.wake()

    async def _release(self, adapter: TopicAdapter, provided: list[bytes]) -> None:
        """Re-run validation and commit for parked messages whose dependencies arrived."""
        work = list(provided)
        while work:
            ready = self.pending[adapter.name].satisfy(work)
            work = []
            for parked in ready:
                now = self.validator.clock.now()
                with self.contain(parked.message, parked.origin) as guard:
                    outcome = await self._validate_and_commit(adapter, parked.message, parked.inner, parked.facts,
                                                              now, charged=True, origin=parked.origin, provided=work)
                if guard.failure is not None:
                    outcome = self.failed(parked.message, guard.failure)
                trace_outcomes(self.tracer, self.reactions, [outcome], parked.origin, 0)

