"""Sig submission V2 (mini-protocol 11, node-to-node version 2): states, messages, limits, table.

The pulling peer (the protocol's client, and the connection *initiator*, docs/protocol/node-to-node.md 9.1)
pulls: it asks for ids, blocking or not, acknowledging the ids it has processed, then
for the messages it wants; the serving peer (server) answers from its mempool. A blocking
request may be answered with ``MsgReplyNoSigIds`` so the pulling peer regains agency; the
state's 20 s limit is what forces the serving peer to do so.
(``dmq-node: DMQ/Protocol/SigSubmissionV2/{Type,Codec}.hs``; docs/protocol/node-to-node.md 9.3.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..framework import SMALL_BYTE_LIMIT, Agency, ProtocolState, StateSpec
from ..framework.cbor_write import as_items
from ..sig_submission.limits import (
    BLOCKING_STATE_TIME_LIMIT,
    BODIES_BYTE_LIMIT,
    INGRESS_LIMIT,
    PROTOCOL_NUM,
    SHORT_WAIT,
)
from ..sig_submission.wire import check_id_sizes, check_ids, check_request_ids

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "VERSION",
    "SigSubmissionV2State",
    "MsgRequestSigIds",
    "MsgReplySigIds",
    "MsgReplyNoSigIds",
    "MsgRequestSigs",
    "MsgReplySigs",
    "MsgDone",
    "SigSubmissionV2Message",
    "STATES",
    "TRANSITIONS",
]

#: The node-to-node version that selects this wire format.
VERSION = 2


class SigSubmissionV2State(ProtocolState):
    IDLE = "StIdle"
    SIG_IDS_BLOCKING = "StSigIds StBlocking"
    SIG_IDS_NON_BLOCKING = "StSigIds StNonBlocking"
    SIGS = "StSigs"
    DONE = "StDone"


@dataclass(frozen=True, slots=True)
class MsgRequestSigIds:
    """``[1, blocking, ack, req]``: acknowledge the ``ack`` oldest ids, then ask for up to ``req``."""

    blocking: bool
    ack: int
    req: int

    def __post_init__(self) -> None:
        check_request_ids(self.blocking, self.ack, self.req)


@dataclass(frozen=True, slots=True)
class MsgReplySigIds:
    """``[2, [_ [id, size]*]]``: ids in mempool order with each message's size in bytes.

    Non-empty in reply to a blocking request (the codec refuses an empty one there).
    """

    ids: tuple[tuple[bytes, int], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", check_id_sizes(self.ids))


@dataclass(frozen=True, slots=True)
class MsgReplyNoSigIds:
    """``[3]``: nothing arrived in time for a blocking request."""


@dataclass(frozen=True, slots=True)
class MsgRequestSigs:
    """``[4, [_ id*]]``: the messages wanted, among the unacknowledged ids."""

    ids: tuple[bytes, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", check_ids(self.ids))


@dataclass(frozen=True, slots=True)
class MsgReplySigs:
    """``[5, [_ message*]]``: the requested messages still held, as their exact bytes, in request order."""

    messages: tuple[bytes, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", as_items(self.messages))


@dataclass(frozen=True, slots=True)
class MsgDone:
    """``[6]``: the pulling peer ends the protocol from idle."""


SigSubmissionV2Message = (
    MsgRequestSigIds | MsgReplySigIds | MsgReplyNoSigIds | MsgRequestSigs | MsgReplySigs | MsgDone
)


def _ids_state(request: MsgRequestSigIds) -> SigSubmissionV2State:
    """A blocking request leads to the blocking ids state, a non-blocking one to the other."""
    return SigSubmissionV2State.SIG_IDS_BLOCKING if request.blocking else SigSubmissionV2State.SIG_IDS_NON_BLOCKING


STATES = {
    SigSubmissionV2State.IDLE: StateSpec(Agency.CLIENT, SMALL_BYTE_LIMIT, None),
    SigSubmissionV2State.SIG_IDS_BLOCKING: StateSpec(Agency.SERVER, SMALL_BYTE_LIMIT, BLOCKING_STATE_TIME_LIMIT),
    SigSubmissionV2State.SIG_IDS_NON_BLOCKING: StateSpec(Agency.SERVER, SMALL_BYTE_LIMIT, SHORT_WAIT),
    SigSubmissionV2State.SIGS: StateSpec(Agency.SERVER, BODIES_BYTE_LIMIT, SHORT_WAIT),
    SigSubmissionV2State.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (SigSubmissionV2State.IDLE, MsgRequestSigIds): _ids_state,
    (SigSubmissionV2State.IDLE, MsgRequestSigs): SigSubmissionV2State.SIGS,
    (SigSubmissionV2State.IDLE, MsgDone): SigSubmissionV2State.DONE,
    (SigSubmissionV2State.SIG_IDS_BLOCKING, MsgReplySigIds): SigSubmissionV2State.IDLE,
    (SigSubmissionV2State.SIG_IDS_BLOCKING, MsgReplyNoSigIds): SigSubmissionV2State.IDLE,
    (SigSubmissionV2State.SIG_IDS_NON_BLOCKING, MsgReplySigIds): SigSubmissionV2State.IDLE,
    (SigSubmissionV2State.SIGS, MsgReplySigs): SigSubmissionV2State.IDLE,
}
