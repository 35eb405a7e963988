"""A reader's position in the mempool.

Local notification clients (docs/protocol/local-protocols.md 8.2) each own a cursor that starts before the first held
message, so a new client first receives everything unexpired, then newer messages in mempool
order. The cursor moves to the **last** message delivered, so nothing is delivered twice on
one connection, and expired messages are never delivered.
"""

from __future__ import annotations

from typing import Protocol

import trio

from .entry import StoredMessage

__all__ = ["MempoolCursor", "CursorSource"]


class CursorSource(Protocol):
    """What a cursor reads: the two calls of the mempool it needs, and nothing else.

    Declared here so that the cursor does not depend on the mempool that creates it.
    """

    def messages_after(self, position: int, limit: int) -> list[StoredMessage]: ...

    async def wait_after(self, position: int) -> None: ...


class MempoolCursor:
    """Reads the mempool after ``position`` (the index of the last message delivered; -1 = none)."""

    __slots__ = ("_mempool", "position")

    def __init__(self, mempool: CursorSource, position: int) -> None:
        self._mempool = mempool
        self.position = position

    def take(self, limit: int) -> tuple[list[StoredMessage], bool]:
        """Deliver at once up to ``limit`` messages; ``has_more`` is true iff more remain now."""
        if limit < 1:
            raise ValueError(f"a cursor reads at least one message per batch, got limit={limit}")
        batch = self._mempool.messages_after(self.position, limit + 1)
        has_more = len(batch) > limit
        if has_more:
            del batch[limit:]
        if batch:
            self.position = batch[-1].index
        return batch, has_more

    async def next_batch(self, blocking: bool, limit: int) -> tuple[list[StoredMessage], bool]:
        """The next batch: at once (maybe empty), or, if ``blocking``, once at least one exists.

        A blocking wait has no timeout of its own: wrap it in a cancel scope. Cancelled, the
        cursor has not moved.
        """
        if limit < 1:
            raise ValueError(f"a cursor reads at least one message per batch, got limit={limit}")
        if not blocking:
            await trio.lowlevel.checkpoint()
            return self.take(limit)
        while True:
            await self._mempool.wait_after(self.position)
            batch, has_more = self.take(limit)
            if batch:
                return batch, has_more

    def __repr__(self) -> str:
        return f"MempoolCursor(position={self.position})"
