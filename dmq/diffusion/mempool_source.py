"""The mempool as every serving sig-submission peer serves it.

Only validated messages ever enter the mempool, so announcing from it already keeps the
node from relaying anything a reference peer would punish. What can still change is
time: a message may expire between its announcement and the peer's request for it.
Expiry is therefore judged at each read, against the node's wall clock: an expired
message is never announced, and a body requested after its expiry is left out of the
reply (docs/protocol/node-to-node.md 9.3), which the reference peer accepts silently.
"""

from __future__ import annotations

from collections.abc import Callable, Container

from dmq.mempool import Mempool
from dmq.trace import TraceEvent

from .events import MessageOffered, MessageSent

__all__ = ["MempoolSigSource", "RecordedSigSource"]


class MempoolSigSource:
    """:class:`~miniprotocols.sig_submission.SigSource` over the node's mempool (one per node).

    Positions are mempool indices, so each serving peer's window is its own cursor and
    a new peer is offered everything unexpired from the start (docs/protocol/node-to-node.md 9.7).
    """

    #: Every message held was decoded strictly when accepted (or reloaded): each is one CBOR item.
    checked_items = True

    def __init__(self, mempool: Mempool) -> None:
        self.mempool = mempool
        # The mempool's own methods, not methods that call them: every serving peer reads
        # through these several times per message.
        #: ``(index, id, size)`` of up to ``limit`` unexpired messages after ``position``.
        self.ids_after: Callable[[int, int], list[tuple[int, bytes, int]]] = mempool.ids_after
        #: ``callback(published)`` at the next publish, with the newly visible ``(index, id, size)``.
        self.call_on_publish: Callable[[Callable[[list[tuple[int, bytes, int]]], None]], None] = \
            mempool.call_on_publish
        #: The mempool index of a held message, None if it is not held (asked for every id a peer
        #: announces on a duplex connection).
        self.index_of: Callable[[bytes], int | None] = mempool.index_of

    async def wait_for_ids_after(self, position: int) -> None:
        await self.mempool.wait_after(position)

    def lookup(self, message_id: bytes) -> bytes | None:
        """The exact received bytes of a requested message; None once it expired or was purged."""
        entry = self.mempool.lookup_unexpired(message_id)
        return None if entry is None else entry.raw


class RecordedSigSource:
    """One serving peer's view of the source that tells the traffic recorder what it offered and sent.

    The capacity model needs bytes per message per peer (the real redundancy factor), so
    every id announced and every message served is an event. They go straight to the
    recorder, not through the tracer: a log line per message per peer would cost more than
    serving it. Ids the peer is known to hold (``known``: the serving peer leaves them out,
    docs/protocol/node-to-node.md 9.8) are not offered, and not recorded as such.
    """

    checked_items = MempoolSigSource.checked_items

    def __init__(self, source: MempoolSigSource, peer: str, record: Callable[[TraceEvent], None],
                 now: Callable[[], float], known: Container[bytes] = ()) -> None:
        self._source, self._peer, self._record, self._now = source, peer, record, now
        self._known = known

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        offered = self._source.ids_after(position, limit)
        at = self._now()
        known = self._known
        for _, message_id, size in offered:
            if message_id not in known:
                self._record(MessageOffered(at, message_id, size, self._peer))
        return offered

    async def wait_for_ids_after(self, position: int) -> None:
        await self._source.wait_for_ids_after(position)

    def call_on_publish(self, callback: Callable[[], None]) -> None:
        # What is offered is recorded as it is read (``ids_after``): the serving peer is not
        # handed the published entries, and reads them through this source.
        self._source.call_on_publish(lambda published: callback())

    def index_of(self, message_id: bytes) -> int | None:
        return self._source.index_of(message_id)

    def lookup(self, message_id: bytes) -> bytes | None:
        raw = self._source.lookup(message_id)
        if raw is not None:
            self._record(MessageSent(self._now(), message_id, len(raw), self._peer))
        return raw
