"""Start a responder instance only when its peer starts talking (``StartOnDemand``).

The reference starts every responder mini-protocol on demand: nothing runs until the
first bytes of the peer's initiator instance arrive (docs/protocol/mux.md 2.5). That matters for the
time limits: the keep-alive server may wait 97 s for the *next* keep-alive, but a peer
that never starts keep-alive on a connection (its governor keeps it warm, or it runs no
initiator instance on our inbound connection) must not be cut off 97 s after the
handshake. The connection starts the instance's task when the peer's first bytes arrive
(``ProtocolTask.on_demand``), and again on its next bytes after each clean finish;
:func:`started_on_demand` then waits, without a time limit, for the first complete message
(within the byte limit of the protocol's initial state), which the driver then receives as if
it had just arrived; from then on the driver's limits apply as usual. A mux channel keeps that
message queued meanwhile (``MuxChannel.wait_message``) and the protocol runs over the channel
itself; over any other channel an :class:`OnDemandChannel` holds it.
"""

from __future__ import annotations

from ouroboros_mux.channel import MessageChannel

from miniprotocols.framework import ProtocolSpec

__all__ = ["OnDemandChannel", "started_on_demand"]


async def started_on_demand(channel: MessageChannel, spec: ProtocolSpec) -> MessageChannel:
    """Wait, without a time limit, for the peer's first message of ``spec``; return the channel to run it over.

    A channel that can wait for a message and leave it queued (``MuxChannel.wait_message``) is
    returned as it is, so that the protocol's every message goes to it directly; any other is
    wrapped in an :class:`OnDemandChannel` holding the first message.
    """
    wait_message = getattr(channel, "wait_message", None)
    if wait_message is None:
        started = OnDemandChannel(channel)
        await started.wait_for_start(spec)
        return started
    await wait_message(spec.states[spec.initial].byte_limit)
    return channel


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
