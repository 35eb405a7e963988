"""An in-process topic instance for the framework tests: the real durable mempool (LMDB),
validator, stake view of the conformance devnet, and the topic pipeline."""

from __future__ import annotations

from contextlib import asynccontextmanager
from pathlib import Path
from typing import AsyncIterator

import trio

from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.keyfiles import read_bulk_credentials
from dmq.mempool import DurableMempool
from dmq.stake import StakeView
from dmq.trace import Tracer
from dmq.validation import Validator
from tests.conftest import CONFORMANCE
from topics.adapter import TopicAdapter
from topics.bucket import BucketPolicy, TokenBucket
from topics.carried import carried_set
from topics.ingress import TopicIngress
from topics.store import for_store
from topics.subscriptions import QueueLimits, SubscriptionHub

from .kv_adapter import KvAdapter

DEVNET = CONFORMANCE / "cardano-devnet"
TOPIC_MAGIC = 424242
NOW = 1_800_000_000.0
EXP_OFFSET = 300
CREDS = read_bulk_credentials(DEVNET / "bulk-creds-k2.json")


def sign(body: bytes, expires_at: int, cred_index: int = 0):
    cred = CREDS[cred_index]
    return build_message(body, 0, expires_at, cred.kes_key, cred.opcert, cred.cold_vk)


class Instance:
    """What a test drives: ``ingress``, ``mempool``, ``clock``, ``hub``, ``dbs``."""

    def __init__(self, path: Path, clock: ManualClock, carried=("raw", "kv"), bucket=BucketPolicy(1000, 0.001),
                 queue_limits: QueueLimits = QueueLimits(), adapter: TopicAdapter | None = None):
        self.path = path
        self.clock = clock
        self.tracer = Tracer(clock.now)
        self.events = []
        self.tracer.add_sink(self.events.append)
        adapter = adapter or KvAdapter()
        self.mempool = DurableMempool(path, clock)
        stake = StakeView.from_shelley_genesis(DEVNET / "shelley-genesis.json", clock)
        self.validator = Validator(stake, clock, min_sig_delay=0)
        self.dbs = for_store(self.mempool.store)
        self.ingress = TopicIngress(
            self.mempool, self.validator, self.tracer, adapters=[adapter],
            carried=carried_set(carried, TOPIC_MAGIC, known={adapter.name}), dbs=self.dbs,
            bucket=TokenBucket(bucket) if isinstance(bucket, BucketPolicy) else bucket, network_magic=TOPIC_MAGIC, hub=SubscriptionHub(queue_limits))
        self.hub = self.ingress.hub

    def state(self):
        """Everything persistent: messages, pool state, adapter databases."""
        store = self.mempool.store
        with store.env.begin() as txn:
            messages = sorted(bytes(v) for _, v in txn.cursor(db=store._messages))
        return messages, self.mempool.load_pool_state(), self.dbs.snapshot()


@asynccontextmanager
async def instance(path: Path, clock: ManualClock | None = None, **options) -> AsyncIterator[Instance]:
    clock = clock or ManualClock(NOW)
    inst = Instance(path, clock, **options)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(inst.mempool.run)
            yield inst
            nursery.cancel_scope.cancel()
    finally:
        inst.mempool.close()
