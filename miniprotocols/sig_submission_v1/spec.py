"""Sig submission V1 as one :class:`ProtocolSpec`, and the dialect the shared peers speak it in."""

from __future__ import annotations

from ..framework import ProtocolSpec, Role
from ..sig_submission import PROTOCOL_NAMES, Dialect, Side
from .codec import SigSubmissionV1Codec
from .types import (
    STATES,
    TRANSITIONS,
    VERSION,
    MsgDone,
    MsgInit,
    MsgReplyTxIds,
    MsgReplyTxs,
    MsgRequestTxIds,
    MsgRequestTxs,
    SigSubmissionV1State,
)

__all__ = ["SIG_SUBMISSION_V1", "DIALECT"]

SIG_SUBMISSION_V1 = ProtocolSpec(
    name=PROTOCOL_NAMES[VERSION],
    states=STATES,
    initial=SigSubmissionV1State.INIT,
    transitions=TRANSITIONS,
    codec=SigSubmissionV1Codec(),
)

#: V1 in the shared peers' terms: the serving peer is the protocol's client, opens with
#: MsgInit, serves from the connection initiator, and is the one that may end (MsgDone).
DIALECT = Dialect(
    version=VERSION,
    spec=SIG_SUBMISSION_V1,
    serving_role=Role.CLIENT,
    initiator_side=Side.SERVING,
    request_ids=MsgRequestTxIds,
    reply_ids=MsgReplyTxIds,
    reply_no_ids=None,
    request_bodies=MsgRequestTxs,
    reply_bodies=MsgReplyTxs,
    init=MsgInit,
    done=MsgDone,
    done_by=Side.SERVING,
)
