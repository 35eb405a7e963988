"""The pulling side's bookkeeping of one peer's announcements, without I/O (both versions).

The pulling peer keeps every id the peer announced, in announcement order, until it may
acknowledge it: when its message has been handed to the node, when the peer omitted it,
or at once when the node did not want it. Acknowledgements therefore go out strictly in
announcement order, as the protocol requires, and bodies are requested in that order too,
so the pipelined replies (which the serving peer answers in order) complete the FIFO from its
head. The scheduling bounds are the reference policy's: at most 33 ids per request, the
132-id window (counting ids asked for but not yet received), and at most four body
batches or 92 400 announced bytes in flight. Each reply is checked with the reference's
errors: more ids than requested, a body nobody asked for, a size off by more than 32.
"""

from __future__ import annotations

import enum
from collections import deque
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from miniprotocols.sig_submission.errors import BodyNotRequested, IdsNotRequested, SizeError
from miniprotocols.sig_submission.limits import (
    BYTES_IN_FLIGHT_PER_PEER,
    MAX_IDS_PER_REQUEST,
    MAX_UNACKNOWLEDGED_IDS,
)
from .policy import MAX_BATCHES_IN_FLIGHT, SIZE_TOLERANCE
from miniprotocols.sig_submission.sig_message import checked_id

__all__ = ["PullWindow", "BodyBatch", "BodiesOutcome"]


class _Status(enum.Enum):
    WANTED = "wanted"  # claimed for this peer, body not requested yet
    REQUESTED = "requested"  # body requested, reply outstanding
    RECEIVED = "received"  # body here, waiting for the ids before it
    SKIPPED = "skipped"  # not wanted, or omitted by the peer: acknowledge without a body


class _Entry:
    __slots__ = ("message_id", "size", "status", "raw")

    def __init__(self, message_id: bytes, size: int, status: _Status) -> None:
        self.message_id = message_id
        self.size = size
        self.status = status
        self.raw: bytes | None = None


#: The FIFO entry of every id the node did not want: nothing is kept of it but its place in the
#: order (one shared object: most announcements are of ids the node holds or fetches elsewhere).
_SKIPPED = _Entry(b"", 0, _Status.SKIPPED)


@dataclass(frozen=True, eq=False)
class BodyBatch:
    """One body request: the ids asked for, in order, and the bytes they were announced at."""

    ids: tuple[bytes, ...]
    announced_bytes: int
    _entries: dict[bytes, _Entry] = field(repr=False)


@dataclass(frozen=True)
class BodiesOutcome:
    """What one bodies reply settled.

    ``ready`` are raw messages now at the head of the FIFO, in announcement order, with
    their ids in ``ready_ids``: hand them to the node, then release those ids.
    ``omitted`` are ids the peer left out: release them at once.
    """

    ready: tuple[bytes, ...]
    ready_ids: tuple[bytes, ...]
    omitted: tuple[bytes, ...]


class PullWindow:
    """One pulling peer's view of what the serving peer announced, requested and delivered."""

    def __init__(self, version: int, *,
                 max_ids_per_request: int = MAX_IDS_PER_REQUEST,
                 window: int = MAX_UNACKNOWLEDGED_IDS,
                 max_bytes_in_flight: int = BYTES_IN_FLIGHT_PER_PEER,
                 max_batches_in_flight: int = MAX_BATCHES_IN_FLIGHT,
                 size_tolerance: int = SIZE_TOLERANCE) -> None:
        if not 1 <= max_ids_per_request <= window:
            raise ValueError(f"ids per request must be within 1..{window}, got {max_ids_per_request}")
        self.version = version
        self.max_ids_per_request = max_ids_per_request
        self.window = window
        self.max_bytes_in_flight = max_bytes_in_flight
        self.max_batches_in_flight = max_batches_in_flight
        self.size_tolerance = size_tolerance
        self._unacked: deque[_Entry] = deque()
        self._wanted: deque[_Entry] = deque()
        self._pending: dict[bytes, _Entry] = {}
        #: Ids acknowledged locally, to be sent with the next request for ids.
        self.to_ack = 0
        #: Ids at the head of the FIFO acknowledged to the peer before they settled here: their
        #: bodies were requested ahead of the acknowledgement (:meth:`blocking_request_ahead`).
        self._acked_ahead = 0
        #: Ids asked for in requests whose replies have not been collected yet.
        self.ids_in_flight = 0
        self.bytes_in_flight = 0
        self.batches_in_flight = 0

    # -- views ---------------------------------------------------------------------
    @property
    def unacknowledged(self) -> int:
        """Announced ids not yet acknowledged locally."""
        return len(self._unacked)

    def claimed(self) -> list[bytes]:
        """Ids this peer holds a claim on (wanted, requested or received and not yet handed over)."""
        return list(self._pending)

    # -- requests for ids ----------------------------------------------------------
    def blocking_request(self) -> tuple[int, int]:
        """``(ack, req)`` for a blocking request; only valid with nothing unacknowledged or outstanding."""
        if self._unacked or self.ids_in_flight:
            raise RuntimeError("a blocking request needs every announced id acknowledged and no ids outstanding")
        return self._take_request(min(self.max_ids_per_request, self.window))

    def blocking_request_ahead(self) -> tuple[int, int] | None:
        """``(ack, req)`` for a blocking request pipelined behind the body requests, or None.

        Possible once every wanted body has been requested and no request for ids is
        outstanding: the request acknowledges every announced id, those whose bodies are on
        the way included. The serving peer answers requests in order, so it has served those
        bodies before it reads the acknowledgement; what the peer announces next then comes in
        this request's reply, with no round of its own for the acknowledgement. The ids stay in
        the FIFO until their bodies arrive (the node is handed them in announcement order as
        before); they are not acknowledged again.
        """
        if self._wanted or self.ids_in_flight:
            return None
        ahead = len(self._unacked)
        ack = self.to_ack + ahead - self._acked_ahead
        self._acked_ahead = ahead
        self.to_ack = 0
        req = min(self.max_ids_per_request, self.window)
        self.ids_in_flight += req
        return ack, req

    def non_blocking_request(self) -> tuple[int, int] | None:
        """``(ack, req)`` for a pipelined non-blocking request, or None if it would be pointless or invalid.

        Invalid when no id is left unacknowledged (the serving peer would answer with
        ``ProtocolErrorRequestNonBlocking``); pointless when the window has no room.
        """
        unacked = len(self._unacked) - self._acked_ahead
        room = self.window - unacked - self.ids_in_flight
        if unacked <= 0 or room <= 0:
            return None
        return self._take_request(min(self.max_ids_per_request, room))

    def _take_request(self, req: int) -> tuple[int, int]:
        ack, self.to_ack = self.to_ack, 0
        self.ids_in_flight += req
        return ack, req

    def on_ids_reply(self, req: int, announced: Sequence[tuple[bytes, int]],
                     wanted: Callable[[Sequence[tuple[bytes, int]]], Collection[bytes]]) -> None:
        """Take in the reply to a request for ``req`` ids; ``wanted`` is the node's choice."""
        self.ids_in_flight -= req
        if len(announced) > req:
            raise IdsNotRequested(self.version, len(announced), req)
        if not announced:
            return
        granted = wanted(announced)
        unacked = self._unacked
        if not granted:
            unacked.extend([_SKIPPED] * len(announced))
        else:
            granted = set(granted)
            pending = self._pending
            for message_id, size in announced:
                if message_id in granted and message_id not in pending:
                    entry = _Entry(message_id, size, _Status.WANTED)
                    pending[message_id] = entry
                    self._wanted.append(entry)
                    unacked.append(entry)
                else:
                    unacked.append(_SKIPPED)
        self._advance()

    def on_no_ids(self, req: int) -> None:
        """The serving peer had nothing for a blocking request (V2 ``MsgReplyNoSigIds``)."""
        self.ids_in_flight -= req

    # -- bodies --------------------------------------------------------------------
    def can_request_bodies(self) -> bool:
        if not self._wanted or self.batches_in_flight >= self.max_batches_in_flight:
            return False
        return self.bytes_in_flight == 0 or self.bytes_in_flight + self._wanted[0].size <= self.max_bytes_in_flight

    def next_batch(self) -> BodyBatch:
        """Take the next wanted ids, in announcement order, within the per-peer limits."""
        if not self.can_request_bodies():
            raise RuntimeError("no body can be requested now")
        entries: dict[bytes, _Entry] = {}
        total = 0
        wanted = self._wanted
        while wanted and len(entries) < self.max_ids_per_request:
            size = wanted[0].size
            if entries or self.bytes_in_flight:
                if self.bytes_in_flight + total + size > self.max_bytes_in_flight:
                    break
            entry = wanted.popleft()
            entry.status = _Status.REQUESTED
            entries[entry.message_id] = entry
            total += size
        self.bytes_in_flight += total
        self.batches_in_flight += 1
        return BodyBatch(tuple(entries), total, entries)

    def on_bodies_reply(self, batch: BodyBatch, messages: Sequence[bytes]) -> BodiesOutcome:
        """Match a bodies reply to its request, check it, and return what it settled."""
        received: dict[bytes, bytes] = {}
        unrequested: list[bytes] = []
        for raw in messages:
            message_id = checked_id(raw)
            if message_id not in batch._entries:
                unrequested.append(message_id)
            elif message_id not in received:
                received[message_id] = raw
        if unrequested:
            raise BodyNotRequested(self.version, unrequested)
        wrong = [(i, len(raw), batch._entries[i].size) for i, raw in received.items()
                 if abs(len(raw) - batch._entries[i].size) > self.size_tolerance]
        if wrong:
            raise SizeError(self.version, wrong, self.size_tolerance)
        self.bytes_in_flight -= batch.announced_bytes
        self.batches_in_flight -= 1
        omitted = []
        for message_id, entry in batch._entries.items():
            raw = received.get(message_id)
            if raw is None:
                entry.status = _Status.SKIPPED
                del self._pending[message_id]
                omitted.append(message_id)
            else:
                entry.status = _Status.RECEIVED
                entry.raw = raw
        ready = self._advance()
        return BodiesOutcome(tuple(e.raw for e in ready), tuple(e.message_id for e in ready), tuple(omitted))

    def _advance(self) -> list[_Entry]:
        """Acknowledge the settled head of the FIFO; return the received entries among it."""
        unacked = self._unacked
        ready: list[_Entry] = []
        acked = 0
        while unacked:
            status = unacked[0].status
            if status is _Status.SKIPPED:
                unacked.popleft()
            elif status is _Status.RECEIVED:
                entry = unacked.popleft()
                ready.append(entry)
                del self._pending[entry.message_id]
            else:
                break
            acked += 1
        ahead = self._acked_ahead
        if ahead:  # acknowledged already, with the blocking request ahead of them
            settled = min(acked, ahead)
            self._acked_ahead = ahead - settled
            acked -= settled
        self.to_ack += acked
        return ready
