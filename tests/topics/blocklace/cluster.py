"""Topic nodes in one process: the real topic ingress, durable mempool, validator and adapters.

Each :class:`TopicNode` is the node's topic pipeline without sockets: a
:class:`~topics.ingress.TopicIngress` over its own LMDB directory, a stake view naming every
test pool, the Blocklace and dmsg adapters, an ephemeral protocol 1000 subscription that
records what a local client would receive, and the node's own pool as its signer (it wraps
and submits the needs, carries and notices its adapter plans). :class:`Cluster` floods
accepted messages between nodes the way pull-based diffusion does (every node offers what it
holds to every other), over links that can drop and reorder.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from pathlib import Path

import trio

from dmq.clock import ManualClock
from dmq.codec import build_message
from dmq.mempool import DurableMempool
from dmq.stake import PoolStake, StakeView
from dmq.trace import Tracer
from dmq.validation import Validator
from topics import cbor
from topics.adapter import AdapterRuntime, AlreadyPublished, ITEM_MESSAGE, Priority, PublishOutcome, Reject
from topics.classify import TAG_BLOCKLACE, tag_of
from topics.reasons import RejectReason, reason_by_code
from topics.blocklace.adapter import BlocklaceAdapter
from topics.carried import CarriedSet
from topics.dmsg.adapter import DmsgAdapter
from topics.ingress import TopicIngress
from topics.store import for_store
from topics.subscriptions import Subscription

from .world import Pool, pool


@dataclass
class TopicNode:
    name: str
    signer: Pool
    clock: ManualClock
    mempool: DurableMempool
    ingress: TopicIngress
    blocklace: BlocklaceAdapter
    dmsg: DmsgAdapter
    subscription: Subscription
    sent: dict[str, set[bytes]] = field(default_factory=dict)

    def items(self) -> list[list]:
        """Every item body the local subscription received, in delivery order."""
        return [cbor.decode(item.item_body) for item in self.subscription.queue]

    def delivered_blocks(self) -> list[bytes]:
        """DMQ ids of delivered blocks, in delivery order."""
        return [item[1][2] for item in self.items() if item[0] == ITEM_MESSAGE]

    def held(self) -> list[bytes]:
        return [entry.raw for entry in self.mempool]

    async def submit_local(self, raw: bytes):
        return await self.ingress.submit_local(raw)

    async def run(self, *, task_status=trio.TASK_STATUS_IGNORED) -> None:
        """The mempool's writer, until :meth:`stop`."""
        self._scope = trio.CancelScope()
        self._stopped = trio.Event()
        try:
            with self._scope:
                await self.mempool.run(task_status=task_status)
        finally:
            self._stopped.set()

    async def stop(self) -> None:
        """Stop the writer and close the environment (what a process exit does)."""
        self._scope.cancel()
        await self._stopped.wait()
        self.mempool.close()

    def close(self) -> None:
        self.mempool.close()

    async def publish(self, body: bytes, priority: Priority = Priority.CLIENT) -> PublishOutcome:
        """What the node's publisher does (docs/topics-design.md 2.7): the adapter's body for
        signing (a Blocklace draft becomes the pool's block), wrap, sign, run the pipeline."""
        adapter = self.blocklace if tag_of(body) == TAG_BLOCKLACE else self.dmsg
        inner = adapter.decode(body)
        if isinstance(inner, Reject):
            return PublishOutcome(None, inner)
        now = self.clock.now()
        with self.ingress.dbs.reading(adapter.name) as view:
            built = adapter.for_signing(body, inner, view, now)
        if isinstance(built, Reject):
            return PublishOutcome(None, built)
        if isinstance(built, AlreadyPublished):
            return PublishOutcome(built.dmq_id)
        body = built
        expires_at = adapter.expires_at(inner, now)
        message = build_message(body, 0, expires_at, self.signer.kes, self.signer.opcert, self.signer.cold_vk)
        outcome = await self.ingress.submit_own(message.raw)
        if outcome.accepted:
            return PublishOutcome(message.message_id)
        error = outcome.error
        reason = reason_by_code(getattr(error, "code", 0)) or RejectReason(0, error.show())
        return PublishOutcome(None, Reject(reason, error.show()))

    async def publish_due(self) -> int:
        with self.ingress.dbs.reading("blocklace") as view:
            bodies = self.blocklace.due_publications(view, self.clock.now())
        for body in bodies:
            await self.publish(body)
        return len(bodies)


def open_node(path: Path, name: str, signer: Pool, clock: ManualClock, pools: list[Pool],
              seed: int = 0, stakes: dict[bytes, int] | None = None) -> TopicNode:
    """A node signing as ``signer``; ``stakes`` (default 10^12 each) is every pool's stake in
    the ``set`` snapshot of Cardano epoch 500, the one the stake view holds."""
    stake = StakeView(clock)
    amounts = {p.id: (stakes or {}).get(p.id, 10**12) for p in pools}
    stake.update({pool_id: PoolStake(s, s, s) for pool_id, s in amounts.items()}, epoch=500)
    validator = Validator(stake, clock, min_sig_delay=0)
    mempool = DurableMempool(path, clock)
    blocklace = BlocklaceAdapter(seed=seed, stake_of=stake.set_stake_at, stake_epochs=lambda: stake.snapshot_epochs)
    dmsg = DmsgAdapter(allow_local_addresses=True)
    ingress = TopicIngress(mempool, validator, Tracer(clock.now), adapters=[blocklace, dmsg],
                           carried=CarriedSet(frozenset({"blocklace", "dmsg"})), dbs=for_store(mempool.store),
                           network_magic=42)
    subscription = Subscription(filter=[{0: 2}])
    ingress.hub.ephemeral.add(subscription)
    node = TopicNode(name, signer, clock, mempool, ingress, blocklace, dmsg, subscription)
    ingress.start_adapters(AdapterRuntime(clock, 42, {}, node.publish, True, signer.id))
    return node


class Cluster:
    """Nodes flooding their accepted messages to each other over lossy, reordering links."""

    def __init__(self, nodes: list[TopicNode], *, loss: float = 0.0, seed: int = 1) -> None:
        self.nodes = nodes
        self.loss = loss
        self.rng = random.Random(seed)
        self.blocked: set[tuple[str, bytes]] = set()     # (node name, id) never delivered to it

    async def round(self) -> int:
        """Every node offers every held message a peer has not taken yet; returns how many moved."""
        moved = 0
        for source in self.nodes:
            held = [(entry.message_id, entry.raw) for entry in source.mempool]  # the ids the mempool keeps
            for target in self.nodes:
                if target is source:
                    continue
                sent = source.sent.setdefault(target.name, set())
                batch = []
                for ident, raw in held:
                    if ident in sent or (target.name, ident) in self.blocked:
                        continue
                    if self.rng.random() < self.loss:
                        continue                          # lost this round; offered again next round
                    sent.add(ident)
                    batch.append(raw)
                self.rng.shuffle(batch)
                for raw in batch:                         # one message per reply: reordering is real
                    await target.ingress.submit_from_peer([raw], peer=source.name)
                    moved += 1
        return moved

    async def settle(self, max_rounds: int = 50) -> int:
        """Rounds until nothing moves and nobody has anything due; returns the rounds used."""
        for rounds in range(1, max_rounds + 1):
            moved = await self.round()
            published = 0
            for node in self.nodes:
                published += await node.publish_due()
            if not moved and not published:
                return rounds
            await trio.lowlevel.checkpoint()
        return max_rounds

    def advance(self, seconds: float) -> None:
        self.nodes[0].clock.advance(seconds)


def pools_for(n: int) -> list[Pool]:
    return [pool(i) for i in range(n)]
