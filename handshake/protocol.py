"""The handshake as a pure state machine: bytes in, bytes and outcomes out.

No I/O happens here. :class:`HandshakeClient` and :class:`HandshakeServer` hold the state
of one handshake, decode what arrives with the codec for the current state, check every
move against :data:`TRANSITIONS` (a message that is not allowed in the current state is
a protocol error raised here, never by ad-hoc checks in the peers) and decide what to
answer with the reference node's algorithm (:func:`accept_or_refuse`). The trio driver in
:mod:`handshake.driver` only moves bytes and enforces the per-state limits of the link.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType
from typing import Mapping, Union

from .codec import decode_message, encode_message
from .errors import (HandshakeQueryResult, HandshakeRefused, InvalidServerSelection, NotRecognisedVersion,
                     UnexpectedHandshakeMessage, VersionDataError, VersionDataMismatch)
from .links import HandshakeLink, VersionTable
from .messages import (HandshakeDecodeError, HandshakeMessage, MsgAcceptVersion, MsgProposeVersions,
                       MsgQueryReply, MsgRefuse, MsgReplyVersions, RefuseReason, Refused, VersionMismatch,
                       raw_versions)
from .states import AGENCY, Agency, State
from .version_data import VersionData, acceptable

__all__ = [
    "TRANSITIONS",
    "HandshakeResult",
    "ServerReply",
    "accept_or_refuse",
    "decode_query_result",
    "HandshakeClient",
    "HandshakeServer",
]

#: (state, message kind) -> next state. Anything not listed is a protocol violation.
TRANSITIONS: Mapping[tuple[State, type], State] = MappingProxyType({
    (State.PROPOSE, MsgProposeVersions): State.CONFIRM,
    (State.CONFIRM, MsgAcceptVersion): State.DONE,
    (State.CONFIRM, MsgRefuse): State.DONE,
    (State.CONFIRM, MsgQueryReply): State.DONE,
    # Simultaneous open: the other side's proposal arrives while we wait for a reply.
    (State.CONFIRM, MsgReplyVersions): State.DONE,
})


@dataclass(frozen=True)
class HandshakeResult:
    """An agreed version and the data both sides agreed on: the connection may start its mux."""

    version: int
    agreed_data: VersionData


def accept_or_refuse(link: HandshakeLink, local: VersionTable,
                     remote: Mapping[int, bytes]) -> HandshakeResult | RefuseReason:
    """The reference's choice: the highest common version, if its data decodes and is acceptable."""
    common = [v for v in remote if v in local]
    if not common:
        return VersionMismatch(tuple(sorted(local)))
    version = max(common)
    try:
        remote_data = link.decode_data(remote[version])
    except VersionDataError as exc:
        return HandshakeDecodeError(version, exc.text)
    try:
        agreed = acceptable(local[version], remote_data)
    except VersionDataMismatch as exc:
        return Refused(version, exc.text)
    return HandshakeResult(version, agreed)


def decode_query_result(link: HandshakeLink, versions: Mapping[int, bytes]) -> HandshakeQueryResult:
    """Each entry of a queried table decoded on its own; failures are kept, not raised."""
    decoded: dict[int, VersionData | VersionDataError] = {}
    for version, raw in versions.items():
        try:
            decoded[version] = link.decode_data(raw)
        except VersionDataError as exc:
            decoded[version] = exc
    return HandshakeQueryResult(decoded)


class _Machine:
    """The shared state and transition checking of one side."""

    role: Agency

    def __init__(self, link: HandshakeLink, table: VersionTable) -> None:
        link.check_table(table)
        self.link = link
        self.table = table
        self.state = State.PROPOSE

    def _move(self, message: HandshakeMessage, *, sending: bool) -> None:
        holder = AGENCY[self.state]
        if holder is Agency.NOBODY:
            raise UnexpectedHandshakeMessage(f"{type(message).__name__} after the handshake finished")
        if sending and holder is not self.role:
            raise UnexpectedHandshakeMessage(f"the {self.role.value} cannot send in {self.state.value}")
        try:
            self.state = TRANSITIONS[(self.state, type(message))]
        except KeyError:
            raise UnexpectedHandshakeMessage(f"{type(message).__name__} is not allowed in {self.state.value}") from None

    def _send(self, message: HandshakeMessage) -> bytes:
        self._move(message, sending=True)
        return encode_message(message)

    def _receive(self, raw: bytes) -> HandshakeMessage:
        if self.state is State.DONE:
            raise UnexpectedHandshakeMessage("bytes received after the handshake finished")
        message = decode_message(self.link, self.state, raw)
        self._move(message, sending=False)
        return message


class HandshakeClient(_Machine):
    """The side that proposes. Also the side that dialled, except in a simultaneous open."""

    role = Agency.CLIENT

    def propose(self) -> bytes:
        """The bytes of ``MsgProposeVersions`` with this side's whole table."""
        return self._send(MsgProposeVersions(raw_versions(self.table)))

    def receive(self, raw: bytes) -> HandshakeResult:
        """Interpret the server's answer.

        Returns the agreed version, or raises :class:`HandshakeRefused`,
        :class:`HandshakeQueryResult`, :class:`NotRecognisedVersion`,
        :class:`InvalidServerSelection` or a codec/protocol error.
        """
        message = self._receive(raw)
        if isinstance(message, MsgAcceptVersion):
            return self._check_accept(message)
        if isinstance(message, MsgRefuse):
            raise HandshakeRefused(message.reason, by_peer=True)
        if isinstance(message, MsgQueryReply):
            raise decode_query_result(self.link, message.table)
        assert isinstance(message, MsgReplyVersions)
        outcome = accept_or_refuse(self.link, self.table, message.table)
        if isinstance(outcome, HandshakeResult):
            return outcome
        raise HandshakeRefused(outcome, by_peer=False)

    def _check_accept(self, message: MsgAcceptVersion) -> HandshakeResult:
        local = self.table.get(message.version)
        if local is None:
            raise NotRecognisedVersion(message.version, tuple(sorted(self.table)))
        try:
            remote = self.link.decode_data(message.data)
            agreed = acceptable(local, remote)
        except (VersionDataError, VersionDataMismatch) as exc:
            raise InvalidServerSelection(message.version, exc.text) from None
        return HandshakeResult(message.version, agreed)


Outcome = Union[HandshakeResult, HandshakeRefused, HandshakeQueryResult]


@dataclass(frozen=True)
class ServerReply:
    """What the server sends back, and what the exchange means for this side."""

    data: bytes
    outcome: Outcome

    @property
    def is_query(self) -> bool:
        return isinstance(self.outcome, HandshakeQueryResult)

    def result(self) -> HandshakeResult:
        """The agreed version, or the refusal / query outcome raised."""
        if isinstance(self.outcome, HandshakeResult):
            return self.outcome
        raise self.outcome


class HandshakeServer(_Machine):
    """The side that answers: accepts the highest common version, refuses, or answers a query."""

    role = Agency.SERVER

    def receive(self, raw: bytes) -> ServerReply:
        """Decode the client's proposal and decide the reply (codec errors are raised)."""
        message = self._receive(raw)
        assert isinstance(message, MsgProposeVersions)
        outcome = accept_or_refuse(self.link, self.table, message.table)
        if not isinstance(outcome, HandshakeResult):
            return ServerReply(self._send(MsgRefuse(outcome)), HandshakeRefused(outcome, by_peer=False))
        if outcome.agreed_data.query:
            reply = MsgQueryReply(raw_versions(self.table))
            return ServerReply(self._send(reply), decode_query_result(self.link, message.table))
        accept = MsgAcceptVersion(outcome.version, outcome.agreed_data.to_cbor())
        return ServerReply(self._send(accept), outcome)
