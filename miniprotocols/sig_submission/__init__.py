"""Sig submission (mini-protocol 11): what its two versions share (docs/protocol/node-to-node.md 9.1-9.4).

V1 (``sig_submission_v1``, the TxSubmission2 wire format) and V2 (``sig_submission_v2``)
differ in tags and in who opens and closes; the wire limits, the protocol errors, the
message-id readers and the :class:`Dialect` each version provides are written once here.
What a node does with the protocol (which ids to ask for, how to serve its mempool, the
id windows, the claims shared across peers) is the node's and lives in
:mod:`dmq.diffusion.sig_submission`, as TxSubmission's logic lives in the reference's
node beside its protocol package.
"""

from .dialect import Dialect, Side
from .errors import (
    PROTOCOL_NAMES,
    AckedTooManyIds,
    BodyNotRequested,
    IdsNotRequested,
    RequestBlocking,
    RequestedNothing,
    RequestedTooManyIds,
    RequestedUnavailable,
    RequestNonBlocking,
    SigSubmissionProtocolError,
    SizeError,
)
from .limits import (
    BODIES_BYTE_LIMIT,
    BYTES_IN_FLIGHT_PER_PEER,
    INGRESS_LIMIT,
    MAX_IDS_PER_REQUEST,
    MAX_SIG_SIZE,
    MAX_UNACKNOWLEDGED_IDS,
    PROTOCOL_NUM,
)
from .sig_message import carried_id, computed_id, payload_span

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "MAX_SIG_SIZE",
    "MAX_IDS_PER_REQUEST",
    "MAX_UNACKNOWLEDGED_IDS",
    "BYTES_IN_FLIGHT_PER_PEER",
    "BODIES_BYTE_LIMIT",
    "PROTOCOL_NAMES",
    "Side",
    "Dialect",
    "carried_id",
    "payload_span",
    "computed_id",
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
