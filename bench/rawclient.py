"""Node-to-client clients in raw Pallas bytes, for benchmarks that play the Mithril side.

Hand-built SDUs over a trio socket stream (or ``DirectSocket``, the same socket without a
scheduler pass per call), no project protocol code: a benchmark's clients
are a load generator and a clock, and should cost what a real Mithril client in Rust costs,
not a mux, a driver and a codec per message. Requests are the exact bytes Pallas sends;
replies are cut by header word and CBOR item boundaries, nothing more.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Callable

import trio

from ouroboros_mux.cbor import CborIncomplete, item_end
from tests.e2e.raw_n2c import accept_version, propose_versions

HEADER = struct.Struct(">IHH")


def sdu(word: int, payload: bytes) -> bytes:
    return HEADER.pack(0, word, len(payload)) + payload


class RawConnection:
    """A minimal raw-SDU reader: whole replies by header word, reassembled across SDUs."""

    def __init__(self, stream: trio.SocketStream | DirectSocket) -> None:
        self.stream = stream
        self.buf = bytearray()
        self.pending: dict[int, bytearray] = {}

    async def _sdu(self) -> tuple[int, bytes]:
        while True:
            if len(self.buf) >= 8:
                _, word, length = HEADER.unpack_from(self.buf)
                if len(self.buf) >= 8 + length:
                    payload = bytes(self.buf[8:8 + length])
                    del self.buf[:8 + length]
                    return word, payload
            chunk = await self.stream.receive_some(1 << 17)
            if not chunk:
                raise ConnectionError("the node closed the connection")
            self.buf += chunk

    async def _more(self, word: int, pending: bytearray) -> None:
        got, payload = await self._sdu()
        if got != word:
            raise AssertionError(f"SDU on {got:#06x} while waiting for {word:#06x}")
        pending += payload

    async def reply(self, word: int) -> bytes:
        """A whole small reply (handshake, submission)."""
        pending = self.pending.setdefault(word, bytearray())
        while True:
            if pending:
                try:
                    end = item_end(pending, 0, len(pending))
                except CborIncomplete:
                    end = None
                if end is not None:
                    out = bytes(pending[:end])
                    del pending[:end]
                    return out
            await self._more(word, pending)

    async def blocking_reply(self, on_message: Callable[[bytearray, int, int], None] | None = None,
                             message_end: Callable[[bytearray, int, int], int] = item_end) -> tuple[int, int]:
        """``[2, [_ msg...]]`` scanned message by message as its SDUs arrive (a reply of 1 000
        messages is 2.6 MB; rescanning it from the start on every SDU would be quadratic).
        ``on_message(buffer, start, end)`` sees each message's span as soon as it is whole;
        ``message_end`` finds where a message ends (``item_end``'s contract, or a faster one).
        Returns the number of messages and the reply's size."""
        word = 0x800F
        pending = self.pending.setdefault(word, bytearray())
        while len(pending) < 3:
            await self._more(word, pending)
        if pending[:3] != b"\x82\x02\x9f":
            raise AssertionError(f"not a blocking reply: {bytes(pending[:8]).hex()}")
        pos, count = 3, 0
        while True:
            while pos >= len(pending):
                await self._more(word, pending)
            if pending[pos] == 0xFF:
                size = pos + 1
                del pending[:size]
                return count, size
            try:
                start, pos = pos, message_end(pending, pos, len(pending))
                count += 1
            except CborIncomplete:
                await self._more(word, pending)
                continue
            if on_message is not None:
                on_message(pending, start, pos)

    async def handshake(self, magic: int) -> None:
        await self.stream.send_all(sdu(0x0000, propose_versions(magic)))
        word, payload = await self._sdu()
        if (word, payload) != (0x8000, accept_version(magic)):
            raise AssertionError(f"handshake answer {word:#06x} {payload.hex()}")


class DirectSocket:
    """A connected socket read and written directly, waiting in trio only when the kernel would block.

    ``trio.SocketStream`` passes through the scheduler around every send and receive, even
    one the kernel completes at once; for a client whose whole work per message is one small
    send and one small receive, those passes cost more than the system calls. Same
    ``send_all`` / ``receive_some`` / ``aclose`` as the stream, so ``RawConnection`` takes
    either. A task using it yields only when it has to wait for the node.
    """

    def __init__(self, sock: socket.socket) -> None:
        sock.setblocking(False)
        self.sock = sock

    async def send_all(self, data: bytes) -> None:
        while data:
            try:
                sent = self.sock.send(data)
            except BlockingIOError:
                await trio.lowlevel.wait_writable(self.sock)
                continue
            data = memoryview(data)[sent:] if sent < len(data) else b""

    async def receive_some(self, max_bytes: int) -> bytes:
        while True:
            try:
                return self.sock.recv(max_bytes)
            except BlockingIOError:
                await trio.lowlevel.wait_readable(self.sock)

    async def aclose(self) -> None:
        trio.lowlevel.notify_closing(self.sock)
        self.sock.close()
        await trio.lowlevel.checkpoint()


def connect_unix(path: str) -> DirectSocket:
    """A local-socket connection (connecting to a Unix socket does not block)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        raise
    return DirectSocket(sock)
