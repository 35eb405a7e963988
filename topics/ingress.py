"""The topic ingress pipeline after DMQ decoding (docs/topics-design.md 2.5), for instances carrying adapters.

Every way in (node-to-node, protocol 14, protocol 1000 publication, re-publication) runs the
core's one pipeline (:class:`~dmq.ingress.Ingress`) with the stages a topic instance
declares (:class:`~dmq.ingress.IngressStages`); the first failure wins:

1. decode (the core's, keeps raw spans);
2. duplicate: the DMQ store, every pending buffer, and the ids adapters rejected (:meth:`TopicIngress.known`);
3. DMQ validation in the core's order, with the per-pool token bucket as check 3 in place
   of the 60 s spacing (:meth:`TopicIngress.screen`); the pool's state is recorded and the
   bucket charged only at the commit, once no adapter can refuse the message;
4. classification and the carried set; 5. adapter decode; 6. adapter validate;
7. one LMDB write transaction: DMQ store insert, core state, ``on_accept``, queue appends;
8. wake deliveries (peers are woken by the mempool itself).

Steps 4 to 8 are the commit stage (:meth:`TopicIngress.commit`).

Adapter rejections never change core state, never close a connection (they are
:class:`~dmq.validation.TopicRejected`, trace-only) and are remembered until the message's
``expiresAt``. Messages are taken one at a time under one lock, so ``validate`` always
sees the adapter state of every message accepted before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import trio

from dmq.ingress import LOCAL_ORIGINS, Ingress, IngressStages
from dmq.mempool import DurableMempool
from dmq.message import DmqMessage
from dmq.trace import Tracer
from dmq.validation import (
    Outcome,
    ReactionPolicy,
    SigValidationError,
    TopicRejected,
    Validator,
)

from .adapter import (
    Accepted,
    AdapterRuntime,
    Defer,
    Delivery,
    DmqFacts,
    Origin,
    Reject,
    TopicAdapter,
    ValidationContext,
)
from .bucket import TokenBucket
from .carried import RAW, CarriedSet
from .classify import TopicClass, classify
from .containment import Contained
from .pending import Parked, PendingBuffer, RejectedCache
from .raw import raw_delivery
from .reasons import BUFFER_OVERFLOW, BUSY, MALFORMED, RATE_LIMITED, TOPIC_NOT_CARRIED, UNKNOWN_TOPIC, RejectReason
from .store import AdapterDatabases
from .subscriptions import HUB_DATABASES, SubscriptionHub, release
from .trace import TopicAcceptedLate, TopicDeferred, TopicPendingDropped

__all__ = ["TopicIngress", "TopicOutcome", "HUB_OWNER", "PRUNE_INTERVAL"]

#: The framework's own databases (durable subscriptions) are registered under this name.
HUB_OWNER = "topics"
#: How often adapters prune and pending buffers expire (seconds).
PRUNE_INTERVAL = 5.0
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


class TopicIngress(Ingress, IngressStages):
    """:class:`~dmq.ingress.Ingress` of a topic network instance, which declares its own stages.

    One message per round, under one lock: a commit changes the adapter state the next
    message is validated against.
    """

    round_size = 1
    record = False

    def __init__(
        self,
        mempool: DurableMempool,
        validator: Validator,
        tracer: Tracer,
        *,
        adapters: Sequence[TopicAdapter],
        carried: CarriedSet,
        dbs: AdapterDatabases,
        hub: SubscriptionHub | None = None,
        bucket: TokenBucket | None = None,
        stake: Any = None,
        network_magic: int = 0,
        params: Mapping[str, Any] | None = None,
        allow_legacy: bool = False,
        reactions: ReactionPolicy = ReactionPolicy(),
        rejected: RejectedCache | None = None,
    ) -> None:
        super().__init__(mempool, validator, tracer, allow_legacy=allow_legacy, reactions=reactions, stages=self)
        self.adapters = {a.name: a for a in adapters if carried.carries(a.name)}
        self.carried = carried
        self.dbs = dbs
        self.hub = hub if hub is not None else SubscriptionHub()
        self.bucket = bucket if bucket is not None else TokenBucket()
        self.stake = stake if stake is not None else validator.stake_view
        self.network_magic = network_magic
        self.params = dict(params or {})
        self.rejected = rejected if rejected is not None else RejectedCache()
        self._tags = {a.tag: a.name for a in adapters}
        self.pending = {name: PendingBuffer(a.pending_limit, a.pending_per_key) for name, a in self.adapters.items()}
        self.lock = trio.Lock()
        for name, adapter in self.adapters.items():
            dbs.register(name, adapter.databases)
        dbs.register(HUB_OWNER, HUB_DATABASES)
        self._load()

    # -- start-up ---------------------------------------------------------------------------

    def _load(self) -> None:
        """Drop retained state past its deadline, then reload durable subscriptions (2.9)."""
        now = self.validator.clock.now()
        for name, adapter in self.adapters.items():
            with Contained(self.tracer, "housekeeping", f"{name} prune"):
                self.dbs.write(name, lambda txn, a=adapter: a.prune(now, txn))
        with self.dbs.reading(HUB_OWNER) as view:
            expired = self.hub.load(view, now)
        if expired:
            self.dbs.write(HUB_OWNER, lambda txn: release(txn, expired))

    def start_adapters(self, runtime: AdapterRuntime) -> None:
        for adapter in self.adapters.values():
            adapter.start(runtime)

    # -- the stages ---------------------------------------------------------------------------

    def is_known(self, dmq_id: bytes, now: float) -> bool:
        """Step 2: in the DMQ store, parked in a pending buffer, or rejected by an adapter."""
        return (self.mempool.contains(dmq_id)
                or any(buffer.holds(dmq_id) for buffer in self.pending.values())
                or self.rejected.holds(dmq_id, now))

    def known(self) -> Callable[[bytes], bool]:
        now = self.validator.clock.now()
        return lambda dmq_id: self.is_known(dmq_id, now)

    def screen(self, message: DmqMessage, monotonic: float) -> TopicRejected | None:  # type: ignore[override]
        """Check 3: the pool's token bucket of the message's topic (charged by the commit, not here)."""
        found = classify(message.body, self._tags)
        label = "unknown" if found.kind is TopicClass.UNKNOWN else found.name
        if self.bucket.available(message.pool_id, monotonic, label):
            return None
        retry = self.bucket.retry_after(message.pool_id, monotonic, label)
        return _reason_error(label, RATE_LIMITED, f"retry after {retry} s")

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

    async def submit_own(self, raw: bytes) -> TopicOutcome:
        """A message this node built and signed (publication, re-publication)."""
        (outcome,) = await self.admit([self.decode(raw)], "own")
        return outcome

    async def _commit_valid(self, message: DmqMessage, origin: str) -> TopicOutcome:
        """Steps 4 to 7 for a message that passed the DMQ checks."""
        clock = self.validator.clock
        now, monotonic = clock.now(), clock.monotonic()
        found = classify(message.body, self._tags)
        # 4. classification and carried set
        if found.kind is TopicClass.RAW:
            if not self.carried.raw:
                return TopicOutcome(message, _reason_error("raw", TOPIC_NOT_CARRIED))
            await self._commit_raw(message, now, monotonic)
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
        return await self._validate_and_commit(adapter, message, inner, facts, now, monotonic, charged=False,
                                               origin=origin)

    def _refuse(self, message: DmqMessage, adapter: str, reject: Reject, now: float) -> TopicOutcome:
        if reject.reason.code not in TEMPORARY_REASONS:
            self.rejected.add(message.message_id, message.expires_at)
        return TopicOutcome(message, _reject_error(adapter, reject))

    def _context(self, adapter: TopicAdapter, facts: DmqFacts, view: Any) -> ValidationContext:
        return ValidationContext(self.validator.clock, facts, self.stake, view, self.params, self.network_magic)

    async def _validate_and_commit(self, adapter: TopicAdapter, message: DmqMessage, inner: Any, facts: DmqFacts,
                                   now: float, monotonic: float, *, charged: bool, origin: str,
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
                self.bucket.charge(message.pool_id, monotonic, adapter.name)
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
        await self._commit_topic(adapter, message, inner, facts, now, monotonic, charged=charged)
        made_available = [facts.dmq_id, *adapter.provides(inner)]
        if provided is not None:
            provided.extend(made_available)
        else:
            await self._release(adapter, made_available)
        return TopicOutcome(message, None, inner_id=adapter.inner_id(inner))

    def _core_updates(self, message: DmqMessage, topic: str, now: float, monotonic: float,
                      charged: bool) -> dict[str, Any]:
        if not charged:
            self.bucket.charge(message.pool_id, monotonic, topic)
        state = self.validator.state
        state.record_accepted(message.pool_id, message.opcert.issue_number, monotonic, now)
        exported = state.export_pool(message.pool_id)
        return {} if exported is None else {message.pool_id.hex(): exported}

    async def _commit_raw(self, message: DmqMessage, now: float, monotonic: float) -> None:
        updates = self._core_updates(message, RAW, now, monotonic, charged=False)
        await self._commit([message], updates, None, lambda txn: [raw_delivery(message, int(now))], now)

    async def _commit_topic(self, adapter: TopicAdapter, message: DmqMessage, inner: Any, facts: DmqFacts,
                            now: float, monotonic: float, *, charged: bool) -> None:
        late = now > message.expires_at
        accepted = Accepted(message, facts, inner, int(now), late)

        def on_accept(txn: Any) -> Iterable[Delivery]:
            return adapter.on_accept(accepted, self.dbs.writer(txn, adapter.name)) or ()

        if late:
            # Accepted into the adapter store only: never stored for peers or protocol 15.
            await self._commit([], {}, adapter.name, on_accept, now)
            self.tracer.emit(TopicAcceptedLate(self.tracer.now(), facts.dmq_id, adapter.name))
        else:
            updates = self._core_updates(message, adapter.name, now, monotonic, charged)
            again = self._rediffusable(adapter, inner, now)
            for carried in again:
                updates.update(self._core_updates(carried, adapter.name, now, monotonic, charged=True))
            await self._commit([message, *again], updates, adapter.name, on_accept, now)

    def _rediffusable(self, adapter: TopicAdapter, inner: Any, now: float) -> list[DmqMessage]:
        """Messages carried inside ``inner`` that go back into the DMQ store, so that they
        diffuse again (2.8 step 4): only while within their own network lifetime, when not
        held already and when they pass the DMQ checks here (the validator's own, whose
        spacing is zero in a topic instance: the bucket is not charged again), as a direct
        copy would."""
        out = []
        for carried in adapter.rediffuse(inner):
            if not self.is_known(carried.message_id, now) and self.validator.check(carried) is None:
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
                clock = self.validator.clock
                now, monotonic = clock.now(), clock.monotonic()
                with self.contain(parked.message, parked.origin) as guard:
                    outcome = await self._validate_and_commit(adapter, parked.message, parked.inner, parked.facts,
                                                              now, monotonic, charged=True, origin=parked.origin,
                                                              provided=work)
                if guard.failure is not None:
                    outcome = self.failed(parked.message, guard.failure)
                self.trace([outcome], parked.origin, 0)

    # -- housekeeping -----------------------------------------------------------------------

    def expire_pending(self, now: float) -> None:
        for name, buffer in self.pending.items():
            for parked in buffer.expire(now):
                self.tracer.emit(TopicPendingDropped(self.tracer.now(), parked.facts.dmq_id, name, "wait_expired"))

    async def prune(self) -> None:
        """Adapters drop state past retention, each in its own transaction; pending waits end."""
        now = self.validator.clock.now()
        self.expire_pending(now)
        async with self.lock:
            for name, adapter in self.adapters.items():
                with Contained(self.tracer, "housekeeping", f"{name} prune") as guard:
                    await trio.to_thread.run_sync(self.dbs.write, name, lambda txn, a=adapter: a.prune(now, txn))
                if guard.failure is not None:
                    adapter.discard_caches()
        # Pruning may add to subscribers' queues (UPSYCLE gap notices): readers look again.
        self.hub.wake()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
                  interval: float = PRUNE_INTERVAL) -> None:
        task_status.started()
        while True:
            await trio.sleep(interval)
            await self.prune()
