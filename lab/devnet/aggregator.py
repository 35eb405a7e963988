"""Devnet aggregators: one Mithril-style consumer per node, counting what arrives and how late.

An aggregator holds one connection to its node and sends blocking requests only, through
:class:`clients.mithril.Consumer`, exactly as the Mithril aggregator does. The consumer
is asked not to de-duplicate, so that every copy the node sends is seen here: a message
delivered twice on one connection would be a node bug, and ``duplicates`` counts it. Copies
after a reconnect are expected (a new connection starts at the beginning of the node's
mempool) and are counted apart, as ``replays``.

The latency of a delivery is the arrival time minus the send time carried in the probe
body: publisher, node, diffusion over every hop and notification, end to end.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

import trio

from dmq.clock import Clock
from clients.mithril import BodyDecodeError, Consumer, DmqClientError, RegisterSignatureMessageDmq

from .probe import ProbeError, read_probe
from .stats import LatencyRecorder, RateWindow

__all__ = ["Aggregator", "RECONNECT_DELAY"]

#: Shorter than Mithril's 1 s: a devnet run is short, and a lost connection should cost little.
RECONNECT_DELAY = 0.5


@dataclass(eq=False)
class Aggregator:
    """Consumes the messages of the node at ``socket_path`` until cancelled."""

    node_index: int
    socket_path: str | os.PathLike[str]
    network_magic: int
    clock: Clock
    #: message id -> wall time of its first delivery.
    arrivals: dict[bytes, float] = field(default_factory=dict)
    #: Deliveries of a message already delivered on the same connection (a node bug).
    duplicates: int = 0
    #: Deliveries of a message already delivered on an earlier connection (expected).
    replays: int = 0
    #: Deliveries whose body is not a devnet probe (a message from outside the devnet).
    foreign: int = 0
    errors: Counter[str] = field(default_factory=Counter)
    latencies: LatencyRecorder = field(default_factory=LatencyRecorder)
    rate: RateWindow = field(default_factory=RateWindow)
    connections_opened: int = 0
    #: Fires (and is replaced) after every batch, for waiters.
    changed: trio.Event = field(default_factory=trio.Event)
    _connection: int = field(default=0, repr=False)
    _on_connection: set[bytes] = field(default_factory=set, repr=False)

    @property
    def reconnects(self) -> int:
        return max(0, self.connections_opened - 1)

    def _take(self, items, connection: int) -> None:
        """Count one batch received on the ``connection``-th connection."""
        if connection != self._connection:
            self._connection, self._on_connection = connection, set()
        now = self.clock.now()
        fresh = 0
        for item in items:
            message = item.message
            if message.message_id in self._on_connection:
                self.duplicates += 1
                continue
            self._on_connection.add(message.message_id)
            if message.message_id in self.arrivals:
                self.replays += 1
                continue
            self.arrivals[message.message_id] = now
            fresh += 1
            try:
                probe = read_probe(RegisterSignatureMessageDmq.from_bytes(message.body))
            except (BodyDecodeError, ProbeError):
                self.foreign += 1
                continue
            self.latencies.add(max(0.0, now - probe.sent_at))
        self.rate.add(trio.current_time(), fresh)
        self.changed.set()
        self.changed = trio.Event()

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with Consumer(self.socket_path, self.network_magic, clock=self.clock, dedup_ttl=None,
                            reconnect_delay=RECONNECT_DELAY) as consumer:
            task_status.started()
            while True:
                try:
                    items = await consumer.consume()
                except DmqClientError as exc:
                    self.errors[type(exc).__name__] += 1
                    continue
                finally:
                    self.connections_opened = consumer.connections_opened
                self._take(items, consumer.connections_opened)

    def missing(self, expected: set[bytes] | dict[bytes, object]) -> int:
        return sum(1 for message_id in expected if message_id not in self.arrivals)
