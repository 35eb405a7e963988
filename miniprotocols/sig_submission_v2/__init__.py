"""Sig submission V2, mini-protocol 11 on node-to-node version 2 (docs/protocol/node-to-node.md 9.3).

The connection initiator's instance pulls (it is the protocol's client), the
responder's serves its mempool; :data:`DIALECT` tells the node's peers
(:mod:`dmq.diffusion.sig_submission`) which is which.
"""

from .codec import SigSubmissionV2Codec
from .spec import DIALECT, SIG_SUBMISSION_V2
from .types import (
    INGRESS_LIMIT,
    PROTOCOL_NUM,
    VERSION,
    MsgDone,
    MsgReplyNoSigIds,
    MsgReplySigIds,
    MsgReplySigs,
    MsgRequestSigIds,
    MsgRequestSigs,
    SigSubmissionV2State,
)

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "VERSION",
    "SIG_SUBMISSION_V2",
    "DIALECT",
    "SigSubmissionV2State",
    "MsgRequestSigIds",
    "MsgReplySigIds",
    "MsgReplyNoSigIds",
    "MsgRequestSigs",
    "MsgReplySigs",
    "MsgDone",
    "SigSubmissionV2Codec",
]
