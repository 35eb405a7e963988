"""The mempool as every outbound sig-submission peer serves it.

Only validated messages ever enter the mempool, so announcing from it already keeps the
node from relaying anything a reference peer would punish. What can still change is
time: a message may expire between its announcement and the peer's request for it.
Expiry is therefore judged at each read, against the node's wall clock: an expired
message is never announced, and a body requested after its expiry is left out of the
reply (WIRE.md 9.3), which the reference peer accepts silently.
"""

from __future__ import annotations

from dmq.mempool import Mempool

__all__ = ["MempoolSigSource"]


class MempoolSigSource:
    """:class:`~miniprotocols.sig_submission.SigSource` over the node's mempool (one per node).

    Positions are mempool indices, so each outbound peer's window is its own cursor and
    a new peer is offered everything unexpired from the start (WIRE.md 9.7).
    """

    def __init__(self, mempool: Mempool) -> None:
        self.mempool = mempool

    def ids_after(self, position: int, limit: int) -> list[tuple[int, bytes, int]]:
        """``(index, id, size)`` of up to ``limit`` unexpired messages after ``position``."""
        return self.mempool.ids_after(position, limit)

    async def wait_for_ids_after(self, position: int) -> None:
        await self.mempool.wait_after(position)

    def lookup(self, message_id: bytes) -> bytes | None:
        """The exact received bytes of a requested message; None once it expired or was purged."""
        entry = self.mempool.lookup_unexpired(message_id)
        return None if entry is None else entry.raw
