"""Local message submission (mini-protocol 14): states, messages, reject reasons.

A local client (the Mithril signer) submits one DMQ message at a time and waits for the
verdict. The message travels inline as its exact CBOR bytes; this package never decodes
it, the node does (``submit`` below). No byte or time limits: the reference sets none on
node-to-client protocols. (``dmq-node: DMQ/Protocol/LocalMsgSubmission/{Type,Codec}.hs``
over ``LocalTxSubmission``; docs/protocol/local-protocols.md 7.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..framework import Agency, ProtocolState, StateSpec

__all__ = [
    "PROTOCOL_NUM",
    "LocalSubmissionState",
    "MsgSubmitMessage",
    "MsgAcceptMessage",
    "MsgRejectMessage",
    "MsgDone",
    "LocalSubmissionMessage",
    "RejectInvalid",
    "RejectAlreadyReceived",
    "RejectExpired",
    "RejectOther",
    "RejectText",
    "RejectReason",
    "Accepted",
    "ACCEPTED",
    "SubmitResult",
    "InvalidMessageBytes",
    "STATES",
    "TRANSITIONS",
]

PROTOCOL_NUM = 14


class LocalSubmissionState(ProtocolState):
    IDLE = "StIdle"
    BUSY = "StBusy"
    DONE = "StDone"


# -- reject reasons: [0, tstr] / [1] / [2] / [3, tstr] ------------------------------------
@dataclass(frozen=True, slots=True)
class RejectInvalid:
    """``[0, text]``: the message failed validation; ``text`` is the error as shown."""

    text: str


@dataclass(frozen=True, slots=True)
class RejectAlreadyReceived:
    """``[1]``: a duplicate of a message already in the mempool."""


@dataclass(frozen=True, slots=True)
class RejectExpired:
    """``[2]``: the message's expiry has passed."""


@dataclass(frozen=True, slots=True)
class RejectOther:
    """``[3, text]``: any other failure.

    The reference writes Haskell ``show`` of its Text here, quotes included (see
    :func:`~handshake.term_text.haskell_string`); this class
    carries the text exactly as it is on the wire.
    """

    text: str


@dataclass(frozen=True, slots=True)
class RejectText:
    """``tstr``: a reason that is a bare text, the only shape pallas-network 0.34 (Mithril
    2543.x, 2603.x) can decode. The reference never sends it; the node sends it only to
    legacy-format submissions, and only with ``LegacyRejectText`` (docs/protocol/local-protocols.md 7.2)."""

    text: str


RejectReason = RejectInvalid | RejectAlreadyReceived | RejectExpired | RejectOther | RejectText


@dataclass(frozen=True, slots=True)
class Accepted:
    """The verdict ``[1]``: the message is in the mempool."""


ACCEPTED = Accepted()

#: What the node's ``submit`` callable returns and what the client's ``submit`` yields.
SubmitResult = Accepted | RejectReason


# -- messages --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class MsgSubmitMessage:
    """``[0, message]``: ``message`` is the exact CBOR of one DMQ message, inline."""

    message: bytes


@dataclass(frozen=True, slots=True)
class MsgAcceptMessage:
    """``[1]``."""


@dataclass(frozen=True, slots=True)
class MsgRejectMessage:
    """``[2, reason]``."""

    reason: RejectReason


@dataclass(frozen=True, slots=True)
class MsgDone:
    """``[3]``: the client ends the protocol."""


LocalSubmissionMessage = MsgSubmitMessage | MsgAcceptMessage | MsgRejectMessage | MsgDone

STATES = {
    LocalSubmissionState.IDLE: StateSpec(Agency.CLIENT),
    LocalSubmissionState.BUSY: StateSpec(Agency.SERVER),
    LocalSubmissionState.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (LocalSubmissionState.IDLE, MsgSubmitMessage): LocalSubmissionState.BUSY,
    (LocalSubmissionState.IDLE, MsgDone): LocalSubmissionState.DONE,
    (LocalSubmissionState.BUSY, MsgAcceptMessage): LocalSubmissionState.IDLE,
    (LocalSubmissionState.BUSY, MsgRejectMessage): LocalSubmissionState.IDLE,
}


class InvalidMessageBytes(Exception):
    """Raised by the node's ``submit`` when the submitted bytes are not a DMQ message.

    In the reference the message decoder is part of the protocol codec, so such bytes are
    a decoder failure that closes the connection without a reply; the server peer turns
    this exception into exactly that.
    """
