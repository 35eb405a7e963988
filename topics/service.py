"""A topic network instance's services: ingress, publication, subscriptions (docs/topics-design.md 2, 3).

:func:`build_topic_service` assembles the parts over the node's own mempool, validator and
stake view; the node runs :meth:`TopicService.run` in its nursery and hands every protocol
1000 connection a :meth:`TopicService.session`.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

import trio

from dmq.clock import Clock
from dmq.mempool import DurableMempool
from dmq.timer_grid import Ticker
from dmq.trace import Tracer
from dmq.validation import ReactionPolicy, Validator

from .adapter import AdapterRuntime, Priority, PublishOutcome, TopicAdapter
from .bucket import TokenBucket
from .carried import CarriedSet
from .containment import Contained
from .ingress import PRUNE_INTERVAL, TopicIngress
from .publication import PER_KEY_LIMIT, NodePublisher
from .session import TopicSession
from .signer import NodeSigner
from .store import for_store
from .subscriptions import QueueLimits, SubscriptionCaps, SubscriptionHub
from .trace import TopicPublicationRefused

__all__ = ["TopicService", "build_topic_service", "DUE_INTERVAL"]


#: How often adapters are asked what the node should publish (requests, answers), in seconds.
DUE_INTERVAL = 1.0


class TopicService:
    def __init__(self, ingress: TopicIngress, publisher: NodePublisher, network_magic: int) -> None:
        self.ingress = ingress
        self.publisher = publisher
        self.network_magic = network_magic
        #: Read when :meth:`run` starts, so a test can shorten them on a built node.
        self.due_interval = DUE_INTERVAL
        self.prune_interval = PRUNE_INTERVAL
        #: Times the due loop slept with nothing scheduled, waiting for a change (tests, inspection).
        self.due_waits = 0
        #: UPSYCLE's local operations when the instance carries it (protocol 1000 reaches them).
        self.upsycle: Any = None
        adapter = ingress.adapters.get("upsycle")
        if adapter is not None:
            from .upsycle.local import UpsycleLocal

            self.upsycle = UpsycleLocal(adapter, ingress)
        #: Durable subscriber keys attached to a connection (one connection at a time).
        self.attached: set[bytes] = set()

    @property
    def hub(self) -> Any:
        return self.ingress.hub

    @property
    def dbs(self) -> Any:
        return self.ingress.dbs

    @property
    def clock(self) -> Clock:
        return self.ingress.validator.clock

    async def publish(self, body: bytes, priority: Priority | None = None, *, client: bool = False) -> PublishOutcome:
        """Publish ``body`` (priority None: the adapter's for it, else a client publication's;
        ``client``: a local client's, under the per-key limit)."""
        return await self.publisher.publish(body, priority, client=client)

    def session(self, client: str) -> TopicSession:
        return TopicSession(self, client)

    def runtime(self) -> AdapterRuntime:
        signer = self.publisher.signer
        return AdapterRuntime(self.clock, self.network_magic, self.ingress.params, self.publish,
                              signer is not None, None if signer is None else signer.pool_id, self.ingress.tracer)

    def bind_metrics(self, registry: Any, prefix: str) -> None:
        """Register the series of every adapter that has some (``bind_metrics``) in ``registry``."""
        for adapter in self.ingress.adapters.values():
            bind = getattr(adapter, "bind_metrics", None)
            if bind is not None:
                bind(registry, prefix)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.ingress.start_adapters(self.runtime())
        async with trio.open_nursery() as nursery:
            await nursery.start(self.publisher.run)
            await nursery.start(partial(self.ingress.run, interval=self.prune_interval))
            nursery.start_soon(self._publish_due_forever, nursery)
            if self.hub.disk is not None:
                nursery.start_soon(self._measure_disk_forever)
            task_status.started()

    async def _measure_disk_forever(self) -> None:
        """The database's size against its disk share, measured in the event loop (never in
        a commit, :mod:`topics.disk`); on the node's timer grid, with the other ticks."""
        disk = self.hub.disk
        ticker = Ticker(max(disk.interval, 0.1))
        while True:
            await ticker.wait()
            disk.measure_if_due()

    async def _publish_due_forever(self, nursery: trio.Nursery) -> None:
        """Ask the adapters for due publications every ``due_interval``, on the ticks of the
        node's timer grid (``dmq.timer_grid``): the prune, the disk measurement and the heap
        trim due in the same second share the wake.

        While no adapter has anything scheduled (:meth:`nothing_scheduled`) the loop sleeps
        without a timer until the adapters' state changes: every change that can schedule a
        publication (a commit of an adapter's message, a prune, a local operation) ends with
        the subscription hub's wake, and the next tick after it asks again."""
        ticker = Ticker(self.due_interval)
        while True:
            changed = self.hub.next_change()
            if self.nothing_scheduled():
                self.due_waits += 1
                await changed.wait()
            await ticker.wait()
            self.publish_due(nursery)

    def nothing_scheduled(self) -> bool:
        """Whether no adapter can have a publication come due before its state changes: each
        with ``due_publications`` says so by ``publications_scheduled()`` (one without that
        hook is asked every tick)."""
        for adapter in self.ingress.adapters.values():
            if getattr(adapter, "due_publications", None) is None:
                continue
            scheduled = getattr(adapter, "publications_scheduled", None)
            if scheduled is None or scheduled():
                return False
        return True

    def publish_due(self, nursery: trio.Nursery) -> int:
        """Hand every adapter's due publications (``due_publications(view, now)``) to the
        publication queue, each as its own task: the queue orders them by priority (2.7)."""
        now = self.clock.now()
        count = 0
        for adapter in self.ingress.adapters.values():
            due = getattr(adapter, "due_publications", None)
            if due is None:
                continue
            bodies: list[bytes] = []
            with Contained(self.ingress.tracer, "housekeeping", f"{adapter.name} due publications") as guard:
                with self.dbs.reading(adapter.name) as view:
                    bodies = list(due(view, now))
            if guard.failure is not None:
                adapter.discard_caches()
            for body in bodies:
                nursery.start_soon(self._publish_own, adapter.name, body)
            count += len(bodies)
        return count

    async def _publish_own(self, adapter: str, body: bytes) -> None:
        outcome = await self.publisher.publish(body, None)
        if outcome.reject is not None:
            tracer = self.ingress.tracer
            tracer.emit(TopicPublicationRefused(tracer.now(), adapter, outcome.reject.reason.name,
                                                outcome.reject.detail))


def build_topic_service(mempool: DurableMempool, validator: Validator, tracer: Tracer, *,
                        adapters: Sequence[TopicAdapter], carried: CarriedSet, network_magic: int,
                        bucket: TokenBucket | None = None, signer: NodeSigner | None = None,
                        allow_legacy: bool = False, reactions: ReactionPolicy = ReactionPolicy(),
                        params: dict[str, Any] | None = None, queue_limits: QueueLimits = QueueLimits(),
                        per_key: tuple[int, float] = PER_KEY_LIMIT, caps: SubscriptionCaps = SubscriptionCaps(),
                        disk: Any = None) -> TopicService:
    """The topic service of an instance; ``caps`` and ``disk`` (a :class:`~topics.disk.DiskGuard`)
    bound what local clients make it hold."""
    ingress = TopicIngress(mempool, validator, tracer, adapters=adapters, carried=carried,
                           dbs=for_store(mempool.store), bucket=bucket or TokenBucket(), network_magic=network_magic,
                           allow_legacy=allow_legacy, reactions=reactions, params=params,
                           hub=SubscriptionHub(queue_limits, caps, disk))
    return TopicService(ingress, NodePublisher(ingress, signer, per_key=per_key), network_magic)
