"""Running a handshake over a bearer, with trio, on the protocol engine's driver.

The handshake runs on mini-protocol 0 before the mux starts, straight on the bearer
(:class:`~handshake.channel.HandshakeChannel`); an SDU that has started must complete
within the handshake's 10 s SDU timeout (the mux raises it to 30 s once it takes over).
The engine's :class:`~protocol_engine.Driver` runs the handshake's spec
(:mod:`handshake.spec`) over it, exactly as it runs every mini-protocol: it checks each
move against the state table and enforces the link's per-state limits (bytes per
message, seconds per state). What the engine raises is reworded here as the handshake's
own errors (:mod:`handshake.errors`), and what to answer is decided by the functions the
sans-IO peers use (:mod:`handshake.protocol`).

Whatever happens other than an agreed version (a refusal either way, a query, a
protocol or bearer error, a time limit), the bearer is closed before the outcome is
raised: the connection is of no further use, and the reference closes it too.
"""

from __future__ import annotations

import dataclasses
import os

import trio

from ouroboros_mux.bearer import HANDSHAKE_SDU_TIMEOUT, Bearer, connect_unix
from ouroboros_mux.errors import MuxError
from protocol_engine import (DecoderFailure, Driver, ExceededSizeLimit, ExceededTimeLimit, ProtocolError,
                             ProtocolSpec, ProtocolViolation, Role)

from .channel import HANDSHAKE_PROTOCOL_NUM, ForeignSDU, HandshakeChannel
from .codec import HandshakeCodec
from .errors import (HandshakeCodecError, HandshakeError, HandshakeQueryResult, HandshakeSizeLimitExceeded, HandshakeTimeLimitExceeded,
                     UnexpectedHandshakeMessage)
from .links import HandshakeLink, VersionTable
from .messages import HandshakeMessage, MsgProposeVersions, raw_versions
from .protocol import HandshakeResult, ServerReply, client_outcome, decide_reply, unexpected_message
from .spec import protocol_spec
from .states import State

__all__ = ["HANDSHAKE_PROTOCOL_NUM", "ServerAnswers", "run_client", "run_server"]


def _reworded(exc: ProtocolError | ForeignSDU, driver: Driver, *, sending: bool) -> HandshakeError:
    """What the engine (or the channel under it) raised, as the handshake's own error."""
    if isinstance(exc, ForeignSDU):
        return UnexpectedHandshakeMessage(f"SDU for mini-protocol {exc.protocol_num} in {driver.state.value}, "
                                          "before the handshake finished")
    state = exc.state
    if isinstance(exc, ExceededTimeLimit):
        return HandshakeTimeLimitExceeded(state.value, exc.limit)
    if isinstance(exc, ExceededSizeLimit):
        return HandshakeSizeLimitExceeded(state.value, exc.limit, exc.buffered)
    if isinstance(exc, DecoderFailure):
        # Only bytes that are not CBOR get here: the handshake's codec raises its own error.
        return HandshakeCodecError(f"malformed handshake message in {state.value}: "
                                   f"{exc.reason.removeprefix('not CBOR: ')}")
    assert isinstance(exc, ProtocolViolation), exc
    return unexpected_message(driver.spec, driver.role, state, exc.message, sending=sending)


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
    link.check_table(table)
    driver = Driver(HandshakeChannel(bearer, from_responder=False), protocol_spec(link), Role.CLIENT)
    bearer.sdu_timeout = HANDSHAKE_SDU_TIMEOUT
    try:
        # The engine's errors are reworded where they arise, with no coroutine wrapped around the
        # driver's: a Mithril signer pays for a handshake with every message.
        try:
            await driver.send(MsgProposeVersions(raw_versions(table)))
        except ProtocolError as exc:
            raise _reworded(exc, driver, sending=True) from None
        try:
            answer = await driver.recv()
        except (ProtocolError, ForeignSDU) as exc:
            raise _reworded(exc, driver, sending=False) from None
        return client_outcome(link, table, answer)
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
    """A server's replies to the proposals it has accepted, and the codec that uses them.

    The reply is a pure function of the table, the link and the proposal, and a local
    socket sees the same proposal from every Mithril signer (one handshake per message):
    remembering the accepted ones spares deciding and encoding the reply on each
    connection, and remembering the bytes of a proposal seen accepted spares decoding it
    (and framing it: :meth:`__contains__` lets the channel hand it over whole). Refusals
    and queries are never remembered (they are rare, and a query's outcome carries the
    client's table), and at most ``capacity`` proposals are.

    :attr:`spec` is the link's handshake spec with this object as its codec, for the
    engine's driver; it decodes and encodes exactly as the link's own codec does.
    """

    def __init__(self, table: VersionTable, link: HandshakeLink, capacity: int = 64) -> None:
        link.check_table(table)
        self.table = table
        self.link = link
        self.capacity = capacity
        self._codec = HandshakeCodec(link)
        # Replies by proposal (equal proposals, equal replies), and the proposals met again
        # by their bytes. The objects these hold are kept for the life of this object, so
        # their ids also key the lookups made on every connection, which then cost no
        # Python-level hashing or comparing of messages.
        self._replies: dict[MsgProposeVersions, ServerReply] = {}
        self._proposals: dict[bytes, MsgProposeVersions] = {}
        self._reply_of: dict[int, ServerReply] = {}
        self._encoded: dict[int, bytes] = {}
        base = protocol_spec(link)
        self.spec: ProtocolSpec = dataclasses.replace(base, codec=self) if capacity else base

    def __contains__(self, proposal: object) -> bool:
        try:
            return proposal in self._proposals
        except TypeError:  # an unhashable buffer is never one of the remembered bytes
            return False

    # -- the engine's Codec ---------------------------------------------------------
    def encode(self, message: HandshakeMessage) -> bytes:
        data = self._encoded.get(id(message))
        return self._codec.encode(message) if data is None else data

    def decode(self, state: State, raw: bytes) -> HandshakeMessage:
        if state is not State.PROPOSE:
            return self._codec.decode(state, raw)
        try:
            proposal = self._proposals.get(raw)
        except TypeError:  # an unhashable buffer
            proposal = None
        if proposal is None:
            proposal = self._codec.decode(state, raw)
            self._remember_bytes(raw, proposal)
        return proposal

    decode_framed = decode

    def _remember_bytes(self, raw: bytes, proposal: MsgProposeVersions) -> None:
        """Remember that ``raw`` decodes to ``proposal``, if the proposal's reply is remembered."""
        reply = self._replies.get(proposal)
        if reply is not None and len(self._proposals) < self.capacity:
            self._proposals[bytes(raw)] = proposal
            self._reply_of[id(proposal)] = reply

    # -- replies ---------------------------------------------------------------------
    def reply_to(self, proposal: MsgProposeVersions) -> ServerReply:
        """The reply to ``proposal``, remembered if it accepts a version."""
        reply = self._reply_of.get(id(proposal)) or self._replies.get(proposal)
        if reply is None:
            reply = ServerReply(*decide_reply(self.link, self.table, proposal))
            if isinstance(reply.outcome, HandshakeResult) and len(self._replies) < self.capacity:
                self._replies[proposal] = reply
                self._reply_of[id(proposal)] = reply
                self._encoded[id(reply.message)] = reply.data
        return reply

    def answer(self, proposal: bytes) -> ServerReply:
        """The reply to the bytes of a proposal (codec errors are raised, as by the server)."""
        message = self.decode(State.PROPOSE, proposal)
        reply = self.reply_to(message)
        if proposal not in self:
            self._remember_bytes(proposal, message)
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
    bearer.sdu_timeout = HANDSHAKE_SDU_TIMEOUT
    try:
        if answers is None:
            answers = ServerAnswers(table, link, capacity=0)
        elif answers.table is not table or answers.link is not link:
            raise ValueError("the remembered answers belong to another version table or link")
        driver = Driver(HandshakeChannel(bearer, from_responder=True, known=answers), answers.spec, Role.SERVER)
        try:
            proposal = await driver.recv()
        except (ProtocolError, ForeignSDU) as exc:
            raise _reworded(exc, driver, sending=False) from None
        reply = answers.reply_to(proposal)
        try:
            await driver.send(reply.message)
        except ProtocolError as exc:
            raise _reworded(exc, driver, sending=True) from None
        outcome = reply.outcome
        if type(outcome) is HandshakeResult:
            return outcome
        if isinstance(outcome, HandshakeQueryResult):
            await _linger_for_close(bearer, link.query_shutdown_delay)
        raise outcome
    except BaseException:
        await _close(bearer)
        raise
