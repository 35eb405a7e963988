"""The contract between the mux and the mini-protocols above it.

A mini-protocol instance sees one :class:`MessageChannel`: a reliable, ordered,
bidirectional stream of whole CBOR messages for one (protocol number, direction) pair.
The mux implements it over SDUs; tests and the client library may implement it over
anything else (for example :func:`memory_channel_pair`) because the protocol layer never
touches sockets.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable

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


#: Views into received buffers may keep whole socket reads alive; the framer copies what it
#: holds once those buffers exceed this many times the bytes it holds, plus the slack below.
_PINNED_FACTOR = 4
_PINNED_SLACK = 1 << 20


class CborFramer:
    """Incremental framing of a byte stream into CBOR data items.

    Feed it bytes as they arrive (a message may span many SDUs, one SDU may hold several
    messages); :meth:`next_message` returns the raw span of each complete item in order.
    Bytes after the last complete item stay buffered.

    Fed pieces are kept as they are (bytes, or read-only views of bytes such as SDU
    payloads inside one socket read) and copied only when an item may be complete: the
    scan of an incomplete item reports how many bytes it needs at least (:attr:`wanted`),
    and nothing is joined or rescanned before that many are here. Then exactly that many
    bytes are joined and scanned: for a byte string, the usual big message, that is the
    whole item, so it is copied once and scanned twice, and the bytes after it stay where
    they are. Only when an item turns out to need more (a container whose later elements
    were unknown) is everything buffered joined and scanned at once.

    Views keep the buffers they point into alive; when those add up to much more than the
    bytes held (:data:`_PINNED_FACTOR`), the held bytes are copied out, so the memory a
    peer can tie up stays proportional to what the ingress limit lets it queue.
    """

    __slots__ = ("_chunks", "buffered", "wanted", "_pinned", "_last_buffer")

    def __init__(self) -> None:
        # Received pieces in order: bytes, or read-only views of bytes.
        self._chunks: list = []
        #: Bytes held (read by the mux's ingress check; only the framer changes it).
        self.buffered = 0
        #: Fewest buffered bytes with which another scan could find a complete item: until this
        #: many are buffered, :meth:`next_message` can only return None (plain attributes, not
        #: properties: the mux's reader reads both for every SDU it delivers).
        self.wanted = 1
        # An upper bound of the bytes of the buffers the views in _chunks point into.
        self._pinned = 0
        self._last_buffer = None

    def feed(self, data: bytes) -> None:
        size = len(data)
        if not size:
            return
        kind = type(data)
        if kind is memoryview and type(data.obj) is bytes:
            if data.obj is not self._last_buffer:  # consecutive SDUs of one socket read count once
                self._last_buffer = data.obj
                self._pinned += len(data.obj)
                if self._pinned > _PINNED_FACTOR * (self.buffered + size) + _PINNED_SLACK:
                    self._chunks.append(data)
                    self.buffered += size
                    self._release_pinned()
                    return
        elif kind is not bytes:
            data = bytes(data)  # the caller may reuse a mutable buffer
        self._chunks.append(data)
        self.buffered += size

    def next_message(self, max_size: int | None = None) -> bytes | None:
        """The next complete item, or None if more bytes are needed."""
        n = self.buffered
        want = self.wanted
        if n < want:
            self._check_limit(max_size)
            return None
        chunks = self._chunks
        first = chunks[0]
        if len(first) >= want or len(chunks) == 1:
            buf = first
        else:
            buf = self._join_front(want)
        limit = len(buf)
        try:
            end = item_end(buf, 0, limit)
        except CborIncomplete as exc:
            needed = max(limit + 1, exc.needed or 0)
            if needed > n:
                return self._incomplete(needed, max_size)
            # All that another scan needs is here: join everything, scan once.
            buf = b"".join(chunks)
            self._chunks = chunks = [buf]
            self._pinned = 0
            self._last_buffer = None
            try:
                end = item_end(buf, 0, n)
            except CborIncomplete as exc:
                return self._incomplete(max(n + 1, exc.needed or 0), max_size)
            except CborError as exc:
                raise MalformedMessage(str(exc)) from None
        except CborError as exc:
            raise MalformedMessage(str(exc)) from None
        return self._take(buf, end, max_size)

    def next_decoded(self, decode: Callable[[Any, bytes], tuple[Any, int] | None], context: Any,
                     max_size: int | None = None) -> tuple[bytes, Any] | None:
        """:meth:`next_message`, with the bytes first offered to a reader that can frame its messages itself.

        ``decode(context, buf)`` returns ``(message, end)`` only when ``buf[:end]`` is exactly one
        well-formed CBOR item it has read to its last byte (what follows is not its concern), and
        None otherwise. It is offered everything buffered when that is one piece (the usual: an
        SDU holding one message), and the item is then framed by its ``end`` without walking it.
        Returns None when no item is complete, else ``(raw, message)``: the item's exact bytes,
        and what ``decode`` read, or None when it declined or was not asked (the caller decodes
        ``raw`` itself). The limits and errors are those of :meth:`next_message`.
        """
        n = self.buffered
        if n < self.wanted:
            self._check_limit(max_size)
            return None
        chunks = self._chunks
        if len(chunks) == 1:
            buf = chunks[0]
            if type(buf) is not bytes:
                buf = chunks[0] = bytes(buf)
            read = decode(context, buf)
            if read is not None:
                message, end = read
                return self._take(buf, end, max_size), message
        item = self.next_message(max_size)
        return None if item is None else (item, None)

    def _take(self, buf, end: int, max_size: int | None) -> bytes:
        """The complete item ``buf[:end]`` (``buf`` holds the first buffered bytes), within ``max_size``,
        taken off the buffer."""
        if max_size is not None and end > max_size:
            raise MessageTooLarge(max_size, end)
        self.wanted = 1
        if end == self.buffered:
            # The item is everything buffered (the usual case: an SDU holding one message), so
            # ``buf`` holds all of it: nothing is left to keep.
            self._chunks.clear()
            self.buffered = 0
            self._pinned = 0
            self._last_buffer = None
            return buf if type(buf) is bytes else bytes(buf)
        item = buf if end == len(buf) and type(buf) is bytes else bytes(memoryview(buf)[:end])
        self._drop_front(end)
        return item

    def unread(self, item: bytes) -> None:
        """Put back ``item``, the last complete item returned, in front of what is buffered."""
        self._chunks.insert(0, item)
        self.buffered += len(item)
        self.wanted = 1

    def _incomplete(self, needed: int, max_size: int | None) -> None:
        self.wanted = needed
        self._check_limit(max_size)
        return None

    def _join_front(self, count: int) -> bytes:
        """A copy of the first ``count`` buffered bytes (``count`` <= buffered)."""
        pieces = []
        for chunk in self._chunks:
            if len(chunk) >= count:
                pieces.append(chunk if len(chunk) == count else memoryview(chunk)[:count])
                break
            pieces.append(chunk)
            count -= len(chunk)
        return b"".join(pieces)

    def _drop_front(self, count: int) -> None:
        """Forget the first ``count`` buffered bytes."""
        chunks = self._chunks
        self.buffered -= count
        taken = 0
        for chunk in chunks:
            if len(chunk) > count:
                break
            count -= len(chunk)
            taken += 1
        del chunks[:taken]
        if count:
            chunks[0] = memoryview(chunks[0])[count:]
        if not chunks:
            self._pinned = 0
            self._last_buffer = None

    def _release_pinned(self) -> None:
        held = b"".join(self._chunks)
        self._chunks = [held] if held else []
        self._pinned = 0
        self._last_buffer = None

    def _check_limit(self, max_size: int | None) -> None:
        if max_size is not None and self.buffered > max_size:
            raise MessageTooLarge(max_size, self.buffered)


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
