"""The protocol errors of sig submission, one class per rule, named as the reference names them.

The reference raises these from its peers, not from its codec or driver, because they
concern the id window that only the peers track (``dmq-node: DMQ/SigSubmissionV2/Types.hs``
for V2; ``ouroboros-network: TxSubmission/Outbound.hs`` and ``TxSubmission/Inbound/V2/Types.hs``
for V1 and the size check). Each ends the connection. The same rule has a V1 and a V2
constructor name (``ProtocolErrorAckedTooManyTxids`` / ``ProtocolErrorAckedTooManySigIds``):
the class says which rule broke, :attr:`reference_name` says it the way a reference node's
log would, so traces of both implementations can be compared.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import ClassVar

from ..framework import ProtocolError

__all__ = [
    "PROTOCOL_NAMES",
    "SigSubmissionProtocolError",
    "AckedTooManyIds",
    "RequestedTooManyIds",
    "RequestedNothing",
    "RequestBlocking",
    "RequestNonBlocking",
    "RequestedUnavailable",
    "IdsNotRequested",
    "BodyNotRequested",
    "SizeError",
]

#: Protocol names used by the specs and in every error of each version.
PROTOCOL_NAMES = {1: "sig-submission-v1", 2: "sig-submission-v2"}

_IDLE = {1: "StIdle", 2: "StIdle"}
_IDS = {1: "StTxIds", 2: "StSigIds"}
_BODIES = {1: "StTxs", 2: "StSigs"}


def _ids_text(ids: Iterable[bytes]) -> str:
    shown = [i.hex() for i in ids]
    if len(shown) > 4:
        return ", ".join(shown[:4]) + f", ... ({len(shown)} in all)"
    return ", ".join(shown)


class SigSubmissionProtocolError(ProtocolError):
    """A sig-submission peer broke a rule of the id window; the connection must close.

    ``version`` is the negotiated node-to-node version (1 = TxSubmission2 wire format,
    2 = SigSubmissionV2); ``state`` is the reference name of the state the offending
    message belongs to.
    """

    names: ClassVar[dict[int, str]]
    states: ClassVar[dict[int, str]]

    def __init__(self, version: int, detail: str) -> None:
        if version not in PROTOCOL_NAMES:
            raise ValueError(f"sig submission has versions 1 and 2, not {version!r}")
        self.version = version
        self.reference_name = self.names[version]
        super().__init__(PROTOCOL_NAMES[version], self.states[version], f"{self.reference_name}: {detail}")


class AckedTooManyIds(SigSubmissionProtocolError):
    """The pulling peer acknowledged more ids than it holds unacknowledged."""

    names = {1: "ProtocolErrorAckedTooManyTxids", 2: "ProtocolErrorAckedTooManySigIds"}
    states = _IDLE

    def __init__(self, version: int, ack: int, unacknowledged: int) -> None:
        super().__init__(version, f"acknowledged {ack} ids but only {unacknowledged} are unacknowledged")
        self.ack = ack
        self.unacknowledged = unacknowledged


class RequestedTooManyIds(SigSubmissionProtocolError):
    """The request would put more ids outstanding than the window allows."""

    names = {1: "ProtocolErrorRequestedTooManyTxids", 2: "ProtocolErrorRequestedTooManySigIds"}
    states = _IDLE

    def __init__(self, version: int, req: int, unacknowledged: int, ack: int, window: int) -> None:
        super().__init__(version, f"requested {req} ids with {unacknowledged} unacknowledged and {ack} "
                                  f"acknowledged, over the window of {window}")
        self.req = req
        self.unacknowledged = unacknowledged
        self.ack = ack
        self.window = window


class RequestedNothing(SigSubmissionProtocolError):
    """A blocking request for zero ids, or a non-blocking one that neither acks nor requests."""

    names = {1: "ProtocolErrorRequestedNothing", 2: "ProtocolErrorRequestedNothing"}
    states = _IDLE

    def __init__(self, version: int, blocking: bool) -> None:
        what = "a blocking request for zero ids" if blocking else "a non-blocking request that acks and requests nothing"
        super().__init__(version, what)
        self.blocking = blocking


class RequestBlocking(SigSubmissionProtocolError):
    """A blocking request while ids remain unacknowledged (it must be non-blocking)."""

    names = {1: "ProtocolErrorRequestBlocking", 2: "ProtocolErrorRequestBlocking"}
    states = _IDLE

    def __init__(self, version: int, remaining: int) -> None:
        super().__init__(version, f"blocking request with {remaining} ids still unacknowledged")
        self.remaining = remaining


class RequestNonBlocking(SigSubmissionProtocolError):
    """A non-blocking request with nothing left unacknowledged (it must be blocking)."""

    names = {1: "ProtocolErrorRequestNonBlocking", 2: "ProtocolErrorRequestNonBlocking"}
    states = _IDLE

    def __init__(self, version: int) -> None:
        super().__init__(version, "non-blocking request with no id left unacknowledged")


class RequestedUnavailable(SigSubmissionProtocolError):
    """A body was requested for an id outside the unacknowledged window."""

    names = {1: "ProtocolErrorRequestedUnavailableTx", 2: "ProtocolErrorRequestedUnavailableSig"}
    states = _IDLE

    def __init__(self, version: int, ids: Iterable[bytes]) -> None:
        self.ids = tuple(ids)
        super().__init__(version, f"requested ids never announced or already acknowledged: {_ids_text(self.ids)}")


class IdsNotRequested(SigSubmissionProtocolError):
    """The serving peer replied with more ids than were requested."""

    names = {1: "ProtocolErrorTxIdsNotRequested", 2: "ProtocolErrorSigIdsNotRequested"}
    states = _IDS

    def __init__(self, version: int, received: int, requested: int) -> None:
        super().__init__(version, f"replied with {received} ids to a request for {requested}")
        self.received = received
        self.requested = requested


class BodyNotRequested(SigSubmissionProtocolError):
    """The serving peer sent a message whose id was not in the request it answers."""

    names = {1: "ProtocolErrorTxNotRequested", 2: "ProtocolErrorSigNotRequested"}
    states = _BODIES

    def __init__(self, version: int, ids: Iterable[bytes]) -> None:
        self.ids = tuple(ids)
        super().__init__(version, f"sent messages that were not requested: {_ids_text(self.ids)}")


class SizeError(SigSubmissionProtocolError):
    """Received messages differ from their announced sizes by more than the tolerance.

    ``mismatches`` holds ``(id, received size, announced size)`` for each.
    """

    names = {1: "ProtocolErrorTxSizeError", 2: "ProtocolErrorTxSizeError"}
    states = _BODIES

    def __init__(self, version: int, mismatches: Iterable[tuple[bytes, int, int]], tolerance: int) -> None:
        self.mismatches = tuple(mismatches)
        shown = "; ".join(f"{i.hex()}: {got} bytes, announced {said}" for i, got, said in self.mismatches[:4])
        super().__init__(version, f"sizes off by more than {tolerance} bytes: {shown}")
