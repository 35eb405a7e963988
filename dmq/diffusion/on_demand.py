"""Start a responder instance only when its peer starts talking (``StartOnDemand``).

The reference starts every responder mini-protocol on demand: nothing runs until the
first bytes of the peer's initiator instance arrive (docs/protocol/mux.md 2.5). That matters for the
time limits: the keep-alive server may wait 97 s for the *next* keep-alive, but a peer
that never starts keep-alive on a connection (its governor keeps it warm, or it runs no
initiator instance on our inbound connection) must not be cut off 97 s after the
handshake. The connection starts the instance's task when the peer's first bytes arrive
(``ProtocolTask.on_demand``), and again on its next bytes after each clean finish;
:class:`OnDemandChannel` then waits, without a time limit, for the first complete message
(within the byte limit of the protocol's initial state) and hands it to the driver as if it
had just arrived; from then on the driver's limits apply as usual.
"""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from miniprotocols.framework import ProtocolSpec

__all__ = ["OnDemandChannel"]


class OnDemandChannel:
    """A :class:`MessageChannel` whose first message was read before the protocol started."""

    def __init__(self, channel: MessageChannel) -> None:
        self.channel = channel
        self.protocol_num = channel.protocol_num
        self._first: bytes | None = None

    async def wait_for_start(self, spec: ProtocolSpec) -> None:
        """Block until the peer's first message of ``spec`` is here (no time limit)."""
        limit = spec.states[spec.initial].byte_limit
        self._first = await self.channel.recv_message(limit)

    async def send(self, data: bytes) -> None:
        await self.channel.send(data)

    async def recv_message(self, max_size: int | None = None) -> bytes:
        first = self._first
        if first is not None:
            self._first = None
            return first
        return await self.channel.recv_message(max_size)


    # What a peer answering from the reader uses (``MuxChannel.on_bytes``), when the channel beneath offers it.
    def take_message(self, max_size: int | None = None) -> bytes | None:
        first = self._first
        if first is not None:
            self._first = None
            return first
        return self.channel.take_message(max_size)

    def take_decoded(self, decode, context, max_size: int | None = None) -> tuple[bytes, object] | None:
        first = self._first
        if first is not None:
            self._first = None
            return first, None
        return self.channel.take_decoded(decode, context, max_size)

    def send_nowait(self, data: bytes) -> bool:
        return self.channel.send_nowait(data)

    def on_bytes(self, consume) -> None:
        self.channel.on_bytes(consume)
