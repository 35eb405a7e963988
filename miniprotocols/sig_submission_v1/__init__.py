"""Sig submission V1, mini-protocol 11 on node-to-node version 1: TxSubmission2 wire format (docs/protocol/node-to-node.md 9.4).

The connection initiator's instance serves its mempool (it is the protocol's client),
the responder's pulls; :data:`DIALECT` tells the node's peers
(:mod:`dmq.diffusion.sig_submission`) which is which.
"""

from .codec import SigSubmissionV1Codec
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
]
