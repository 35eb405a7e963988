"""The topic ingress pipeline after DMQ decoding (docs/topics-design.md 2.5), for instances carrying adapters.

Every way in (node-to-node, protocol 14, protocol 1000 publication, re-publication) runs the
core's one pipeline (:class:`~dmq.ingress.Ingress`) with the stages a topic instance declares,
:class:`~topics.stages.TopicStages`: its known ids, its budgets as check 3, its commit (steps 4
to 8). :class:`TopicIngress` is that ingress composed with those stages, plus what a topic
instance does besides admitting messages: loading and pruning the adapters' state, expiring
pending waits, and submitting the node's own publications.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import trio

from dmq.ingress import Ingress
from dmq.mempool import DurableMempool
from dmq.timer_grid import Ticker
from dmq.trace import Tracer
from dmq.validation import ReactionPolicy, Validator

from .adapter import AdapterRuntime, TopicAdapter
from .bucket import TokenBucket
from .carried import CarriedSet
from .containment import Contained
from .pending import RejectedCache
from .stages import HUB_OWNER, TEMPORARY_REASONS, TopicOutcome, TopicStages
from .store import AdapterDatabases
from .subscriptions import HUB_DATABASES, SubscriptionHub, release
from .trace import TopicPendingDropped

__all__ = ["TopicIngress", "TopicOutcome", "HUB_OWNER", "PRUNE_INTERVAL", "TEMPORARY_REASONS"]

#: How often adapters prune and pending buffers expire (seconds).
PRUNE_INTERVAL = 5.0


class TopicIngress(Ingress):
    """:class:`~dmq.ingress.Ingress` of a topic network instance, with :class:`~topics.stages.TopicStages`.

    The stages' parts (adapters, pending buffers, budgets, subscription hub, databases) are
    shared, not copied: ``ingress.adapters`` is ``ingress.stages.adapters``.
    """

    stages: TopicStages

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
        stages = TopicStages(
            mempool, validator, tracer, adapters=adapters, carried=carried, dbs=dbs,
            hub=hub if hub is not None else SubscriptionHub(),
            bucket=bucket if bucket is not None else TokenBucket(),
            stake=stake if stake is not None else validator.stake_view,
            network_magic=network_magic, params=params or {}, reactions=reactions,
            rejected=rejected if rejected is not None else RejectedCache())
        super().__init__(mempool, validator, tracer, allow_legacy=allow_legacy, reactions=reactions, stages=stages)
        self.adapters = stages.adapters
        self.carried = carried
        self.dbs = dbs
        self.hub = stages.hub
        self.bucket = stages.bucket
        self.stake = stages.stake
        self.network_magic = network_magic
        self.params = stages.params
        self.rejected = stages.rejected
        self.pending = stages.pending
        self.lock = stages.lock
        self._tags = stages._tags
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

    def is_known(self, dmq_id: bytes, now: float) -> bool:
        """Step 2: in the DMQ store, parked in a pending buffer, or rejected by an adapter."""
        return self.stages.is_known(dmq_id, now)

    async def submit_own(self, raw: bytes) -> TopicOutcome:
        """A message this node built and signed (publication, re-publication)."""
        (outcome,) = await self.admit([self.decode(raw)], "own")
        return outcome

    # -- housekeeping -----------------------------------------------------------------------

    def expire_pending(self, now: float) -> None:
        for name, buffer in self.pending.items():
            for parked in buffer.expire(now):
                self.tracer.emit(TopicPendingDropped(self.tracer.now(), parked.facts.dmq_id, name, "wait_expired"))

    async def prune(self) -> None:
        """Adapters drop state past retention, each in its own transaction; pending waits end.

        An adapter that tells when it next has something to prune (``next_prune(view)``, a
        time or None) is skipped until then: no transaction and no thread hop on an idle node.
        """
        now = self.validator.clock.now()
        self.expire_pending(now)
        pruned = False
        async with self.lock:
            for name, adapter in self.adapters.items():
                if not self._prune_due(name, adapter, now):
                    continue
                pruned = True
                with Contained(self.tracer, "housekeeping", f"{name} prune") as guard:
                    await trio.to_thread.run_sync(self.dbs.write, name, lambda txn, a=adapter: a.prune(now, txn))
                if guard.failure is not None:
                    adapter.discard_caches()
        if pruned:
            # Pruning may add to subscribers' queues (UPSYCLE gap notices): readers look again.
            self.hub.wake()

    def _prune_due(self, name: str, adapter: TopicAdapter, now: float) -> bool:
        """Whether ``adapter`` may have something to prune at ``now`` (yes when it cannot tell)."""
        next_prune = getattr(adapter, "next_prune", None)
        if next_prune is None:
            return True
        with Contained(self.tracer, "housekeeping", f"{name} next prune") as guard:
            with self.dbs.reading(name) as view:
                when = next_prune(view)
        return guard.failure is not None or (when is not None and when <= now)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
                  interval: float = PRUNE_INTERVAL) -> None:
        task_status.started()
        ticker = Ticker(interval)  # on the timer grid, with the due publications' tick
        while True:
            await ticker.wait()
            await self.prune()
