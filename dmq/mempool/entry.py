"""One held message, reduced to what the mempool's readers need.

Readers only ever forward the stored bytes (notification replies, sig-submission replies)
or announce ``(id, size)``; nobody needs the decoded fields again once validation is done.
Holding the decoded ``DmqMessage`` would keep the body, the signed payload and the KES
signature a second time (each a separate ``bytes`` copy), roughly doubling memory. So an
entry keeps the raw bytes and three small fields, and decodes on demand.
"""

from __future__ import annotations

from typing import Callable

from dmq.message import DmqMessage

__all__ = ["StoredMessage", "default_decoder"]


def default_decoder() -> Callable[[bytes], DmqMessage]:
    """The project's strict decoder, imported late so the mempool does not depend on it at import."""
    from dmq.codec import decode_message

    return decode_message


class StoredMessage:
    """A message held in the mempool at ``index``.

    It exposes the same ``raw``, ``message_id``, ``expires_at`` and ``size`` as
    :class:`~dmq.message.DmqMessage`, so code that only forwards or announces accepts either.
    Entries are ordered by ``(expires_at, index)``: the expiry heap holds the entries
    themselves instead of one extra tuple per message.
    """

    __slots__ = ("index", "message_id", "expires_at", "raw")

    def __init__(self, index: int, message_id: bytes, expires_at: int, raw: bytes) -> None:
        self.index = index
        self.message_id = message_id
        self.expires_at = expires_at
        self.raw = raw

    @property
    def size(self) -> int:
        """Announced size and byte accounting: ``len(raw)`` (docs/protocol/message.md 5.4)."""
        return len(self.raw)

    def decode(self, decoder: Callable[[bytes], DmqMessage] | None = None) -> DmqMessage:
        """Rebuild the full message from the stored bytes."""
        return (decoder or default_decoder())(self.raw)

    def __lt__(self, other: StoredMessage) -> bool:
        if self.expires_at != other.expires_at:
            return self.expires_at < other.expires_at
        return self.index < other.index

    def __repr__(self) -> str:
        return (
            f"StoredMessage(index={self.index}, id={self.message_id.hex()[:16]}…, "
            f"expires_at={self.expires_at}, size={len(self.raw)})"
        )
