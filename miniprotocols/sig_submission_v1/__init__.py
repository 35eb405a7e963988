"""Sig submission V1, mini-protocol 11 on node-to-node version 1: TxSubmission2 wire format (docs/protocol/node-to-node.md 9.4).

The connection initiator runs :func:`outbound` (the client, serving its mempool), the
responder runs :func:`inbound` (the server, pulling).
"""

from .client import outbound
from .codec import SigSubmissionV1Codec
from .server import inbound
from .spec import DIALECT, SIG_SUBMISSION_V1
from .types import (
    INGRESS_LIMIT,
    PROTOCOL_NUM,
    VERSION,
    MsgDone,
    MsgInit,
    MsgReplyTxIds,
    MsgReplyTxs,
    MsgRequestTxIds,
    MsgRequestTxs,
    SigSubmissionV1State,
)

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "VERSION",
    "SIG_SUBMISSION_V1",
    "DIALECT",
    "SigSubmissionV1State",
    "MsgInit",
    "MsgRequestTxIds",
    "MsgReplyTxIds",
    "MsgRequestTxs",
    "MsgReplyTxs",
    "MsgDone",
    "SigSubmissionV1Codec",
    "inbound",
    "outbound",
]
