"""A topic network instance's services: ingress, publication, subscriptions (TOPICS.md 2, 3).

:func:`build_topic_service` assembles the parts over the node's own mempool, validator and
stake view; the node runs :meth:`TopicService.run` in its nursery and hands every protocol
1000 connection a :meth:`TopicService.session`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import trio

from dmq.clock import Clock
from dmq.mempool import DurableMempool
from dmq.trace import Tracer
from dmq.validation import ReactionPolicy, Validator

from .adapter import AdapterRuntime, Priority, PublishOutcome, TopicAdapter
from .bucket import BucketPolicy, TokenBucket
from .carried import CarriedSet
from .ingress import TopicIngress
from .publication import NodePublisher
from .session import TopicSession
from .signer import NodeSigner
from .store import for_store

__all__ = ["TopicService", "build_topic_service"]


class TopicService:
    def __init__(self, ingress: TopicIngress, publisher: NodePublisher, network_magic: int) -> None:
        self.ingress = ingress
        self.publisher = publisher
        self.network_magic = network_magic

    @property
    def hub(self) -> Any:
        return self.ingress.hub

    @property
    def dbs(self) -> Any:
        return self.ingress.dbs

    @property
    def clock(self) -> Clock:
        return self.ingress.validator.clock

    async def publish(self, body: bytes, priority: Priority = Priority.CLIENT) -> PublishOutcome:
        return await self.publisher.publish(body, priority)

    def session(self, client: str) -> TopicSession:
        return TopicSession(self, client)

    def runtime(self) -> AdapterRuntime:
        signer = self.publisher.signer
        return AdapterRuntime(self.clock, self.network_magic, self.ingress.params, self.publish,
                              signer is not None, None if signer is None else signer.pool_id, self.ingress.tracer)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.ingress.start_adapters(self.runtime())
        async with trio.open_nursery() as nursery:
            await nursery.start(self.publisher.run)
            await nursery.start(self.ingress.run)
            task_status.started()


def build_topic_service(mempool: DurableMempool, validator: Validator, tracer: Tracer, *,
                        adapters: Sequence[TopicAdapter], carried: CarriedSet, network_magic: int,
                        bucket: BucketPolicy = BucketPolicy(), signer: NodeSigner | None = None,
                        allow_legacy: bool = False, reactions: ReactionPolicy = ReactionPolicy(),
                        params: dict[str, Any] | None = None) -> TopicService:
    ingress = TopicIngress(mempool, validator, tracer, adapters=adapters, carried=carried,
                           dbs=for_store(mempool.store), bucket=TokenBucket(bucket), network_magic=network_magic,
                           allow_legacy=allow_legacy, reactions=reactions, params=params)
    return TopicService(ingress, NodePublisher(ingress, signer), network_magic)
