"""Fatal multiplexer conditions (docs/protocol/mux.md 2.6).

Each of these ends the whole connection it happened on, and only that one: there is no
per-protocol recovery in the reference mux, so there is none here. They are typed so that
the owner of a connection can trace them, count them and decide about the peer (for
example, back off before reconnecting) with a lookup on the class rather than by parsing
messages. Each carries the facts that explain it as attributes and in its message.
"""

from __future__ import annotations

__all__ = [
    "MuxError",
    "UnknownMiniProtocol",
    "WrongDirection",
    "IngressQueueOverRun",
    "SDUDecodeError",
    "SDUReadTimeout",
    "SDUWriteTimeout",
    "BearerClosed",
    "ConnectFailed",
]


class MuxError(Exception):
    """A condition that ends the connection the mux runs on."""


class UnknownMiniProtocol(MuxError):
    """An SDU arrived for a protocol number nobody registered on this connection."""

    def __init__(self, protocol_num: int, from_responder: bool) -> None:
        sender = "responder" if from_responder else "initiator"
        super().__init__(f"SDU for mini-protocol {protocol_num} (sent by the peer's {sender} instance), "
                         f"which is not registered on this connection")
        self.protocol_num = protocol_num
        self.from_responder = from_responder


class WrongDirection(MuxError):
    """An SDU arrived for a registered protocol number, but for the instance we do not run.

    This is the reference's ``InitiatorOnly`` / ``ResponderOnly``: for example M = 0 data
    (from the peer's initiator) reaching a side that runs only the initiator of that
    protocol.
    """

    def __init__(self, protocol_num: int, from_responder: bool) -> None:
        missing = "initiator" if from_responder else "responder"
        sender = "responder" if from_responder else "initiator"
        super().__init__(f"SDU for mini-protocol {protocol_num} from the peer's {sender} instance, but this "
                         f"side runs no {missing} instance of it")
        self.protocol_num = protocol_num
        self.from_responder = from_responder


class IngressQueueOverRun(MuxError):
    """The bytes queued for one (protocol, direction) would exceed its ingress limit."""

    def __init__(self, protocol_num: int, from_responder: bool, limit: int, queued: int, incoming: int) -> None:
        sender = "responder" if from_responder else "initiator"
        super().__init__(f"ingress queue of mini-protocol {protocol_num} (from the peer's {sender}) over its "
                         f"{limit}-byte limit: {queued} bytes queued + {incoming} arriving = {queued + incoming}")
        self.protocol_num = protocol_num
        self.from_responder = from_responder
        self.limit = limit
        self.queued = queued
        self.incoming = incoming


class SDUDecodeError(MuxError):
    """An SDU header that cannot be valid (zero length, or cut off by the end of the stream)."""


class SDUReadTimeout(MuxError):
    """An SDU started arriving but was not complete within the SDU timeout."""

    def __init__(self, timeout: float, received: int, expected: int | None) -> None:
        wanted = "an 8-byte header" if expected is None else f"{expected} bytes"
        super().__init__(f"SDU not complete within {timeout:g} s: {received} bytes of {wanted} received")
        self.timeout = timeout
        self.received = received
        self.expected = expected


class SDUWriteTimeout(MuxError):
    """The socket did not accept an SDU write within the SDU timeout."""

    def __init__(self, timeout: float, size: int) -> None:
        super().__init__(f"write of {size} bytes not accepted within {timeout:g} s")
        self.timeout = timeout
        self.size = size


class BearerClosed(MuxError):
    """The byte stream under the mux ended or broke.

    Also raised for an end of stream exactly between two SDUs: only the owner knows
    whether that close was expected (every protocol finished) or not.
    """


class ConnectFailed(MuxError):
    """No connection could be opened to the peer's address (nothing ran on it yet)."""

    def __init__(self, address: str, reason: OSError) -> None:
        super().__init__(f"cannot connect to {address}: {reason.strerror or reason}")
        self.address = address
        self.reason = reason
