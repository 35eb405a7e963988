"""The node under attack, the honest parties around it, and what they saw.

X is a full in-process node (LMDB, Unix socket, TCP) with the reference rate limit of 60 s;
B is a healthy peer that dialled X from its topology, so everything X relays reaches B; an
aggregator keeps a blocking notification request open on X for the whole test. After an
attack the three views must agree: X holds, B holds and the aggregator was notified of
exactly the honest messages, each once. The nodes come from
``tests.dmq.diffusion.network`` (real keys, stake file, shared manual clock).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field

import trio

from dmq.diffusion import PeerState
from dmq.message import DmqMessage
from dmq.trace import ConnectionClosed, MessageRejected
from tests.dmq.diffusion.network import LocalClient, Network, RunningNode, local_roots, pool, wait_until, write_stake_file

__all__ = ["STAKED", "UNSTAKED", "UNKNOWN", "World", "Aggregator", "start_world"]

#: Pools 0..9 and 40..79 have stake; pool 20 is listed with zero set stake; pool 30 is not listed.
STAKED = [*range(10), *range(40, 80)]
UNSTAKED = 20
UNKNOWN = 30


@dataclass
class Aggregator:
    """A Mithril aggregator on X: one connection, blocking requests, everything it got."""

    got: list[bytes] = field(default_factory=list)
    ended: BaseException | None = None

    async def run(self, socket_path, task_status=trio.TASK_STATUS_IGNORED) -> None:
        async with LocalClient(socket_path) as client:
            task_status.started()
            try:
                while True:
                    raws, _ = await client.notification.request(blocking=True)
                    self.got.extend(raws)
            except Exception as exc:  # the node went away (a restart): the record stays
                self.ended = exc


@dataclass
class World:
    net: Network
    x: RunningNode
    b: RunningNode
    aggregator: Aggregator
    #: Raw bytes of every message an honest party submitted, in submission order.
    honest: list[bytes] = field(default_factory=list)
    _tags: Iterator[int] = field(default_factory=lambda: itertools.count(1))
    _honest_pools: Iterator[int] = field(default_factory=lambda: iter(range(40, 80)))

    def honest_message_of(self, n: int, tag: int) -> DmqMessage:
        """A valid message of staked pool ``n`` with body ``tag`` (when the rate limit is off)."""
        return pool(n).sign(1_000_000 + tag, self.now() + 900)

    def honest_message(self) -> DmqMessage:
        """A valid message of a staked pool no invalid class uses (one per pool: rate limit)."""
        return pool(next(self._honest_pools)).sign(next(self._tags), self.now() + 900)

    @property
    def clock(self):
        return self.net.clock

    def now(self) -> int:
        return int(self.clock.now())

    def closed(self, label: str) -> list[ConnectionClosed]:
        return [e for e in self.x.events if isinstance(e, ConnectionClosed) and e.peer == label]

    def rejections(self, node: RunningNode, message_id: bytes) -> list[MessageRejected]:
        return [e for e in node.events if isinstance(e, MessageRejected) and e.message_id == message_id]

    async def assert_only_honest_messages_everywhere(self) -> None:
        """X stored, the aggregator was notified of, and B received exactly the honest messages."""
        honest_ids = [raw[3:35] for raw in self.honest]
        await wait_until(lambda: len(self.aggregator.got) >= len(self.honest), 10, what="the aggregator's notifications")
        await wait_until(lambda: set(honest_ids) <= self.b.held(), 10, what="B receiving X's messages")
        # Concurrent submitters append to ``honest`` in reply order, not in mempool order: compare as multisets.
        assert sorted(self.aggregator.got) == sorted(self.honest), "notified something else than the honest messages"
        assert self.x.held() == set(honest_ids)
        assert self.b.held() == set(honest_ids)
        assert not [e for e in self.b.events if isinstance(e, MessageRejected)], "X relayed a message B rejected"
        link = self.b.node.diffusion.peers.get(f"127.0.0.1:{self.x.port}")
        assert link.connections == 1 and link.state is PeerState.HOT


async def start_world(nursery: trio.Nursery, tmp_path, **keys: str) -> World:
    stake_file = write_stake_file(tmp_path / "stake.json", [pool(n) for n in STAKED], unstaked=[pool(UNSTAKED)])
    net = Network(nursery, stake_file)
    x = await net.start("x", MinSigDelay=keys.pop("MinSigDelay", "60"), **keys)
    b = await net.start("b", local_roots(x.port))
    await wait_until(lambda: (link := b.node.diffusion.peers.get(f"127.0.0.1:{x.port}")) is not None
                     and link.state is PeerState.HOT, 5, what="B connected to X")
    aggregator = Aggregator()
    await nursery.start(aggregator.run, x.socket)
    return World(net, x, b, aggregator)
