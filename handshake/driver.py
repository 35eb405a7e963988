"""Running a handshake over a bearer, with trio.

The handshake runs on mini-protocol 0 before the mux starts, straight on the bearer:
the client sends each message as one SDU with M = 0, the server answers with M = 1, and
an SDU that has started must complete within the handshake's 10 s SDU timeout (the mux
raises it to 30 s once it takes over).
This module only moves bytes between the bearer and the sans-IO peers of
:mod:`handshake.protocol`, and enforces the link's per-state limits (bytes per message,
seconds per state).

Whatever happens other than an agreed version (a refusal either way, a query, a
protocol or bearer error, a time limit), the bearer is closed before the outcome is
raised: the connection is of no further use, and the reference closes it too.
"""

from __future__ import annotations

import math
import os
from collections.abc import Container

import trio

from ouroboros_mux.bearer import HANDSHAKE_SDU_TIMEOUT, Bearer, connect_unix
from ouroboros_mux.channel import CborFramer, MalformedMessage, MessageTooLarge
from ouroboros_mux.errors import MuxError
from ouroboros_mux.sdu import SDU

from .errors import (HandshakeBearerError, HandshakeCodecError, HandshakeQueryResult, HandshakeSizeLimitExceeded,
                     HandshakeTimeLimitExceeded, UnexpectedHandshakeMessage)
from .links import HandshakeLink, VersionTable
from .protocol import HandshakeClient, HandshakeResult, HandshakeServer, ServerReply
from .states import State

__all__ = ["HANDSHAKE_PROTOCOL_NUM", "ServerAnswers", "run_client", "run_server"]

HANDSHAKE_PROTOCOL_NUM = 0


async def _receive_message(bearer: Bearer, link: HandshakeLink, state: State,
                           known: Container[bytes] = ()) -> bytes:
    """The raw bytes of the next handshake message, within the limits of ``state``.

    A message normally fills exactly one SDU. Like the reference, a message continued in
    further SDUs is still assembled (within the byte limit), and bytes after the message
    in its last SDU are ignored. The SDU's M bit is not checked: in a simultaneous open
    both sides send with M = 0.
    """
    framer = CborFramer()
    size_limit = link.size_limits[state]
    # Usually the message is already here (a client sends its proposal as it connects):
    # then it is taken without a timeout scope.
    try:
        sdu = bearer.read_sdu_nowait()
    except MuxError as exc:
        raise HandshakeBearerError(exc) from exc
    if sdu is not None:
        if sdu.protocol_num == HANDSHAKE_PROTOCOL_NUM and sdu.payload in known:
            return sdu.payload
        message = _take(framer, sdu, state, size_limit)
        if message is not None:
            return message
    time_limit = link.time_limits[state]
    with trio.move_on_after(math.inf if time_limit is None else time_limit):
        while True:
            try:
                sdu = await bearer.read_sdu()
            except MuxError as exc:
                raise HandshakeBearerError(exc) from exc
            # A whole message seen before (``known``) needs no framing.
            if not framer.buffered and sdu.protocol_num == HANDSHAKE_PROTOCOL_NUM and sdu.payload in known:
                return sdu.payload
            message = _take(framer, sdu, state, size_limit)
            if message is not None:
                return message
    raise HandshakeTimeLimitExceeded(state.value, time_limit)


def _take(framer: CborFramer, sdu: SDU, state: State, size_limit: int) -> bytes | None:
    """Feed one SDU to the message framer; the whole message once it is complete."""
    if sdu.protocol_num != HANDSHAKE_PROTOCOL_NUM:
        raise UnexpectedHandshakeMessage(
            f"SDU for mini-protocol {sdu.protocol_num} in {state.value}, before the handshake finished")
    framer.feed(sdu.payload)
    try:
        return framer.next_message(size_limit)
    except MessageTooLarge as exc:
        raise HandshakeSizeLimitExceeded(state.value, size_limit, exc.buffered) from None
    except MalformedMessage as exc:
        raise HandshakeCodecError(f"malformed handshake message in {state.value}: {exc}") from None


async def _send(bearer: Bearer, data: bytes, *, from_responder: bool) -> None:
    try:
        await bearer.write_sdu(SDU(HANDSHAKE_PROTOCOL_NUM, from_responder, data))
    except MuxError as exc:
        raise HandshakeBearerError(exc) from exc


async def _close(bearer: Bearer) -> None:
    with trio.CancelScope(shield=True):
        try:
            await bearer.aclose()
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
            pass


async def _linger_for_close(bearer: Bearer, delay: float) -> None:
    """Give the peer ``delay`` seconds to read a query reply and close first."""
    with trio.move_on_after(delay):
        try:
            while True:
                await bearer.read_sdu()
        except MuxError:
            return


async def run_client(bearer: Bearer, table: VersionTable, link: HandshakeLink) -> HandshakeResult:
    """Propose ``table`` and return the agreed version.

    Raises :class:`~handshake.errors.HandshakeRefused` (``by_peer`` True when the server
    refused), :class:`~handshake.errors.HandshakeQueryResult` when the server answered a
    query, :class:`~handshake.errors.HandshakeProtocolError` and its subclasses
    (``NotRecognisedVersion``, ``InvalidServerSelection``, codec errors, limits) or
    :class:`~handshake.errors.HandshakeBearerError`.
    """
    client = HandshakeClient(link, table)
    bearer.sdu_timeout = HANDSHAKE_SDU_TIMEOUT
    try:
        await _send(bearer, client.propose(), from_responder=False)
        return client.receive(await _receive_message(bearer, link, client.state))
    except BaseException:
        await _close(bearer)
        raise


async def connect_and_handshake(path: str | os.PathLike[str], table: VersionTable,
                                link: HandshakeLink) -> tuple[Bearer, HandshakeResult]:
    """Connect to the Unix socket at ``path`` and propose ``table``: every client's first step.

    Returns the open bearer (ready for a mux) and the agreed version. Errors are left as they
    are, for each client to word at its boundary:
    :class:`~ouroboros_mux.errors.ConnectFailed` when nothing listens, and whatever
    :func:`run_client` raises (it closes the bearer when it fails).
    """
    bearer = await connect_unix(path)
    return bearer, await run_client(bearer, table, link)


class ServerAnswers:
    """A server's replies to proposals it has seen, keyed by the proposal's exact bytes.

    The reply is a pure function of the table, the link and those bytes, and a local
    socket sees the same proposal from every Mithril signer (one handshake per message):
    remembering the accepted ones spares decoding and encoding the version tables on each
    connection. Refusals and queries are never remembered (they are rare, and a query's
    outcome carries the client's table), and at most ``capacity`` proposals are.
    """

    def __init__(self, table: VersionTable, link: HandshakeLink, capacity: int = 64) -> None:
        self.table = table
        self.link = link
        self.capacity = capacity
        self._known: dict[bytes, ServerReply] = {}

    def __contains__(self, proposal: object) -> bool:
        try:
            return proposal in self._known
        except TypeError:  # an unhashable buffer is never one of the remembered bytes
            return False

    def answer(self, proposal: bytes) -> ServerReply:
        """The reply to ``proposal`` (codec and protocol errors are raised, as by the server)."""
        reply = self._known.get(proposal)
        if reply is None:
            reply = HandshakeServer(self.link, self.table).receive(proposal)
            if isinstance(reply.outcome, HandshakeResult) and len(self._known) < self.capacity:
                self._known[bytes(proposal)] = reply
        return reply


async def run_server(bearer: Bearer, table: VersionTable, link: HandshakeLink, *,
                     answers: ServerAnswers | None = None) -> HandshakeResult:
    """Answer one proposal with ``table`` and return the agreed version.

    When the agreed data asks for a query, the server sends its whole table, waits up to
    ``link.query_shutdown_delay`` seconds for the client to close, closes, and raises
    :class:`~handshake.errors.HandshakeQueryResult` with the client's proposal. A
    refusal is sent and then raised as :class:`~handshake.errors.HandshakeRefused` with
    ``by_peer`` False. Protocol, limit and bearer errors are raised as in
    :func:`run_client`. ``answers`` (for this table and link) remembers accepted replies
    across connections.
    """
    if answers is None:
        answers = ServerAnswers(table, link, capacity=0)
    elif answers.table is not table or answers.link is not link:
        raise ValueError("the remembered answers belong to another version table or link")
    bearer.sdu_timeout = HANDSHAKE_SDU_TIMEOUT
    try:
        reply = answers.answer(await _receive_message(bearer, link, State.PROPOSE, answers))
        await _send(bearer, reply.data, from_responder=True)
        if isinstance(reply.outcome, HandshakeQueryResult):
            await _linger_for_close(bearer, link.query_shutdown_delay)
        return reply.result()
    except BaseException:
        await _close(bearer)
        raise
