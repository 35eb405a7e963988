"""The contract between the mux and the mini-protocols above it.

A mini-protocol instance sees one :class:`MessageChannel`: a reliable, ordered,
bidirectional stream of whole CBOR messages for one (protocol number, direction) pair.
The mux implements it over SDUs; tests and the client library may implement it over
anything else (for example :func:`memory_channel_pair`) because the protocol layer never
touches sockets.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import trio

from .cbor import CborError, CborIncomplete, item_end

__all__ = ["MessageChannel", "ChannelClosed", "MessageTooLarge", "MalformedMessage",
           "CborFramer", "memory_channel_pair"]


class ChannelClosed(Exception):
    """The peer's byte stream for this protocol ended (cleanly or not)."""


class MessageTooLarge(Exception):
    """More bytes than the current state allows arrived without completing a message."""

    def __init__(self, limit: int, buffered: int) -> None:
        super().__init__(f"message exceeds the {limit}-byte limit of this state ({buffered} bytes buffered)")
        self.limit = limit
        self.buffered = buffered


class MalformedMessage(Exception):
    """The bytes of this protocol stream are not CBOR."""


@runtime_checkable
class MessageChannel(Protocol):
    """One direction-pair of one mini-protocol, carrying whole CBOR messages."""

    protocol_num: int

    async def send(self, data: bytes) -> None:
        """Queue the bytes of one or more encoded messages for the peer."""

    async def recv_message(self, max_size: int | None = None) -> bytes:
        """Return the exact received bytes of the next complete CBOR data item.

        ``max_size`` is the byte limit of the protocol state the caller is in: if that
        many bytes are buffered and no item is complete, raise :class:`MessageTooLarge`.
        Raises :class:`ChannelClosed` at end of stream and :class:`MalformedMessage`
        when the stream cannot be CBOR.
        """


class CborFramer:
    """Incremental framing of a byte stream into CBOR data items.

    Feed it bytes as they arrive (a message may span many SDUs, one SDU may hold several
    messages); :meth:`next_message` returns the raw span of each complete item in order.
    Bytes after the last complete item stay buffered.
    """

    __slots__ = ("_buf", "_scanned_incomplete")

    def __init__(self) -> None:
        self._buf = bytearray()
        # Size of the buffer the last time we found it incomplete: skip rescanning until
        # more bytes arrive.
        self._scanned_incomplete = -1

    def feed(self, data: bytes) -> None:
        self._buf += data

    @property
    def buffered(self) -> int:
        return len(self._buf)

    def next_message(self, max_size: int | None = None) -> bytes | None:
        """The next complete item, or None if more bytes are needed."""
        n = len(self._buf)
        if n == 0 or n == self._scanned_incomplete:
            self._check_limit(max_size)
            return None
        try:
            end = item_end(self._buf, 0, n)
        except CborIncomplete:
            self._scanned_incomplete = n
            self._check_limit(max_size)
            return None
        except CborError as exc:
            raise MalformedMessage(str(exc)) from None
        if max_size is not None and end > max_size:
            raise MessageTooLarge(max_size, end)
        item = bytes(self._buf[:end])
        del self._buf[:end]
        self._scanned_incomplete = -1
        return item

    def _check_limit(self, max_size: int | None) -> None:
        if max_size is not None and len(self._buf) > max_size:
            raise MessageTooLarge(max_size, len(self._buf))


class _MemoryChannel:
    """One end of an in-process channel pair (see :func:`memory_channel_pair`)."""

    def __init__(self, protocol_num: int, send: trio.MemorySendChannel, recv: trio.MemoryReceiveChannel) -> None:
        self.protocol_num = protocol_num
        self._send = send
        self._recv = recv
        self._framer = CborFramer()

    async def send(self, data: bytes) -> None:
        try:
            await self._send.send(bytes(data))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            raise ChannelClosed("peer end closed") from None

    async def recv_message(self, max_size: int | None = None) -> bytes:
        while True:
            item = self._framer.next_message(max_size)
            if item is not None:
                return item
            try:
                chunk = await self._recv.receive()
            except (trio.EndOfChannel, trio.ClosedResourceError):
                raise ChannelClosed("end of stream") from None
            self._framer.feed(chunk)

    async def aclose(self) -> None:
        await self._send.aclose()


def memory_channel_pair(protocol_num: int = 0) -> tuple[_MemoryChannel, _MemoryChannel]:
    """Two connected in-process message channels, for driving protocol peers without a mux."""
    a_send, b_recv = trio.open_memory_channel(float("inf"))
    b_send, a_recv = trio.open_memory_channel(float("inf"))
    return _MemoryChannel(protocol_num, a_send, a_recv), _MemoryChannel(protocol_num, b_send, b_recv)
