"""The serving side's view of the id window, without I/O (both versions).

The serving peer remembers, in announcement order, every id it announced and the peer has
not acknowledged yet, and the mempool position after the last one. Every request is
checked against that FIFO exactly as the reference does (``DMQ/SigSubmissionV2/Outbound.hs``,
``TxSubmission/Outbound.hs``), in the same order, so a peer that breaks the rules gets the
same verdict from this node as from a reference node.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence

from miniprotocols.sig_submission.errors import (
    AckedTooManyIds,
    RequestBlocking,
    RequestedNothing,
    RequestedTooManyIds,
    RequestedUnavailable,
    RequestNonBlocking,
)
from miniprotocols.sig_submission.limits import MAX_UNACKNOWLEDGED_IDS

__all__ = ["ServeWindow"]


class ServeWindow:
    """Unacknowledged ids announced to one peer, and where the announcements stand.

    ``position`` is the mempool index of the last id announced (-1 before any): the next
    announcement continues after it, so each message is announced once, in mempool order.
    """

    __slots__ = ("version", "window", "position", "_unacked", "_count")

    def __init__(self, version: int, *, window: int = MAX_UNACKNOWLEDGED_IDS, position: int = -1) -> None:
        self.version = version
        self.window = window
        self.position = position
        self._unacked: deque[bytes] = deque()
        #: How many times each unacknowledged id is in ``_unacked`` (a plain dict: a ``Counter``'s
        #: ``__missing__`` is a Python call per new id).
        self._count: dict[bytes, int] = {}

    @property
    def unacknowledged(self) -> tuple[bytes, ...]:
        return tuple(self._unacked)

    def on_request_ids(self, blocking: bool, ack: int, req: int) -> None:
        """Check a request for ids and drop the ``ack`` oldest ids; raise the reference's error if it breaks a rule."""
        unacked = len(self._unacked)
        if ack > unacked:
            raise AckedTooManyIds(self.version, ack, unacked)
        if unacked - ack + req > self.window:
            raise RequestedTooManyIds(self.version, req, unacked, ack, self.window)
        remaining = unacked - ack
        if blocking:
            if req == 0:
                raise RequestedNothing(self.version, blocking=True)
            if remaining:
                raise RequestBlocking(self.version, remaining)
        else:
            if req == 0 and ack == 0:
                raise RequestedNothing(self.version, blocking=False)
            if not remaining:
                raise RequestNonBlocking(self.version)
        popleft = self._unacked.popleft
        count = self._count
        for _ in range(ack):
            message_id = popleft()
            left = count[message_id] - 1
            if left:
                count[message_id] = left
            else:
                del count[message_id]

    def announce(self, entries: Sequence[tuple[int, bytes, int]]) -> tuple[tuple[bytes, int], ...]:
        """Add ``(index, id, size)`` entries from the source; return the ``(id, size)`` pairs to send."""
        unacked = self._unacked
        count = self._count
        position = self.position
        for index, message_id, _ in entries:
            if index <= position:
                raise ValueError(f"source returned index {index}, not after position {position}")
            position = self.position = index
            unacked.append(message_id)
            count[message_id] = count.get(message_id, 0) + 1
        return tuple([(message_id, size) for _, message_id, size in entries])

    def skip_to(self, index: int) -> None:
        """Move the position past entries up to ``index`` without announcing them (ids the peer holds).

        To the peer they look like messages that expired before they could be announced: the
        window's rules and the order of what is announced are unchanged.
        """
        if index > self.position:
            self.position = index

    def on_request_bodies(self, ids: Iterable[bytes]) -> None:
        """Raise the reference's error unless every requested id is unacknowledged."""
        missing = [i for i in ids if i not in self._count]
        if missing:
            raise RequestedUnavailable(self.version, missing)
