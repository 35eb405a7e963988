"""Sig submission V2 as one :class:`ProtocolSpec`, and the dialect the shared peers speak it in."""

from __future__ import annotations

from ..framework import ProtocolSpec, Role
from ..sig_submission import PROTOCOL_NAMES, Dialect, Side
from .codec import SigSubmissionV2Codec
from .types import (
    STATES,
    TRANSITIONS,
    VERSION,
    MsgDone,
    MsgReplyNoSigIds,
    MsgReplySigIds,
    MsgReplySigs,
    MsgRequestSigIds,
    MsgRequestSigs,
    SigSubmissionV2State,
)

__all__ = ["SIG_SUBMISSION_V2", "DIALECT"]

SIG_SUBMISSION_V2 = ProtocolSpec(
    name=PROTOCOL_NAMES[VERSION],
    states=STATES,
    initial=SigSubmissionV2State.IDLE,
    transitions=TRANSITIONS,
    codec=SigSubmissionV2Codec(),
)

#: V2 in the shared peers' terms: the serving peer is the protocol's server and serves from
#: the connection responder; the pulling peer asks, and ends with MsgDone.
DIALECT = Dialect(
    version=VERSION,
    spec=SIG_SUBMISSION_V2,
    serving_role=Role.SERVER,
    initiator_side=Side.PULLING,
    request_ids=MsgRequestSigIds,
    reply_ids=MsgReplySigIds,
    reply_no_ids=MsgReplyNoSigIds,
    request_bodies=MsgRequestSigs,
    reply_bodies=MsgReplySigs,
    init=None,
    done=MsgDone,
    done_by=Side.PULLING,
)
