"""A topic instance served on a real Unix socket: the harness instance, its topic service and
the node's :class:`~dmq.local_service.LocalService` (protocols 14, 15 and 1000)."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path

import trio

from dmq.local_service import LocalService
from topics.publication import NodePublisher
from dmq.ingress import Ingress
from topics.raw import is_raw_message
from topics.service import TopicService
from topics.signer import NodeSigner

from dmq.kes_period import FixedKesPeriod
from dmq.signer import SigningCredentials

from .harness import CREDS, TOPIC_MAGIC, instance


def node_signer(clock, index: int = 0) -> NodeSigner:
    cred = CREDS[index]
    return NodeSigner(SigningCredentials(cred.kes_key, cred.opcert, cred.cold_vk), FixedKesPeriod(0), clock)


@asynccontextmanager
async def served(tmp_path: Path, *, topics: bool = True, signer: bool = True, **options):
    async with instance(tmp_path / "db", **options) as inst:
        service = None
        if topics:
            publisher = NodePublisher(inst.ingress, node_signer(inst.clock) if signer else None)
            service = TopicService(inst.ingress, publisher, TOPIC_MAGIC)
            ingress = inst.ingress
        else:
            # A raw-only node, as dmq.cli.wiring builds it: the core ingress, nothing classified.
            ingress = Ingress(inst.mempool, inst.validator, inst.tracer)
        local = LocalService(ingress, inst.mempool, inst.tracer, TOPIC_MAGIC, topics=service,
                             notify_filter=is_raw_message if topics else None)
        socket = tmp_path / "node.socket"
        async with trio.open_nursery() as nursery:
            if service is not None:
                await nursery.start(service.run)
            await nursery.start(lambda task_status: local.serve_path(socket, task_status=task_status))
            inst.socket = socket
            inst.service = service
            yield inst
            nursery.cancel_scope.cancel()
