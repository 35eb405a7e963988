"""Accepting node-to-node connections: the limits, the handshake server, the connection.

``AcceptedConnectionsLimit`` works as in the reference server: above ``softLimit`` open
inbound connections the accept loop pauses after each accept, for a share of ``delay``
growing linearly up to the full delay at ``hardLimit``; at ``hardLimit`` a newly accepted
socket is closed at once, before any byte is read (the reference instead stops calling
``accept``, which leaves the peer waiting in the kernel's backlog; closing tells it
straight away, and it backs off). Each accepted socket gets the DMQ node-to-node
handshake (10 s per state) with the node's version table, then its own connection.
"""

from __future__ import annotations

import trio

from handshake.driver import run_server
from handshake.errors import HandshakeError, HandshakeQueryResult
from handshake.links import DMQ_NODE_TO_NODE, VersionTable
from ouroboros_mux.bearer import Bearer

from dmq.config import AcceptedConnectionsLimit
from dmq.descriptors import EXHAUSTION_ERRNOS, AcceptExhaustion
from dmq.trace import HANDSHAKE_QUERY, ConnectionClosed, ConnectionOpened, Tracer

from .events import InboundDelayed, InboundRefused
from .n2n_connection import N2NContext, run_n2n_connection
from .peers import PeerTable
from .transport import TCP, Transport

__all__ = ["InboundServer", "LINK", "soft_limit_delay"]

LINK = "n2n-in"

#: Accept errors that mean "out of resources for now", not "the listener is broken".
_TRANSIENT_ACCEPT_ERRORS = EXHAUSTION_ERRNOS


def soft_limit_delay(limit: AcceptedConnectionsLimit, connections: int) -> float:
    """The pause after an accept that brought the count to ``connections``."""
    if connections <= limit.soft_limit:
        return 0.0
    span = limit.hard_limit - limit.soft_limit
    if span <= 0:
        return limit.delay
    return min(limit.delay, limit.delay * (connections - limit.soft_limit) / span)


class InboundServer:
    """Serves every inbound connection of the node's listeners."""

    def __init__(self, ctx: N2NContext, peers: PeerTable, tracer: Tracer, versions: VersionTable,
                 limit: AcceptedConnectionsLimit, transport: Transport = TCP) -> None:
        self.ctx = ctx
        self.peers = peers
        self.tracer = tracer
        self.versions = versions
        self.limit = limit
        self.transport = transport
        #: Inbound connections open now (handshaking or running).
        self.connections = 0
        self.refused = 0
        #: Episodes of running out of descriptors, traced and counted (dmq.descriptors).
        self.exhaustion = AcceptExhaustion(tracer, LINK)

    async def serve(self, listeners: list[trio.abc.Listener[trio.abc.Stream]]) -> None:
        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(self._accept_loop, listener, nursery)

    async def _accept_loop(self, listener: trio.abc.Listener[trio.abc.Stream], nursery: trio.Nursery) -> None:
        while True:
            try:
                stream = await listener.accept()
            except OSError as exc:
                if exc.errno in _TRANSIENT_ACCEPT_ERRORS:
                    self.exhaustion.failed(exc)
                    await trio.sleep(0.1)
                    continue
                raise
            self.exhaustion.accepted()
            if self.connections >= self.limit.hard_limit:
                self.refused += 1
                self.tracer.emit(InboundRefused(self.tracer.now(), self.transport.peer_label(stream), self.connections,
                                                self.limit.hard_limit))
                await stream.aclose()
                continue
            self.connections += 1
            nursery.start_soon(self._handle, stream)
            delay = soft_limit_delay(self.limit, self.connections)
            if delay > 0:
                self.tracer.emit(InboundDelayed(self.tracer.now(), self.connections, delay))
                await trio.sleep(delay)

    async def _handle(self, stream: trio.abc.Stream) -> None:
        label = self.transport.peer_label(stream)
        bearer = Bearer(stream)
        stats = self.peers.inbound(label)
        stats.attach(bearer)
        tracer = self.tracer
        try:
            try:
                result = await run_server(bearer, self.versions, DMQ_NODE_TO_NODE)
            except HandshakeQueryResult:
                tracer.emit(ConnectionClosed(tracer.now(), label, LINK, HANDSHAKE_QUERY))
                return
            except HandshakeError as exc:
                tracer.emit(ConnectionClosed(tracer.now(), label, LINK, f"handshake: {exc}"))
                return
            tracer.emit(ConnectionOpened(tracer.now(), label, LINK, result.version))
            end = await run_n2n_connection(self.ctx, bearer, result, stats, we_opened=False, link=LINK)
            tracer.emit(ConnectionClosed(tracer.now(), label, LINK, end.describe()))
        finally:
            self.connections -= 1
            stats.detach()
            self.peers.drop(stats)
            with trio.CancelScope(shield=True):
                await bearer.aclose()
