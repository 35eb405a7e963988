"""The handshake's sans-IO peers: bytes in, bytes and outcomes out.

No I/O happens here. :class:`HandshakeClient` and :class:`HandshakeServer` each hold the
protocol engine's :class:`~protocol_engine.ProtocolMachine` for the handshake's spec
(:mod:`handshake.spec`): it checks every move against the state table (a message that is not
allowed in the current state is a protocol error raised by the engine, never by ad-hoc
checks in the peers), and :func:`unexpected_message` words its verdict as the handshake's
:class:`~handshake.errors.UnexpectedHandshakeMessage`. What to answer is decided by the
reference node's algorithm (:func:`decide_reply`, :func:`client_outcome`), shared with the
trio driver in :mod:`handshake.driver`, which runs the same spec on the engine's driver.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Union

from protocol_engine import Agency, ProtocolMachine, ProtocolSpec, ProtocolViolation, Role

from .codec import encode_message
from .errors import (HandshakeQueryResult, HandshakeRefused, InvalidServerSelection, NotRecognisedVersion,
                     UnexpectedHandshakeMessage, VersionDataError, VersionDataMismatch)
from .links import HandshakeLink, VersionTable
from .messages import (HandshakeDecodeError, HandshakeMessage, MsgAcceptVersion, MsgProposeVersions,
                       MsgQueryReply, MsgRefuse, MsgReplyVersions, RefuseReason, Refused, VersionMismatch,
                       raw_versions)
from .spec import protocol_spec
from .states import State
from .version_data import VersionData, acceptable

__all__ = [
    "HandshakeResult",
    "ServerReply",
    "accept_or_refuse",
    "decode_query_result",
    "client_outcome",
    "decide_reply",
    "unexpected_message",
    "HandshakeClient",
    "HandshakeServer",
]


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


def unexpected_message(spec: ProtocolSpec, role: Role, state: State, message: Any, *,
                       sending: bool) -> UnexpectedHandshakeMessage:
    """The handshake's wording of a move the engine refused (a ProtocolViolation)."""
    name = "a message" if message is None else type(message).__name__
    agency = spec.agency(state)
    if agency is Agency.NOBODY:
        text = f"{name} after the handshake finished"
    elif sending and agency is not role.agency:
        text = f"the {role.value} cannot send in {state.value}"
    elif not sending and agency is not role.peer.agency:
        text = f"the {role.value} cannot receive {name} in {state.value}"
    else:
        text = f"{name} is not allowed in {state.value}"
    return UnexpectedHandshakeMessage(text)


def client_outcome(link: HandshakeLink, table: VersionTable, answer: HandshakeMessage) -> HandshakeResult:
    """What the server's ``answer`` to a proposal of ``table`` means for the client.

    Returns the agreed version, or raises :class:`HandshakeRefused`,
    :class:`HandshakeQueryResult`, :class:`NotRecognisedVersion` or
    :class:`InvalidServerSelection`. A proposal as the answer is a simultaneous open: the
    client then chooses as a server would, and refuses locally if nothing is common.
    """
    if isinstance(answer, MsgAcceptVersion):
        local = table.get(answer.version)
        if local is None:
            raise NotRecognisedVersion(answer.version, tuple(sorted(table)))
        try:
            agreed = acceptable(local, link.decode_data(answer.data))
        except (VersionDataError, VersionDataMismatch) as exc:
            raise InvalidServerSelection(answer.version, exc.text) from None
        return HandshakeResult(answer.version, agreed)
    if isinstance(answer, MsgRefuse):
        raise HandshakeRefused(answer.reason, by_peer=True)
    if isinstance(answer, MsgQueryReply):
        raise decode_query_result(link, answer.table)
    assert isinstance(answer, MsgReplyVersions)
    outcome = accept_or_refuse(link, table, answer.table)
    if isinstance(outcome, HandshakeResult):
        return outcome
    raise HandshakeRefused(outcome, by_peer=False)


Outcome = Union[HandshakeResult, HandshakeRefused, HandshakeQueryResult]


def decide_reply(link: HandshakeLink, table: VersionTable,
                 proposal: MsgProposeVersions) -> tuple[HandshakeMessage, Outcome]:
    """The server's reply to ``proposal`` and what the exchange means for the server.

    A refusal when no version is agreed; the whole table when the agreed data asks for a
    query; else the acceptance of the highest common version.
    """
    outcome = accept_or_refuse(link, table, proposal.table)
    if not isinstance(outcome, HandshakeResult):
        return MsgRefuse(outcome), HandshakeRefused(outcome, by_peer=False)
    if outcome.agreed_data.query:
        return MsgQueryReply(raw_versions(table)), decode_query_result(link, proposal.table)
    return MsgAcceptVersion(outcome.version, outcome.agreed_data.to_cbor()), outcome


class ServerReply:
    """What the server sends back (``message``, and its bytes ``data``) and what the exchange means.

    ``data`` is encoded when first asked for: the trio driver has the engine's codec encode
    what it sends, so a reply it sends only once is encoded only once.
    """

    __slots__ = ("message", "outcome", "_data")

    def __init__(self, message: HandshakeMessage, outcome: Outcome, data: bytes | None = None) -> None:
        self.message = message
        self.outcome = outcome
        self._data = data

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = encode_message(self.message)
        return self._data

    @property
    def is_query(self) -> bool:
        return isinstance(self.outcome, HandshakeQueryResult)

    def result(self) -> HandshakeResult:
        """The agreed version, or the refusal / query outcome raised."""
        if isinstance(self.outcome, HandshakeResult):
            return self.outcome
        raise self.outcome


class _Peer:
    """One side: its link and table, and the engine's machine for the link's handshake spec."""

    role: Role

    def __init__(self, link: HandshakeLink, table: VersionTable) -> None:
        link.check_table(table)
        self.link = link
        self.table = table
        self.machine = ProtocolMachine(protocol_spec(link), self.role)

    @property
    def state(self) -> State:
        return self.machine.state

    def _send(self, message: HandshakeMessage) -> bytes:
        machine = self.machine
        try:
            machine.on_send(message)
        except ProtocolViolation as exc:
            raise unexpected_message(machine.spec, self.role, exc.state, message, sending=True) from None
        return machine.spec.codec.encode(message)

    def _receive(self, raw: bytes) -> HandshakeMessage:
        machine = self.machine
        if machine.done:
            raise UnexpectedHandshakeMessage("bytes received after the handshake finished")
        # Decoded in the current state even when this side holds agency there: what the codec
        # cannot read in that state is a codec error, as the reference's decoder reports it.
        message = machine.spec.codec.decode(machine.state, raw)
        try:
            machine.on_receive(message, raw)
        except ProtocolViolation as exc:
            raise unexpected_message(machine.spec, self.role, exc.state, message, sending=False) from None
        return message


class HandshakeClient(_Peer):
    """The side that proposes. Also the side that dialled, except in a simultaneous open."""

    role = Role.CLIENT

    def propose(self) -> bytes:
        """The bytes of ``MsgProposeVersions`` with this side's whole table."""
        return self._send(MsgProposeVersions(raw_versions(self.table)))

    def receive(self, raw: bytes) -> HandshakeResult:
        """Interpret the server's answer (see :func:`client_outcome`; codec and protocol errors are raised)."""
        return client_outcome(self.link, self.table, self._receive(raw))


class HandshakeServer(_Peer):
    """The side that answers: accepts the highest common version, refuses, or answers a query."""

    role = Role.SERVER

    def receive(self, raw: bytes) -> ServerReply:
        """Decode the client's proposal and decide the reply (codec errors are raised)."""
        proposal = self._receive(raw)
        assert isinstance(proposal, MsgProposeVersions)
        reply, outcome = decide_reply(self.link, self.table, proposal)
        return ServerReply(reply, outcome, self._send(reply))
