"""Sig submission V1 (mini-protocol 11, node-to-node version 1): the TxSubmission2 wire format.

The reference runs its V1 over ouroboros-network's TxSubmission2 protocol with
``txid = messageId`` and ``tx = message``. The serving peer (the protocol's client, run
by the connection *initiator*, docs/protocol/node-to-node.md 9.1) opens with ``MsgInit`` and then answers the
pulling peer's requests; the pulling peer (server, connection responder) pulls. A blocking request
has no time limit and no "nothing yet" answer: the serving peer blocks until it has ids, or
ends the protocol with ``MsgDone``. Same byte limits as V2: the reference's
``byteLimitsSigSubmission``, not TxSubmission2's larger ones.
(``dmq-node: DMQ/Protocol/SigSubmission/Codec.hs``;
``ouroboros-network: Ouroboros/Network/Protocol/TxSubmission2/{Type,Codec}.hs``; docs/protocol/node-to-node.md 9.4.)
"""

from __future__ import annotations

from dataclasses import dataclass

from ..framework import SMALL_BYTE_LIMIT, Agency, ProtocolState, StateSpec
from ..framework.cbor_write import as_items
from ..sig_submission.limits import BODIES_BYTE_LIMIT, INGRESS_LIMIT, PROTOCOL_NUM, SHORT_WAIT
from ..sig_submission.wire import check_id_sizes, check_ids, check_request_ids

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "VERSION",
    "SigSubmissionV1State",
    "MsgInit",
    "MsgRequestTxIds",
    "MsgReplyTxIds",
    "MsgRequestTxs",
    "MsgReplyTxs",
    "MsgDone",
    "SigSubmissionV1Message",
    "STATES",
    "TRANSITIONS",
]

#: The node-to-node version that selects this wire format.
VERSION = 1


class SigSubmissionV1State(ProtocolState):
    INIT = "StInit"
    IDLE = "StIdle"
    TX_IDS_BLOCKING = "StTxIds StBlocking"
    TX_IDS_NON_BLOCKING = "StTxIds StNonBlocking"
    TXS = "StTxs"
    DONE = "StDone"


@dataclass(frozen=True, slots=True)
class MsgInit:
    """``[6]``: the serving peer's first message, handing agency to the pulling peer."""


@dataclass(frozen=True, slots=True)
class MsgRequestTxIds:
    """``[0, blocking, ack, req]``: acknowledge the ``ack`` oldest ids, then ask for up to ``req``."""

    blocking: bool
    ack: int
    req: int

    def __post_init__(self) -> None:
        check_request_ids(self.blocking, self.ack, self.req)


@dataclass(frozen=True, slots=True)
class MsgReplyTxIds:
    """``[1, [_ [id, size]*]]``: ids in mempool order with sizes; non-empty after a blocking request."""

    ids: tuple[tuple[bytes, int], ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", check_id_sizes(self.ids))


@dataclass(frozen=True, slots=True)
class MsgRequestTxs:
    """``[2, [_ id*]]``: the messages wanted, among the unacknowledged ids."""

    ids: tuple[bytes, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "ids", check_ids(self.ids))


@dataclass(frozen=True, slots=True)
class MsgReplyTxs:
    """``[3, [_ message*]]``: the requested messages still held, as their exact bytes."""

    messages: tuple[bytes, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "messages", as_items(self.messages))


@dataclass(frozen=True, slots=True)
class MsgDone:
    """``[4]``: the serving peer ends the protocol, in place of a blocking reply."""


SigSubmissionV1Message = MsgInit | MsgRequestTxIds | MsgReplyTxIds | MsgRequestTxs | MsgReplyTxs | MsgDone


def _ids_state(request: MsgRequestTxIds) -> SigSubmissionV1State:
    """A blocking request leads to the blocking ids state, a non-blocking one to the other."""
    return SigSubmissionV1State.TX_IDS_BLOCKING if request.blocking else SigSubmissionV1State.TX_IDS_NON_BLOCKING


STATES = {
    SigSubmissionV1State.INIT: StateSpec(Agency.CLIENT, SMALL_BYTE_LIMIT, None),
    SigSubmissionV1State.IDLE: StateSpec(Agency.SERVER, SMALL_BYTE_LIMIT, None),
    SigSubmissionV1State.TX_IDS_BLOCKING: StateSpec(Agency.CLIENT, SMALL_BYTE_LIMIT, None),
    SigSubmissionV1State.TX_IDS_NON_BLOCKING: StateSpec(Agency.CLIENT, SMALL_BYTE_LIMIT, SHORT_WAIT),
    SigSubmissionV1State.TXS: StateSpec(Agency.CLIENT, BODIES_BYTE_LIMIT, SHORT_WAIT),
    SigSubmissionV1State.DONE: StateSpec(Agency.NOBODY),
}

TRANSITIONS = {
    (SigSubmissionV1State.INIT, MsgInit): SigSubmissionV1State.IDLE,
    (SigSubmissionV1State.IDLE, MsgRequestTxIds): _ids_state,
    (SigSubmissionV1State.IDLE, MsgRequestTxs): SigSubmissionV1State.TXS,
    (SigSubmissionV1State.TX_IDS_BLOCKING, MsgReplyTxIds): SigSubmissionV1State.IDLE,
    (SigSubmissionV1State.TX_IDS_BLOCKING, MsgDone): SigSubmissionV1State.DONE,
    (SigSubmissionV1State.TX_IDS_NON_BLOCKING, MsgReplyTxIds): SigSubmissionV1State.IDLE,
    (SigSubmissionV1State.TXS, MsgReplyTxs): SigSubmissionV1State.IDLE,
}
