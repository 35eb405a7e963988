"""How diffusion reaches the network: listening on an address and dialling a peer.

The node always speaks TCP (:class:`TcpTransport`, the default, which is what a running
node uses). The seam exists so that a simulated network can hand diffusion in-memory
streams instead, with the same node code above them: the simulation gives each of its
nodes a transport of its own, which knows which node is dialling and so what the link
between the two is like (docs/network-scale.md, "Simulated time").

A transport deals in :class:`trio.abc.Stream` objects; the bearer, the handshake and the
mux on top of them are the same whichever transport carried the bytes.
"""

from __future__ import annotations

from typing import Protocol

import trio

from ouroboros_mux.bearer import Bearer, connect_tcp

__all__ = ["Address", "Transport", "TcpTransport", "BoundListener"]

Address = tuple[str, int]
#: A listener and the address it is bound to (the real port when 0 was asked for).
BoundListener = tuple[trio.abc.Listener[trio.abc.Stream], Address]


class Transport(Protocol):
    async def listen(self, host: str, port: int) -> list[BoundListener]:
        """Bind ``host:port``; an ``OSError`` when it cannot be bound."""

    async def connect(self, host: str, port: int) -> Bearer:
        """A bearer over a new connection to ``host:port``; ``OSError`` or ``MuxError`` when it fails."""

    def peer_label(self, stream: trio.abc.Stream) -> str:
        """How an accepted stream's peer is named in traces and metrics (``host:port``)."""


class TcpTransport:
    """Real TCP: what every running node uses."""

    async def listen(self, host: str, port: int) -> list[BoundListener]:
        listeners = await trio.open_tcp_listeners(port, host=host)
        bound: list[BoundListener] = []
        for listener in listeners:
            bound_host, bound_port, *_ = listener.socket.getsockname()
            bound.append((listener, (bound_host, bound_port)))
        return bound

    async def connect(self, host: str, port: int) -> Bearer:
        return await connect_tcp(host, port)

    def peer_label(self, stream: trio.abc.Stream) -> str:
        try:
            host, port, *_ = stream.socket.getpeername()  # type: ignore[attr-defined]
        except OSError:
            return "unknown"
        return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


#: The one default instance (it holds no state).
TCP = TcpTransport()
