"""The multiplexer: many mini-protocol byte streams over one bearer (docs/protocol/mux.md 2.2-2.6).

Each registered mini-protocol instance gets a :class:`MuxChannel`, one ordered byte
stream each way, identified on the wire by its protocol number and the M bit. The mux
does not know what the bytes mean: it segments what channels send into SDUs, serves the
channels round-robin so that one busy protocol cannot starve another, reassembles what
arrives into whole CBOR items, and enforces the per-channel ingress limits that bound
what a peer can make us buffer.

Egress has two paths. A reply (the first send after the peer's bytes arrived, or a channel's
first send after bytes arrived for it) sent while the mux has nothing else to write hands
its SDUs to the socket at once, from the sending task (see :meth:`Mux._schedule`); what
channels answering from the reader (``on_bytes``) queue while one read is delivered goes out
in one write after it. Anything that cannot go out that way waits for the writer task, which
is only started the first time it is needed. A connection that answers one request and
closes costs no writer task.

A mux serves exactly one connection. Every fatal condition ends that connection, wakes
all its channels with :class:`~ouroboros_mux.channel.ChannelClosed`, and is raised from
:meth:`Mux.run` as a typed :class:`~ouroboros_mux.errors.MuxError`; nothing leaks to
other connections because nothing is shared with them.
"""

from __future__ import annotations

import enum
import struct
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import trio

from .bearer import SDU_TIMEOUT, Bearer, unsent_parts
from .channel import ChannelClosed, CborFramer
from .errors import BearerClosed, IngressQueueOverRun, MuxError, UnknownMiniProtocol, WrongDirection
from .sdu import EGRESS_SDU_SIZE, MAX_PROTOCOL_NUM, SDU_HEADER_SIZE

__all__ = [
    "Mux",
    "MuxChannel",
    "Mode",
    "Provenance",
    "TrafficCounters",
    "SEND_BUFFER_LIMIT",
    "MAX_SDUS_PER_WRITE",
    "MAX_BYTES_PER_WRITE",
]

#: A sender blocks while its channel holds this many unsent bytes (the reference's egress queue bound).
SEND_BUFFER_LIMIT = 0x3FFFF
#: A blocked sender is woken once its channel is drained below this: it can then queue a few
#: messages per wake-up instead of one per SDU written.
SEND_BUFFER_RESUME = SEND_BUFFER_LIMIT // 2
#: At most this many SDUs, or about this many bytes, go out in one socket write.
MAX_SDUS_PER_WRITE = 100
MAX_BYTES_PER_WRITE = 131072

_pack_header = struct.Struct(">IHH").pack
_RESPONDER_BIT = 0x8000


class Provenance(str, enum.Enum):
    """Who opened a connection (the reference's ``Provenance``): not who talks first.

    The node's peer table uses the same values for its peers, which is why they read as the
    node sees its peers. It is not the direction of a mini-protocol instance on the
    connection (:class:`Mode`), nor a protocol role (``protocol_engine.Role``: client or
    server), nor the direction of a message (``protocol_engine.Direction``: sent or received).
    """

    OUTBOUND = "outbound"  # we opened the connection (dialled)
    INBOUND = "inbound"    # the peer opened it (we accepted)


class Mode(str, enum.Enum):
    """Which instance of a mini-protocol a channel carries on our side."""

    INITIATOR = "initiator"  # sends M = 0, receives the peer responder's M = 1 SDUs
    RESPONDER = "responder"  # sends M = 1, receives the peer initiator's M = 0 SDUs


@dataclass(frozen=True, slots=True)
class TrafficCounters:
    """Traffic of one channel, headers included (8 bytes per SDU)."""

    bytes_in: int
    bytes_out: int
    sdus_in: int
    sdus_out: int


class MuxChannel:
    """One mini-protocol instance's view of the connection: whole CBOR messages in, bytes out.

    Implements :class:`~ouroboros_mux.channel.MessageChannel`. Received bytes count
    against the ingress limit until :meth:`recv_message` has framed them into a returned
    message; bytes a terminated protocol never read stay queued (and still count).
    """

    __slots__ = (
        "protocol_num",
        "mode",
        "ingress_limit",
        "_mux",
        "_framer",
        "_recv_lot",
        "_receiving",
        "_recv_waiting",
        "_recv_max",
        "_send_chunks",
        "_send_len",
        "_send_lot",
        "_send_waiting",
        "_send_woken",
        "_scheduled",
        "_egress_word",
        "_finished",
        "_closed",
        "_on_data",
        "_on_bytes",
        "_owed",
        "take_decoded",
        "bytes_in",
        "bytes_out",
        "sdus_in",
        "sdus_out",
    )

    def __init__(self, mux: Mux, protocol_num: int, mode: Mode, ingress_limit: int) -> None:
        self.protocol_num = protocol_num
        self.mode = mode
        self.ingress_limit = ingress_limit
        self._mux = mux
        self._framer = CborFramer()
        self._recv_lot = trio.lowlevel.ParkingLot()
        self._receiving = False
        self._recv_waiting = False
        self._recv_max: int | None = None
        # Unsent bytes as the pieces the protocol passed in (joined only into socket writes).
        self._send_chunks: deque = deque()
        self._send_len = 0
        self._send_lot = trio.lowlevel.ParkingLot()
        # Senders parked on a full buffer, and whether they have been woken since the last
        # one parked (the writer then need not wake them again for every SDU it cuts).
        self._send_waiting = 0
        self._send_woken = False
        self._scheduled = False
        self._egress_word = protocol_num | _RESPONDER_BIT if mode is Mode.RESPONDER else protocol_num
        self._finished = False
        self._closed: ChannelClosed | None = None
        self._on_data: Callable[[], None] | None = None
        self._on_bytes: Callable[[], None] | None = None
        # Bytes arrived since this channel last queued any: its next send answers them and
        # may go out at once (see Mux._schedule).
        self._owed = False
        #: ``take_decoded(decode, context, max_size=None)``: :meth:`take_message`, the bytes first
        #: offered to ``decode(context, buf)``, which may frame its messages itself: None when no item
        #: is complete, else ``(raw, message)``, ``message`` None when ``decode`` did not read it. It
        #: is the framer's own :meth:`CborFramer.next_decoded` while the channel is open (no method
        #: between a driver's receive and the framer: it is asked once or twice for every message a
        #: peer run from the reader takes), and one that reports the end once it has closed.
        self.take_decoded = self._framer.next_decoded
        self.bytes_in = 0
        self.bytes_out = 0
        self.sdus_in = 0
        self.sdus_out = 0

    def __repr__(self) -> str:
        return f"<MuxChannel {self.protocol_num} {self.mode.value}>"

    # -- MessageChannel ------------------------------------------------------------
    async def send(self, data: bytes) -> None:
        """Queue bytes for the peer; blocks while this channel's send buffer is full.

        Message boundaries do not matter to the mux: the bytes are cut into SDUs as they
        come, and one SDU may carry the end of one message and the start of the next.

        While the buffer has room this only checks for cancellation and does not yield:
        a protocol sending a burst of messages queues them all before the writer runs,
        so they leave in a few large socket writes rather than one write per message.
        The buffer bound limits how long a sender can run without yielding.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        while True:
            if self._closed is not None:
                raise self._closed_error()
            if self._send_len < SEND_BUFFER_LIMIT:
                break
            self._send_waiting += 1
            self._send_woken = False
            try:
                await self._send_lot.park()
            finally:
                self._send_waiting -= 1
        self.send_nowait(data)  # room now, and open: it queues

    async def recv_message(self, max_size: int | None = None) -> bytes:
        """The exact received bytes of the next complete CBOR item on this channel.

        Raises :class:`ChannelClosed` once the connection has ended (the cause, if any,
        is chained), :class:`MessageTooLarge` when ``max_size`` bytes are buffered
        without completing an item, and :class:`MalformedMessage` when the stream is not
        CBOR (the bytes stay queued; the protocol above decides what to do).

        A message already buffered is returned after a cancellation check, without
        yielding; the ingress limit bounds how many there can be.
        """
        await trio.lowlevel.checkpoint_if_cancelled()
        if self._receiving:
            raise trio.BusyResourceError(f"another task is already receiving on {self!r}")
        self._receiving = True
        try:
            while True:
                if self._closed is not None:
                    raise self._closed_error()
                item = self._framer.next_message(max_size)
                if item is not None:
                    return item
                self._recv_max = max_size
                self._recv_waiting = True
                try:
                    await self._recv_lot.park()
                finally:
                    self._recv_waiting = False
        finally:
            self._receiving = False
            self._recv_max = None

    async def wait_message(self, max_size: int | None = None) -> None:
        """Wait until a complete message is here, and leave it queued: the next receive returns it.

        For a protocol started on demand (docs/protocol/mux.md 2.5), which waits without a time
        limit for its peer's first message and then runs over this channel as it is. The errors
        are those of :meth:`recv_message`.
        """
        self._framer.unread(await self.recv_message(max_size))

    # -- answering from the reader -------------------------------------------------
    def on_bytes(self, consume: Callable[[], None] | None) -> None:
        """Call ``consume`` in the reader, without a task switch, whenever bytes arrive (None: stop).

        A protocol whose answers need no waiting (a serving peer's replies from memory)
        takes its requests with :meth:`take_message` and queues its replies with
        :meth:`send_nowait` right there, instead of a task being woken for each request.
        ``consume`` must not raise: what it cannot handle it hands to its own task. It is
        also called once the channel closes, so that :meth:`take_message` reports the end.
        """
        self._on_bytes = consume

    def owe_reply(self) -> None:
        """The protocol keeps a request it will answer later (a parked blocking request): that answer
        goes out at once, as a reply in the round of its request would (see ``Mux._schedule``).

        Needed when the kept request arrived behind another in one read and the other's reply
        took the channel's turn: the later answer is still a reply, not the start of a burst.
        """
        self._owed = True

    def take_message(self, max_size: int | None = None) -> bytes | None:
        """What :meth:`recv_message` would return, without waiting: None when no item is complete."""
        if self._closed is not None:
            raise self._closed_error()
        framer = self._framer
        # Fewer bytes than the next item needs (the reader's last question of every read,
        # usually with nothing buffered): the framer's ``wanted`` says so, without its call.
        if framer.buffered < framer.wanted and (max_size is None or framer.buffered <= max_size):
            return None
        return framer.next_message(max_size)


    def send_nowait(self, data: bytes) -> bool:
        """Queue ``data`` as :meth:`send` does if the send buffer has room now; False (nothing queued) if not.

        ``send_nowait(b"")`` only asks whether there is room (peers answering from the reader
        ask before each reply).
        """
        if self._closed is not None or self._send_len >= SEND_BUFFER_LIMIT:
            return False
        if data:
            # Appended to the send buffer, and the writer takes this channel's turn.
            if type(data) is not bytes:
                data = bytes(data)  # the caller may reuse a mutable buffer
            self._send_chunks.append(data)
            self._send_len += len(data)
            if not self._scheduled:
                self._scheduled = True
                self._mux._schedule(self)
        return True

    # -- lifecycle -----------------------------------------------------------------
    def finish(self) -> None:
        """Mark this protocol instance as terminated.

        When every registered channel is finished, the peer closing the connection is a
        clean end; before that it is :class:`BearerClosed`. Bytes already queued with
        :meth:`send` are still delivered. The mux never starts a terminated protocol
        again by itself: bytes the peer sends for it stay queued (and count against the
        ingress limit) until the layer above starts a new instance with :meth:`on_data`.
        """
        self._finished = True

    def on_data(self, start: Callable[[], None]) -> None:
        """Call ``start`` once the peer's bytes for this channel are here (once per call).

        For protocols started on demand, as the reference's ``StartOnDemand``: a local
        client that never speaks notification costs no task for it. Bytes already queued
        (the peer's next instance sent right behind the end of the last one) start it at
        once; otherwise the next bytes to arrive do, and they are queued when ``start``
        runs, so the protocol's first ``recv_message`` finds them. From then on the channel
        counts as running again, not finished. On a closed channel nothing is started.
        """
        if self._closed is not None:
            return
        if self._framer.buffered:
            self._finished = False
            start()
        else:
            self._on_data = start

    @property
    def finished(self) -> bool:
        return self._finished

    @property
    def closed(self) -> bool:
        return self._closed is not None

    @property
    def queued_in(self) -> int:
        """Received bytes not yet returned as messages (what the ingress limit bounds)."""
        return self._framer.buffered

    @property
    def queued_out(self) -> int:
        """Bytes sent by the protocol and not yet handed to the bearer."""
        return self._send_len

    def counters(self) -> TrafficCounters:
        return TrafficCounters(self.bytes_in, self.bytes_out, self.sdus_in, self.sdus_out)

    # -- used by the mux -----------------------------------------------------------
    def _deliver(self, payload: bytes) -> None:
        framer = self._framer
        size = len(payload)
        queued = framer.buffered
        if queued + size > self.ingress_limit:
            raise IngressQueueOverRun(self.protocol_num, self.mode is Mode.INITIATOR, self.ingress_limit,
                                      queued, size)
        framer.feed(payload)
        self._owed = True
        self.bytes_in += size + SDU_HEADER_SIZE
        self.sdus_in += 1
        if self._on_data is not None:
            start, self._on_data = self._on_data, None
            self._finished = False
            start()
        if self._on_bytes is not None:
            self._on_bytes()
            return
        # Wake the receiver only when it has something to do: a message may be complete,
        # or its state's size limit is exceeded.
        if self._recv_waiting:
            buffered = queued + size
            if buffered >= framer.wanted or (self._recv_max is not None and buffered > self._recv_max):
                # Woken once: the SDUs after this one in the same socket read arrive before
                # the receiver runs, and it looks at all of them when it does.
                self._recv_waiting = False
                self._recv_lot.unpark_all()

    def _close(self, error: ChannelClosed) -> None:
        if self._closed is None:
            self._closed = error
            # Not a method of this channel: that would be a reference cycle (see below).
            self.take_decoded = partial(_take_closed, error)
        # Nothing is sent once closed (``send`` raises), and a protocol never started will
        # not be: dropping the mux and the starter (which holds the connection's nursery)
        # leaves no reference cycle, so a connection is freed as soon as it ends instead of
        # waiting for the cyclic collector.
        self._mux = None
        self._on_data = None
        consume, self._on_bytes = self._on_bytes, None
        if consume is not None:
            consume()
        self._recv_lot.unpark_all()
        self._send_lot.unpark_all()

    def _closed_error(self) -> ChannelClosed:
        return _fresh_closed(self._closed)


def _fresh_closed(closed: ChannelClosed) -> ChannelClosed:
    """A fresh copy of a channel's end, per raise, so tracebacks of different callers do not pile up."""
    error = ChannelClosed(*closed.args)
    error.__cause__ = closed.__cause__
    return error


def _take_closed(closed: ChannelClosed, decode: Callable[[Any, bytes], tuple[Any, int] | None], context: Any,
                 max_size: int | None = None) -> tuple[bytes, Any] | None:
    """:attr:`MuxChannel.take_decoded` once the channel has closed: the end, as ``take_message`` reports it."""
    raise _fresh_closed(closed)


class Mux:
    """Runs the mini-protocol channels of one connection over its bearer.

    Register every channel, then ``await mux.run()`` (typically in the connection's
    nursery, beside the protocol tasks). ``run`` returns when the connection ends
    cleanly (:meth:`stop`, or the peer closing after every channel finished) and raises
    the :class:`MuxError` that ended it otherwise.
    """

    def __init__(self, bearer: Bearer, provenance: Provenance | str) -> None:
        self.bearer = bearer
        self.provenance = Provenance(provenance)
        # Keyed by the second header word of incoming SDUs: M << 15 | protocol number.
        self._by_ingress: dict[int, MuxChannel] = {}
        self._numbers: set[int] = set()
        self._ready: deque[MuxChannel] = deque()
        self._writer_lot = trio.lowlevel.ParkingLot()
        self._nursery: trio.Nursery | None = None
        self._writer_started = False
        # True from the moment a batch of SDUs is cut until the kernel has all of it: then
        # nothing else may be written, and only the writer task may finish the batch.
        self._writing = False
        # A batch the direct path handed over only in part: its untaken pieces and SDUs.
        self._tail: list | None = None
        self._tail_sent: list[tuple[MuxChannel, int]] = []
        # The direct path needs a write that never waits (a socket's, or a stream's that offers one:
        # :attr:`Bearer.writes_without_waiting`). It is armed when the mux starts and whenever the
        # peer's bytes arrive, and used once; a channel that got bytes since it last sent may
        # also use it (its send answers them). So a reply goes out at once, while a burst of
        # sends is left to the writer, which packs it into full SDUs and large writes (a burst of
        # direct writes would be one SDU and one system call per message).
        self._direct_capable = bearer.writes_without_waiting
        self._direct_armed = False
        # True while the reader delivers one read's SDUs: what channels' ``on_bytes`` consumers
        # send meanwhile is queued, and written once they all have run (one write per read).
        self._delivering = False
        self._started = False
        self._stopping = False
        self._ended = False
        self._cancel_scope: trio.CancelScope | None = None
        #: The fatal error that ended the connection, once it has ended with one.
        self.error: MuxError | None = None

    # -- setup ---------------------------------------------------------------------
    def register(self, protocol_num: int, mode: Mode | str, ingress_limit: int) -> MuxChannel:
        """Add one mini-protocol instance; both modes may be registered for one number."""
        if self._started:
            raise RuntimeError("channels must be registered before the mux runs")
        mode = Mode(mode)
        if not 0 <= protocol_num <= MAX_PROTOCOL_NUM:
            raise ValueError(f"protocol number {protocol_num} outside 0..{MAX_PROTOCOL_NUM}")
        if ingress_limit < 1:
            raise ValueError(f"ingress limit of mini-protocol {protocol_num} must be positive, got {ingress_limit}")
        # Our responder instance receives what the peer's initiator sends (M = 0).
        key = protocol_num | _RESPONDER_BIT if mode is Mode.INITIATOR else protocol_num
        if key in self._by_ingress:
            raise ValueError(f"mini-protocol {protocol_num} already registered as {mode.value}")
        channel = MuxChannel(self, protocol_num, mode, ingress_limit)
        self._by_ingress[key] = channel
        self._numbers.add(protocol_num)
        return channel

    @property
    def channels(self) -> list[MuxChannel]:
        return list(self._by_ingress.values())

    def counters(self) -> dict[tuple[int, Mode], TrafficCounters]:
        """Bytes and SDUs in and out per (protocol number, our instance's mode), headers included."""
        return {(ch.protocol_num, ch.mode): ch.counters() for ch in self._by_ingress.values()}

    # -- running -------------------------------------------------------------------
    async def run(self, *, nursery: trio.Nursery | None = None) -> None:
        """Move SDUs until the connection ends; then close the bearer and every channel.

        The reader runs in the calling task. The writer, started only once some bytes
        cannot go out directly from the sending task, is a task of ``nursery`` when one is
        given (the connection's own, so one connection costs one nursery, not two), else of
        a nursery of its own. Either way the writer is done with, or about to leave, the
        connection when ``run`` returns.
        """
        if self._started:
            raise RuntimeError("a mux runs once")
        self._started = True
        self.bearer.sdu_timeout = SDU_TIMEOUT
        if nursery is None:
            async with trio.open_nursery() as own:
                try:
                    await self._run_in(own)
                finally:
                    own.cancel_scope.cancel()
        else:
            await self._run_in(nursery)
        if self.error is not None:
            raise self.error

    async def _run_in(self, nursery: trio.Nursery) -> None:
        try:
            with trio.CancelScope() as scope:
                self._cancel_scope = scope
                self._nursery = nursery
                self._direct_armed = self._direct_capable
                if self._ready or self._stopping:
                    # Bytes queued before the mux ran, or a stop to honour: the writer
                    # drains the queue (round-robin) and then ends the connection.
                    self._start_writer()
                await self._guarded(self._read_loop)
        finally:
            self._nursery = None
            self._end()
            if not self.bearer.close_now():
                with trio.CancelScope(shield=True):
                    await self.bearer.aclose()

    def stop(self) -> None:
        """End the connection cleanly once every byte already sent by a channel is written."""
        self._stopping = True
        if self._writer_started:
            if self._writer_lot:
                self._writer_lot.unpark_all()
        elif self._cancel_scope is not None:
            # No writer yet, so nothing is queued: every byte sent so far went out directly.
            self._cancel_scope.cancel()

    @property
    def running(self) -> bool:
        return self._started and not self._ended

    # -- internals -----------------------------------------------------------------
    async def _guarded(self, loop) -> None:
        try:
            await loop()
        except MuxError as exc:
            self._fail(exc)
        else:
            self._cancel_scope.cancel()

    def _fail(self, error: MuxError) -> None:
        """End the connection with ``error`` (which :meth:`run` raises)."""
        # Once the connection has ended, a loop woken by the closed socket has nothing to report.
        if self.error is None and not self._ended:
            self.error = error
        self._cancel_scope.cancel()

    def _end(self) -> None:
        self._ended = True
        if self.error is not None:
            closed = ChannelClosed(f"connection ended: {self.error}")
            closed.__cause__ = self.error
        elif self._stopping:
            closed = ChannelClosed("connection closed by this side")
        else:
            closed = ChannelClosed("connection closed")
        for channel in self._by_ingress.values():
            channel._close(closed)
        self._ready.clear()
        self._tail = None
        if self._writer_lot:
            self._writer_lot.unpark_all()

    def _schedule(self, channel: MuxChannel) -> None:
        """Queue ``channel``, which just got bytes to send; write them now if nothing else is.

        When no other channel waits and no batch is on its way to the kernel, the writer
        task would cut exactly these SDUs next: if the direct path is armed, the sending task
        cuts them itself and hands them to the socket without waiting. Only what the kernel
        does not take (or what is beyond one write's budget) is left to the writer, which is
        started on first need.
        """
        if self._ended or self.error is not None:
            return
        ready = self._ready
        ready.append(channel)
        owed, channel._owed = channel._owed, False
        if self._delivering:
            return  # the reader writes what its consumers queued once they have all run
        direct = (self._direct_armed or owed and self._direct_capable) and len(ready) == 1 and not self._writing
        if direct and not self._write_directly():
            return
        if ready or self._writing:
            self._wake_writer()

    def _write_directly(self) -> bool:
        """One batch from the ready channels, written without waiting; False if that was fatal."""
        self._direct_armed = False
        parts, sent, total = self._cut_batch()
        try:
            taken = self.bearer.try_write_parts(parts, len(sent), total)
        except BearerClosed as exc:
            # The connection ends as if its writer had failed; the sending task is not the
            # one to report it (its next send or receive raises ChannelClosed).
            self._fail(exc)
            return False
        if taken == total:
            self._count_sent(sent)
        else:
            self._tail = unsent_parts(parts, taken)
            self._tail_sent = sent
            self._writing = True
        return True

    def _wake_writer(self) -> None:
        if self._writer_started:
            if self._writer_lot:
                self._writer_lot.unpark_all()
        elif self._nursery is not None:
            self._start_writer()

    def _start_writer(self) -> None:
        self._writer_started = True
        self._nursery.start_soon(self._guarded, self._write_loop)

    async def _read_loop(self) -> None:
        read_frames = self.bearer.read_frames
        by_ingress = self._by_ingress
        while True:
            try:
                frames = await read_frames()
            except BearerClosed as exc:
                running = [ch for ch in by_ingress.values() if not ch._finished]
                if not running:
                    return
                names = ", ".join(f"{ch.protocol_num} ({ch.mode.value})" for ch in running)
                raise BearerClosed(f"peer closed the connection while mini-protocols {names} were still "
                                   f"running: {exc}") from exc
            # The peer spoke: the next reply may go out directly. What channels' ``on_bytes``
            # consumers queue while these frames are delivered goes out in one write after them.
            self._direct_armed = self._direct_capable
            queued = bool(self._ready)  # then the writer has been woken for it already
            self._delivering = True
            try:
                for word, payload in frames:
                    channel = by_ingress.get(word)
                    if channel is None:
                        protocol_num, from_responder = word & MAX_PROTOCOL_NUM, word > MAX_PROTOCOL_NUM
                        if protocol_num in self._numbers:
                            raise WrongDirection(protocol_num, from_responder)
                        raise UnknownMiniProtocol(protocol_num, from_responder)
                    channel._deliver(payload)
            finally:
                self._delivering = False
            if self._ready and not queued and not self._ended and self.error is None:
                # What the consumers queued goes out now, directly if nothing else is being written
                # (in the loop, not a method of its own: this runs after most reads).
                if self._direct_armed and not self._writing and not self._write_directly():
                    continue  # that write ended the connection
                if self._ready or self._writing:
                    self._wake_writer()

    async def _write_loop(self) -> None:
        ready = self._ready
        bearer = self.bearer
        while True:
            if self._tail is not None:
                # The rest of a batch the direct path began: it goes first, unchanged.
                parts, sent = self._tail, self._tail_sent
                self._tail, self._tail_sent = None, []
            elif ready:
                self._writing = True
                parts, sent, _ = self._cut_batch()
            else:
                if self._stopping or self._ended:
                    return
                await self._writer_lot.park()
                continue
            await bearer.write_parts(parts, len(sent))
            self._writing = False
            self._count_sent(sent)

    def _cut_batch(self) -> tuple[list, list[tuple[MuxChannel, int]], int]:
        """Cut the next socket write's SDUs off the ready channels.

        One SDU per channel per turn; a channel with bytes left goes to the back. Returns the
        pieces to write, the (channel, payload size) of each SDU, and the byte total.
        """
        ready = self._ready
        stamp = self.bearer.timestamp()
        parts = []
        sent = []
        total = 0
        count = 0
        while ready and count < MAX_SDUS_PER_WRITE and total < MAX_BYTES_PER_WRITE:
            channel = ready.popleft()
            chunks = channel._send_chunks
            piece = chunks[0]
            size = len(piece)
            if size < EGRESS_SDU_SIZE and len(chunks) == 1:
                # The usual SDU: one queued message that fits (a request or a reply).
                chunks.clear()
                parts.append(_pack_header(stamp, channel._egress_word, size))
                parts.append(piece)
            else:
                header_at = len(parts)
                parts.append(b"")
                room = EGRESS_SDU_SIZE
                while chunks:
                    piece = chunks[0]
                    length = len(piece)
                    if length <= room:
                        chunks.popleft()
                        parts.append(piece)
                        room -= length
                        if not room:
                            break
                    else:
                        view = piece if type(piece) is memoryview else memoryview(piece)
                        parts.append(view[:room])
                        chunks[0] = view[room:]
                        room = 0
                        break
                size = EGRESS_SDU_SIZE - room
                parts[header_at] = _pack_header(stamp, channel._egress_word, size)
            channel._send_len -= size
            sent.append((channel, size))
            count += 1
            total += size + SDU_HEADER_SIZE
            if chunks:
                ready.append(channel)
            else:
                channel._scheduled = False
            if channel._send_waiting and not channel._send_woken and channel._send_len < SEND_BUFFER_RESUME:
                channel._send_woken = True
                channel._send_lot.unpark_all()
        return parts, sent, total

    @staticmethod
    def _count_sent(sent: list[tuple[MuxChannel, int]]) -> None:
        for channel, size in sent:
            channel.bytes_out += size + SDU_HEADER_SIZE
            channel.sdus_out += 1
