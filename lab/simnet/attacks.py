"""Attacks on the simulated network, and what they achieved.

* **flood**: a peer that dials one victim again and again and, on each connection, offers it
  messages from a staked pool whose KES signature does not verify (fresh ids every time, so
  none is a duplicate and each costs the victim the full check). The victim must drop the
  connection on the first such batch (docs/protocol/validation.md 6.2: an invalid signature
  is a disconnect) and keep receiving every honest message.
* **eclipse**: a cluster of stake-less nodes (no pool publishes to them) whose only public
  root is the victim; they dial it and share each other. The victim's outbound peers are its
  own governor's choice, so it must keep receiving every honest message.

The flooder speaks the node's own code on its side too (handshake, mux,
:func:`dmq.diffusion.run_n2n_connection`, the serving peer of sig submission); only what it
serves (:class:`FloodSource`) and what it does with what it pulls (nothing) are its own.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

import trio

from handshake.driver import run_client
from handshake.errors import HandshakeError, HandshakeQueryResult
from handshake.links import DMQ_NODE_TO_NODE, dmq_node_to_node_versions
from ouroboros_mux.errors import MuxError

from dmq.clock import Clock
from dmq.diffusion import DiffusionPolicy, N2NContext, PeerTable, run_n2n_connection
from dmq.diffusion.sig_submission import InFlightRegistry
from dmq.ingress import BatchVerdict
from dmq.topology import AccessPoint, PublicRootGroup, Topology

from .links import SimNetwork
from .workload import SimPool

__all__ = ["AttackRecord", "FloodSource", "Flooder", "eclipse_topology"]


@dataclass
class AttackRecord:
    kind: str
    target: str
    description: str
    outcome: dict[str, Any] = field(default_factory=dict)


def eclipse_topology(victim_host: str, port: int) -> Topology:
    """An attacker's topology: the victim as its only public root (advertised, so attackers share it)."""
    return Topology(public_roots=(PublicRootGroup((AccessPoint(victim_host, port),), advertise=True),))


class FloodSource:
    """A sig-submission source of endless messages whose KES signature is wrong."""

    checked_items = True

    def __init__(self, pool: SimPool, clock: Clock) -> None:
        self.builder = pool.builder(clock)
        self.pool = pool
        self.raws: dict[bytes, bytes] = {}
        self.served = 0

    def _forge(self, index: int) -> tuple[bytes, bytes]:
        message = self.pool.sign(self.builder, 1_000_000 + index, 0.0)
        signature = message.kes_signature
        forged = bytes([signature[0] ^ 0xFF]) + signature[1:]
        return message.message_id, message.raw.replace(signature, forged)

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        found = []
        for index in range(position + 1, position + 1 + limit):
            message_id, raw = self._forge(index)
            self.raws[message_id] = raw
            found.append((index, message_id, len(raw)))
        return found

    async def wait_for_ids_after(self, position: int) -> None:
        await trio.lowlevel.checkpoint()

    def lookup(self, message_id: bytes) -> bytes | None:
        raw = self.raws.pop(message_id, None)
        if raw is not None:
            self.served += 1
        return raw


class _Discard:
    """The flooder's ingress: whatever it pulls from the victim is dropped."""

    async def submit_from_peer(self, raws: list[bytes], peer: str) -> BatchVerdict:
        await trio.lowlevel.checkpoint()
        return BatchVerdict([], None)

    def submit_from_peer_now(self, raws: list[bytes], peer: str) -> None:
        return None  # every batch goes through submit_from_peer


class Flooder:
    """Dials ``host:port`` from network index ``index`` and floods it until ``length`` seconds pass.

    ``rng`` draws its keep-alive cookies, which the victim echoes: seeded from the run's seed,
    so that the victim's bytes sent follow from the seed like everything else.
    """

    def __init__(self, net: SimNetwork, index: int, host: str, port: int, magic: int, pool: SimPool,
                 clock: Clock, *, rng: random.Random, pause: float = 0.5) -> None:
        self.transport = net.transport(index)
        self.rng = rng
        self.host, self.port, self.magic, self.pause = host, port, magic, pause
        self.source = FloodSource(pool, clock)
        self.record = AttackRecord("flood", host, "a peer offering messages with a bad KES signature, "
                                   f"reconnecting {pause} s after each disconnect")
        self.connections = 0
        self.endings: dict[str, int] = {}

    def _context(self) -> N2NContext:
        policy = DiffusionPolicy()

        async def never() -> None:
            await trio.sleep_forever()

        return N2NContext(ingress=_Discard(), mempool=_HoldsEverything(), registry=InFlightRegistry(),
                          source=self.source, peers_for=lambda n: [], peers_wanted=lambda: 0,
                          learn_peers=lambda source, addresses: None, wait_peers_wanted=never,
                          keep_alive_interval=policy.keep_alive_interval,
                          blocking_reply_timeout=policy.blocking_reply_timeout,
                          peer_share_interval=policy.peer_share_interval, protocol_idle_timeout=5.0,
                          rng=self.rng)

    async def _once(self, ctx: N2NContext, peers: PeerTable) -> None:
        bearer = await self.transport.connect(self.host, self.port)
        try:
            versions = dmq_node_to_node_versions(self.magic, initiator_only=False, peer_sharing=False)
            result = await run_client(bearer, versions, DMQ_NODE_TO_NODE)
            self.connections += 1
            stats = peers.outbound(f"{self.host}:{self.port}")
            stats.attach(bearer)
            end = await run_n2n_connection(ctx, bearer, result, stats, we_opened=True, link="flood")
            stats.detach()
            reason = "clean end" if end.error is None else type(end.error).__name__
            self.endings[reason] = self.endings.get(reason, 0) + 1
        finally:
            with trio.CancelScope(shield=True):
                await bearer.aclose()

    async def run(self, at: float, length: float) -> None:
        await trio.sleep_until(at)
        ctx, peers = self._context(), PeerTable()
        with trio.move_on_after(length):
            while True:
                try:
                    await self._once(ctx, peers)
                except (OSError, MuxError, HandshakeError, HandshakeQueryResult) as exc:
                    self.endings[type(exc).__name__] = self.endings.get(type(exc).__name__, 0) + 1
                await trio.sleep(self.pause)
        self.record.outcome = {"connections": self.connections, "invalid_messages_served": self.source.served,
                               "endings": dict(sorted(self.endings.items()))}


class _HoldsEverything:
    """The flooder's mempool as its pulling peer sees it: it wants nothing from the victim."""

    def contains(self, message_id: bytes) -> bool:
        return True
