"""Publishing messages to the local DMQ node, the Mithril signer's way.

``DmqPublisherClientPallas`` (``internal/mithril-dmq/src/publisher/client/pallas.rs``) opens a
new connection for every message: handshake, ``[0, message]``, wait for the verdict (no
timeout, no retry), ``[3]`` (docs/protocol/local-protocols.md 7.4). This publisher then closes the
connection; Mithril's leaves it open, and the node releases it after ``LocalIdleTimeout``. The verdict is returned as a value: the
accepted marker or the typed reject reason the node sent. Failing to obtain a verdict
(no node, refused handshake, lost connection) raises a :class:`~.errors.DmqClientError`.
"""

from __future__ import annotations

import os

from miniprotocols.local_msg_submission import (
    ACCEPTED,
    Accepted,
    RejectAlreadyReceived,
    RejectExpired,
    RejectInvalid,
    RejectOther,
    RejectText,
    SubmitResult,
)

from dmq.message import DmqMessage

from .connection import EXCHANGE_ERRORS, open_local_connection
from dmq.signer import MessageBuilder

__all__ = ["Publisher", "describe_result", "is_accepted"]


def is_accepted(result: SubmitResult) -> bool:
    return isinstance(result, Accepted)


def describe_result(result: SubmitResult) -> str:
    """One line for a verdict: ``accepted`` or ``rejected: <reason>`` (texts as the node sent them)."""
    if isinstance(result, Accepted):
        return "accepted"
    if isinstance(result, RejectInvalid):
        return f"rejected: invalid: {result.text}"
    if isinstance(result, RejectAlreadyReceived):
        return "rejected: already received"
    if isinstance(result, RejectExpired):
        return "rejected: expired"
    if isinstance(result, RejectOther):
        return f"rejected: other: {result.text}"
    if isinstance(result, RejectText):
        return f"rejected: {result.text}"
    raise TypeError(f"not a submission verdict: {result!r}")


class Publisher:
    """Submits messages to the node on ``socket_path``, one connection per message."""

    def __init__(self, socket_path: str | os.PathLike[str], network_magic: int,
                 builder: MessageBuilder | None = None) -> None:
        self.socket_path = os.fspath(socket_path)
        self.network_magic = network_magic
        self.builder = builder

    def build(self, body: bytes) -> DmqMessage:
        """The signed message :meth:`publish` would submit for ``body`` now."""
        if self.builder is None:
            raise ValueError("this publisher has no signing credentials: give it a MessageBuilder")
        return self.builder.build(body)

    async def publish(self, body: bytes) -> SubmitResult:
        """Sign ``body`` into a message and submit it; return the node's verdict."""
        return await self.submit(self.build(body).raw)

    async def submit(self, raw_message: bytes) -> SubmitResult:
        """Submit an already signed message (its exact bytes); return the node's verdict."""
        async with open_local_connection(self.socket_path, self.network_magic) as connection:
            try:
                result = await connection.submission.submit(raw_message)
            except EXCHANGE_ERRORS as exc:
                raise connection.lost(exc) from None
            try:
                await connection.submission.done()
            except EXCHANGE_ERRORS:
                connection.abort()  # the verdict is in; a failed goodbye does not change it
        return ACCEPTED if isinstance(result, Accepted) else result
