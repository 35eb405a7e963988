"""A bearer: SDUs over one reliable byte stream (a TCP or Unix socket).

The bearer knows the SDU framing and the SDU timeouts, nothing else. The handshake uses
it directly (one message = one SDU, before any mux runs); afterwards the mux owns it.

Timeouts follow the reference (docs/protocol/mux.md 2.5): a read may wait forever for the *first*
byte of the next SDU (an idle connection is legitimate; keep-alive deals with dead
peers), but once that byte has arrived the rest of the header and the whole payload must
follow within :attr:`Bearer.sdu_timeout`. Writes get the same budget.
"""

from __future__ import annotations

import errno
import os
import struct
from collections.abc import Callable, Iterable

import trio

from .errors import BearerClosed, ConnectFailed, SDUDecodeError, SDUReadTimeout, SDUWriteTimeout
from .sdu import (
    MAX_PROTOCOL_NUM,
    MAX_SDU_PAYLOAD,
    SDU,
    SDU_HEADER_SIZE,
    encode_header,
    monotonic_timestamp,
)

__all__ = ["Bearer", "connect_tcp", "connect_unix", "HANDSHAKE_SDU_TIMEOUT", "SDU_TIMEOUT"]

#: SDU timeout while the handshake runs (``sduHandshakeTimeout``).
HANDSHAKE_SDU_TIMEOUT = 10.0
#: SDU timeout once the mux runs (``sduTimeout``).
SDU_TIMEOUT = 30.0

# One receive may bring several SDUs; large enough for a full-size ingress SDU with room
# to spare, small enough that allocating it per call stays cheap.
_RECEIVE_SIZE = 4 * (MAX_SDU_PAYLOAD + SDU_HEADER_SIZE)

# Pieces in one gathered socket write; well below the kernel's IOV_MAX (1024).
_MAX_GATHER = 512

_unpack_header = struct.Struct(">IHH").unpack_from
_pack_header = struct.Struct(">IHH").pack


def unsent_parts(parts: list, sent: int) -> list:
    """What remains of the gathered ``parts`` once ``sent`` bytes of them have gone.

    A piece cut in the middle continues as a view of its untaken end, so the rest of an
    SDU goes out later exactly as it was encoded.
    """
    first = 0
    while first < len(parts) and sent >= len(parts[first]):
        sent -= len(parts[first])
        first += 1
    parts = parts[first:]
    if sent:
        parts[0] = memoryview(parts[0])[sent:]
    return parts


def _bearer_closed(exc: BaseException, doing: str) -> BearerClosed:
    """The typed error for a stream or socket failure while ``doing`` ("reading", "writing")."""
    if isinstance(exc, trio.ClosedResourceError) or getattr(exc, "errno", None) == errno.EBADF:
        return BearerClosed(f"bearer closed locally while {doing}")
    return BearerClosed(f"connection broken while {doing}: {exc.__cause__ or exc}")


class Bearer:
    """SDU reads and writes over a :class:`trio.abc.Stream`, with timeouts and counters.

    Reads are buffered: one socket read may deliver several SDUs, and :meth:`read_sdu`
    returns them one by one. A socket read that returns less than it asked for leaves the socket
    empty, so the next one waits for readability before reading (one system call per read, not a
    second that finds nothing); after a full read it reads again at once. Only one task may read and one task may write at a time
    (the mux has one reader task and at most one writer task; it also writes with
    :meth:`try_write_parts`, which never waits, only while its writer is idle).
    """

    def __init__(
        self,
        stream: trio.abc.Stream,
        *,
        sdu_timeout: float = HANDSHAKE_SDU_TIMEOUT,
        timestamp: Callable[[], int] = monotonic_timestamp,
    ) -> None:
        self.stream = stream
        #: Seconds an SDU may take to arrive once its first byte is here (and a write to go out).
        self.sdu_timeout = sdu_timeout
        self._timestamp = timestamp
        #: The transmission time to stamp on SDUs written now (low 32 bits): a function, the
        #: default clock itself (it keeps only those bits) when no other was given, so that the
        #: mux's stamp for a write is one call.
        self.timestamp: Callable[[], int] = timestamp if timestamp is monotonic_timestamp else \
            (lambda: timestamp() & 0xFFFFFFFF)
        self._rbuf = b""
        self._rpos = 0
        # Whether the last socket read took less than it asked for: the socket's receive buffer
        # was empty then, so the next read waits for readability before it reads instead of
        # reading first to learn that nothing is there (level-triggered, the wait returns at
        # once if bytes came since).
        self._drained = False
        # On a socket stream the bearer talks to the non-blocking socket itself (the same steps
        # as trio's stream, without its per-call wrappers: this is the mux's hot path).
        sock = getattr(stream.socket, "_sock", None) if isinstance(stream, trio.SocketStream) else None
        self._socket = sock
        self._gather_socket = sock if hasattr(sock, "sendmsg") else None
        # A write that never waits: the socket's gathered send, or a stream's own
        # ``send_parts_nowait(parts) -> bytes taken`` (an in-memory link offers one, so the mux
        # runs over it as over TCP). Either raises BlockingIOError when it can take nothing.
        self._send_nowait = sock.sendmsg if self._gather_socket is not None else getattr(
            stream, "send_parts_nowait", None)
        #: Whether :meth:`try_write_parts` can hand bytes over without waiting.
        self.writes_without_waiting = self._send_nowait is not None
        self._closed = False
        self.bytes_in = 0
        self.bytes_out = 0
        self.sdus_in = 0
        self.sdus_out = 0

    # -- reading -------------------------------------------------------------------
    async def read_sdu(self) -> SDU:
        """The next SDU from the peer.

        Raises :class:`BearerClosed` at end of stream (also exactly between SDUs),
        :class:`SDUDecodeError` for a zero-length SDU or a header cut off by the end of
        the stream, and :class:`SDUReadTimeout` when an SDU started but did not finish in
        time.
        """
        return await self._read(self._take_sdu)

    async def read_frames(self) -> list[tuple[int, memoryview]]:
        """Every complete SDU already received, at least one, as ``(word, payload)`` pairs.

        ``word`` is the second header word as sent, ``M << 15 | protocol_num``, which the
        mux uses directly as its dispatch key; the timestamp is dropped. ``payload`` is a
        read-only view into the read (no copy per SDU), or the payload copied out when the read
        held exactly one SDU (a round's request or reply), from a socket or any other stream. This is the mux's hot path
        (one await for a whole socket read's worth of SDUs); the errors are those of :meth:`read_sdu`, an SDU after which the stream is
        bad is returned before the error is raised on the next call.
        """
        if self._rpos == len(self._rbuf):
            # Nothing buffered: the usual case, once per read of every connection. The steps of
            # _read, _fill and _socket_call written out here: each coroutine frame between the
            # mux's reader and trio's wait is entered and resumed on every read, and the three of
            # them cost about 1.5 us a read (bench/sig_submission_rounds.py).
            sock = self._socket
            try:
                if sock is None:
                    # A stream that is not a socket (the simulator's links, a TLS stream): its own read.
                    data = await self.stream.receive_some(_RECEIVE_SIZE)
                else:
                    data = None
                    if not self._drained:
                        # No read yet, or the last one filled its buffer: more may be waiting.
                        await trio.lowlevel.checkpoint_if_cancelled()
                        try:
                            data = sock.recv(_RECEIVE_SIZE)
                        except BlockingIOError:
                            pass
                        else:
                            await trio.lowlevel.cancel_shielded_checkpoint()
                    # After a short read the socket was empty: wait first (a checkpoint like the
                    # others), then read; a read can still find nothing after a spurious wake-up.
                    while data is None:
                        await trio.lowlevel.wait_readable(sock)
                        try:
                            data = sock.recv(_RECEIVE_SIZE)
                        except BlockingIOError:
                            pass
                    self._drained = len(data) < _RECEIVE_SIZE
            except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
                raise _bearer_closed(exc, "reading") from exc
            size = len(data)
            if size > SDU_HEADER_SIZE:
                _, word, length = _unpack_header(data)
                if size == SDU_HEADER_SIZE + length:
                    # Exactly one whole SDU, the usual read of a request/reply round: its payload
                    # is copied out (the copy the framer makes of a message it returns whole),
                    # and nothing stays buffered.
                    self._rbuf = b""
                    self._rpos = 0
                    self.sdus_in += 1
                    self.bytes_in += size
                    return [(word, data[SDU_HEADER_SIZE:])]
            self._append(data, None)
            frames = self._take_frames()
            if frames:
                return frames
        return await self._read(self._take_frames)

    async def _read(self, take):
        if self._rpos == len(self._rbuf):
            await self._fill(None)
        got = take()
        if got:
            return got
        # The SDU has started but is not all here: the timeout runs from now.
        with trio.move_on_after(self.sdu_timeout):
            while True:
                await self._fill(self._expected_size())
                got = take()
                if got:
                    return got
        raise SDUReadTimeout(self.sdu_timeout, len(self._rbuf) - self._rpos, self._expected_size())

    def _expected_size(self) -> int | None:
        """Header plus payload size of the SDU being received, once its header is here."""
        if len(self._rbuf) - self._rpos < SDU_HEADER_SIZE:
            return None
        return SDU_HEADER_SIZE + _unpack_header(self._rbuf, self._rpos)[2]

    def _take_sdu(self) -> SDU | None:
        """Cut one complete SDU off the read buffer, if one is there."""
        buf = self._rbuf
        pos = self._rpos
        start = pos + SDU_HEADER_SIZE
        if len(buf) < start:
            return None
        timestamp, word, length = _unpack_header(buf, pos)
        if length == 0:
            raise SDUDecodeError(f"short SDU: zero-length payload for mini-protocol {word & MAX_PROTOCOL_NUM}")
        stop = start + length
        if len(buf) < stop:
            return None
        self._rpos = stop
        self.sdus_in += 1
        self.bytes_in += stop - pos
        return SDU(word & MAX_PROTOCOL_NUM, word > MAX_PROTOCOL_NUM, buf[start:stop], timestamp)

    def _take_frames(self) -> list[tuple[int, memoryview]]:
        """Cut every complete SDU off the read buffer."""
        buf = self._rbuf
        view = memoryview(buf)
        start = pos = self._rpos
        size = len(buf)
        frames = []
        while size - pos >= SDU_HEADER_SIZE:
            _, word, length = _unpack_header(buf, pos)
            stop = pos + SDU_HEADER_SIZE + length
            if not length:
                if frames:
                    break
                raise SDUDecodeError(f"short SDU: zero-length payload for mini-protocol {word & MAX_PROTOCOL_NUM}")
            if stop > size:
                break
            frames.append((word, view[pos + SDU_HEADER_SIZE:stop]))
            pos = stop
        self._rpos = pos
        self.sdus_in += len(frames)
        self.bytes_in += pos - start
        return frames

    def read_sdu_nowait(self) -> SDU | None:
        """The next SDU if it has arrived whole, reading the socket at most once and never
        waiting; None otherwise, and what was read stays buffered for :meth:`read_sdu`.

        For the handshake, whose first message is usually there by the time a connection
        is accepted: taking it this way spares a timeout scope and a scheduler pass. The
        errors are those of :meth:`read_sdu`.
        """
        sdu = self._take_sdu()
        if sdu is not None or self._socket is None:
            return sdu
        try:
            data = self._socket.recv(_RECEIVE_SIZE)
        except BlockingIOError:
            self._drained = True
            return None
        except OSError as exc:
            raise _bearer_closed(exc, "reading") from exc
        self._drained = len(data) < _RECEIVE_SIZE
        self._append(data, self._expected_size())
        return self._take_sdu()

    async def _fill(self, expected: int | None) -> None:
        """Append the next chunk from the stream to the read buffer."""
        try:
            if self._socket is None:
                data = await self.stream.receive_some(_RECEIVE_SIZE)
            else:
                data = await self._socket_call(self._socket.recv, trio.lowlevel.wait_readable, _RECEIVE_SIZE,
                                               wait_first=self._drained)
                self._drained = len(data) < _RECEIVE_SIZE
        except (trio.BrokenResourceError, trio.ClosedResourceError, OSError) as exc:
            raise _bearer_closed(exc, "reading") from exc
        self._append(data, expected)

    def _append(self, data: bytes, expected: int | None) -> None:
        """Add what one read returned to the buffer; the end of the stream is an error."""
        pending = len(self._rbuf) - self._rpos
        if not data:
            if pending == 0:
                raise BearerClosed("end of stream between SDUs")
            if pending < SDU_HEADER_SIZE:
                raise SDUDecodeError(f"truncated SDU header: end of stream after {pending} of "
                                     f"{SDU_HEADER_SIZE} bytes")
            raise BearerClosed(f"end of stream inside an SDU: {pending} of {expected} bytes received")
        if pending == 0:
            self._rbuf = data
        else:
            self._rbuf = self._rbuf[self._rpos:] + data
        self._rpos = 0

    async def _socket_call(self, operation, wait, argument, *, wait_first: bool = False):
        """One call on the non-blocking socket: a cancellation point, and a yield to other
        tasks whether or not it had to wait, exactly like trio's socket methods.

        ``wait_first``: the socket is known to have nothing for the call (a read after a
        short read), so it waits for readiness before trying.
        """
        if not wait_first:
            await trio.lowlevel.checkpoint_if_cancelled()
            try:
                result = operation(argument)
            except BlockingIOError:
                pass
            else:
                await trio.lowlevel.cancel_shielded_checkpoint()
                return result
        while True:
            await wait(self._socket)
            try:
                return operation(argument)
            except BlockingIOError:
                pass

    # -- writing -------------------------------------------------------------------
    async def write_sdu(self, sdu: SDU) -> None:
        """Send one SDU, stamped with the current transmission time.

        Header and payload go out as one gathered write, unjoined: the handshake writes its
        reply this way on every connection (one per message from a Mithril signer).
        """
        header = encode_header(self._timestamp(), sdu.protocol_num, sdu.from_responder, len(sdu.payload))
        await self.write_parts([header, sdu.payload], 1)

    async def write_many(self, sdus: Iterable[SDU]) -> None:
        """Send several SDUs in one socket write (all stamped with the same time)."""
        stamp = self.timestamp()
        parts = []
        count = 0
        for sdu in sdus:
            length = len(sdu.payload)
            if not 0 < length <= MAX_SDU_PAYLOAD:
                raise ValueError(f"SDU payload of {length} bytes outside 1..{MAX_SDU_PAYLOAD} (a zero-length SDU "
                                 f"is fatal to the peer)")
            num = sdu.protocol_num
            if not 0 <= num <= MAX_PROTOCOL_NUM:
                raise ValueError(f"protocol number {num} outside 0..{MAX_PROTOCOL_NUM}")
            parts.append(_pack_header(stamp, num | 0x8000 if sdu.from_responder else num, length))
            parts.append(sdu.payload)
            count += 1
        if count:
            await self.write_bytes(b"".join(parts), count)

    async def write_bytes(self, data: bytes, sdu_count: int) -> None:
        """Send bytes that already hold ``sdu_count`` whole encoded SDUs.

        For callers that encode SDUs themselves on a hot path; everything else should use
        :meth:`write_sdu` or :meth:`write_many`.
        """
        if self._gather_socket is not None:
            await self.write_parts([data], sdu_count)
            return
        with trio.move_on_after(self.sdu_timeout) as scope:
            try:
                await self.stream.send_all(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                raise _bearer_closed(exc, "writing") from exc
        if scope.cancelled_caught:
            raise SDUWriteTimeout(self.sdu_timeout, len(data))
        self.bytes_out += len(data)
        self.sdus_out += sdu_count

    async def write_parts(self, parts: list, sdu_count: int) -> None:
        """Send whole encoded SDUs given as pieces (headers, payloads, slices of payloads).

        On a socket the pieces go to the kernel as one gathered write (``sendmsg``), so the
        mux never copies what it sends into a joined buffer; on other streams, or with more
        pieces than one gathered write takes, they are joined and sent with
        :meth:`write_bytes`.
        """
        sock = self._gather_socket
        if sock is None or len(parts) > _MAX_GATHER:
            await self.write_bytes(b"".join(parts), sdu_count)
            return
        total = remaining = sum(map(len, parts))
        # First attempt outside the timeout scope: a socket with room takes everything at
        # once, and then the write costs no cancel scope (a connection's usual case). Such a
        # write is a cancellation point but not a schedule point: the one writer of a bearer
        # runs out of queued bytes after at most a send buffer's worth and then waits, so it
        # cannot starve other tasks, and each Mithril message saves two scheduler passes.
        await trio.lowlevel.checkpoint_if_cancelled()
        try:
            sent = sock.sendmsg(parts)
        except BlockingIOError:
            sent = 0
        except OSError as exc:
            raise _bearer_closed(exc, "writing") from exc
        if sent == total:
            self.bytes_out += total
            self.sdus_out += sdu_count
            return
        parts = unsent_parts(parts, sent)
        remaining -= sent
        with trio.move_on_after(self.sdu_timeout) as scope:
            try:
                while True:
                    sent = await self._socket_call(sock.sendmsg, trio.lowlevel.wait_writable, parts)
                    remaining -= sent
                    if not remaining:
                        break
                    parts = unsent_parts(parts, sent)
            except (trio.ClosedResourceError, OSError) as exc:
                raise _bearer_closed(exc, "writing") from exc
        if scope.cancelled_caught:
            raise SDUWriteTimeout(self.sdu_timeout, total)
        self.bytes_out += total
        self.sdus_out += sdu_count

    def try_write_parts(self, parts: list, sdu_count: int, total: int | None = None) -> int:
        """Hand whole encoded SDUs to the kernel (or a stream that takes bytes without waiting) in one
        non-blocking gathered write.

        Returns how many bytes the kernel took: all of them, some (the socket buffer filled,
        possibly in the middle of an SDU), or none (the buffer was already full). It never
        waits and is not a checkpoint, so a task can answer a request without a scheduler
        pass; what was not taken must be completed with :meth:`write_parts` (give it
        :func:`unsent_parts` and the same ``sdu_count``) before anything else is written.
        Taken bytes are counted at once, the SDUs once the whole batch has gone.

        Raises :class:`BearerClosed` on a broken or closed socket, like the waiting writes.
        Only for bearers with :attr:`writes_without_waiting`. ``total``: the bytes of ``parts``,
        when the caller has counted them.
        """
        if total is None:
            total = sum(map(len, parts))
        if len(parts) > _MAX_GATHER:
            parts = [b"".join(parts)]
        try:
            sent = self._send_nowait(parts)
        except BlockingIOError:
            return 0
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise _bearer_closed(exc, "writing") from exc
        self.bytes_out += sent
        if sent == total:
            self.sdus_out += sdu_count
        return sent

    # -- closing -------------------------------------------------------------------
    def close_now(self) -> bool:
        """Close a socket bearer at once, without a checkpoint (idempotent).

        Returns False, leaving the stream open, when it is not a socket: then only
        :meth:`aclose` can close it. Connection teardown calls this first so that the common
        case needs no shielded cancel scope.
        """
        if self._closed:
            return True
        if self._socket is None:
            return False
        self._closed = True
        self.stream.socket.close()
        return True

    async def aclose(self) -> None:
        """Close the stream (idempotent)."""
        if self._closed:
            return
        self._closed = True
        await self.stream.aclose()

    @property
    def closed(self) -> bool:
        return self._closed


async def connect_tcp(host: str, port: int, *, sdu_timeout: float = HANDSHAKE_SDU_TIMEOUT) -> Bearer:
    """Open a TCP connection (with TCP_NODELAY, as trio sets it) and wrap it in a bearer."""
    try:
        stream = await trio.open_tcp_stream(host, port)
    except OSError as exc:
        raise ConnectFailed(f"{host}:{port} (TCP)", exc) from exc
    return Bearer(stream, sdu_timeout=sdu_timeout)


async def connect_unix(path: str | os.PathLike[str], *, sdu_timeout: float = HANDSHAKE_SDU_TIMEOUT) -> Bearer:
    """Connect to a Unix stream socket and wrap it in a bearer."""
    try:
        stream = await trio.open_unix_socket(os.fspath(path))
    except OSError as exc:
        raise ConnectFailed(f"Unix socket {os.fspath(path)}", exc) from exc
    return Bearer(stream, sdu_timeout=sdu_timeout)
