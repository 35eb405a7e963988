"""The governor's trio loop: dial what the :class:`Governor` picks, report back what happened.

Each dial is its own task: a TCP connect through the transport (bounded by the policy's connect timeout), the
DMQ node-to-node handshake as client, then the connection until it ends. Whatever ends
it (a refused connect, a refused handshake, a protocol error, a disconnect verdict, the
peer going away) is one :meth:`Governor.failed`, which sets the peer's back-off and lets
the loop pick a replacement at once. The loop sleeps until something changes or the
earliest back-off ends.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import trio

from handshake.driver import run_client
from handshake.errors import HandshakeError, HandshakeQueryResult
from handshake.links import DMQ_NODE_TO_NODE, VersionTable
from ouroboros_mux.errors import MuxError

from dmq.trace import ConnectionClosed, ConnectionOpened, Tracer

from .events import PeerBackoff, PeerDialFailed, PeerForgotten, PeersShared
from .governor import Governor, KnownPeer
from .n2n_connection import N2NContext, run_n2n_connection
from .peers import PeerState, PeerTable
from .policy import DiffusionPolicy
from .transport import TCP, Transport

__all__ = ["OutboundGovernor", "LINK"]

LINK = "n2n-out"


class OutboundGovernor:
    """Runs the governor's decisions until cancelled."""

    def __init__(self, governor: Governor, peers: PeerTable, tracer: Tracer, policy: DiffusionPolicy,
                 versions_for: Callable[[bool], VersionTable], transport: Transport = TCP) -> None:
        self.governor = governor
        self.peers = peers
        self.tracer = tracer
        self.policy = policy
        #: The version table to propose, given whether the peer's group is dialled InitiatorOnly.
        self.versions_for = versions_for
        self.transport = transport
        self.ctx: N2NContext | None = None
        self._changed = trio.Event()
        self._peers_wanted = trio.Event()

    def poke(self) -> None:
        """Something changed (topology, a connection, new peers): decide again now."""
        self._changed.set()

    async def wait_peers_wanted(self) -> None:
        await self._peers_wanted.wait()

    def learn_peers(self, source: str, addresses: list[tuple[str, int]]) -> None:
        added = self.governor.learn(addresses)
        self.tracer.emit(PeersShared(self.tracer.now(), source, len(addresses), len(added)))
        if added:
            for address in added:
                self.peers.outbound(self.governor.peer(address).label)
            self.poke()

    async def run(self) -> None:
        if self.ctx is None:
            raise RuntimeError("the outbound governor needs its connection context before it runs")
        async with trio.open_nursery() as nursery:
            while True:
                for peer in self.governor.decide(trio.current_time()):
                    self.peers.outbound(peer.label).state = PeerState.CONNECTING
                    nursery.start_soon(self._dial_and_run, peer)
                self._sync_backoff_states()
                if self.governor.peers_wanted() > 0:
                    self._peers_wanted.set()
                elif self._peers_wanted.is_set():
                    self._peers_wanted = trio.Event()
                wake = self.governor.next_wakeup()
                with trio.move_on_at(math.inf if wake is None else wake):
                    await self._changed.wait()
                self._changed = trio.Event()

    def _sync_backoff_states(self) -> None:
        """Peers whose back-off ended are cold again in the metrics too."""
        for peer in self.governor.known:
            if peer.state is PeerState.COLD:
                stats = self.peers.get(peer.label)
                if stats is not None and stats.state is PeerState.BACKOFF:
                    stats.state = PeerState.COLD

    async def _dial_and_run(self, peer: KnownPeer) -> None:
        assert self.ctx is not None
        tracer = self.tracer
        label = peer.label
        stats = self.peers.outbound(label)
        host, port = peer.address
        bearer = None
        try:
            with trio.fail_after(self.policy.connect_timeout):
                bearer = await self.transport.connect(host, port)
            stats.attach(bearer)
            result = await run_client(bearer, self.versions_for(peer.initiator_only), DMQ_NODE_TO_NODE)
        except (OSError, MuxError, HandshakeError, HandshakeQueryResult, trio.TooSlowError) as exc:
            if bearer is not None:
                with trio.CancelScope(shield=True):
                    await bearer.aclose()
            stats.detach()
            reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            stats.last_error = reason
            tracer.emit(PeerDialFailed(tracer.now(), label, reason))
            self._failed(peer)
            return
        self.governor.connected(peer.address, trio.current_time())
        tracer.emit(ConnectionOpened(tracer.now(), label, LINK, result.version))
        try:
            end = await run_n2n_connection(self.ctx, bearer, result, stats, we_opened=True, link=LINK)
        finally:
            stats.detach()
        stats.last_error = end.describe()
        tracer.emit(ConnectionClosed(tracer.now(), label, LINK, end.describe()))
        self._failed(peer)

    def _failed(self, peer: KnownPeer) -> None:
        stats = self.peers.outbound(peer.label)
        if self.governor.peer(peer.address) is not peer:
            stats.state = PeerState.COLD  # dropped from the topology meanwhile
            self.poke()
            return
        verdict = self.governor.failed(peer.address, trio.current_time())
        stats.failures = verdict.failures
        now = self.tracer.now()
        if verdict.forgotten:
            stats.state = PeerState.COLD
            self.peers.drop(stats)
            self.tracer.emit(PeerForgotten(now, peer.label, verdict.failures))
        else:
            stats.state = PeerState.BACKOFF
            self.tracer.emit(PeerBackoff(now, peer.label, verdict.failures, verdict.delay))
        self.poke()
