"""Sig submission (mini-protocol 11): what its two versions share (docs/protocol/node-to-node.md 9.1-9.4).

V1 (``sig_submission_v1``, the TxSubmission2 wire format) and V2 (``sig_submission_v2``)
differ in tags and in who opens and closes; the id window, the policy numbers, the
protocol errors and both peers are written once here, over a :class:`Dialect` each
version provides. The node plugs in through :class:`SigSource` (outbound) and
:class:`SigSink` (inbound), sharing one :class:`InFlightRegistry` across its peers.
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
from .inbound import InboundPeer
from .inbound_window import BodiesOutcome, BodyBatch, InboundWindow
from .inflight import ClaimingSink, InFlightRegistry
from .interfaces import DisconnectPeer, SigSink, SigSource
from .outbound import OutboundPeer
from .outbound_window import OutboundWindow
from .policy import (
    BLOCKING_REPLY_TIMEOUT,
    BODIES_BYTE_LIMIT,
    BYTES_IN_FLIGHT_PER_PEER,
    INGRESS_LIMIT,
    MAX_BATCHES_IN_FLIGHT,
    MAX_IDS_PER_REQUEST,
    MAX_SIG_SIZE,
    MAX_UNACKNOWLEDGED_IDS,
    PROTOCOL_NUM,
    SIZE_TOLERANCE,
)
from .sig_message import carried_id, computed_id, payload_span

__all__ = [
    "PROTOCOL_NUM",
    "INGRESS_LIMIT",
    "MAX_SIG_SIZE",
    "MAX_IDS_PER_REQUEST",
    "MAX_UNACKNOWLEDGED_IDS",
    "BYTES_IN_FLIGHT_PER_PEER",
    "MAX_BATCHES_IN_FLIGHT",
    "SIZE_TOLERANCE",
    "BODIES_BYTE_LIMIT",
    "BLOCKING_REPLY_TIMEOUT",
    "PROTOCOL_NAMES",
    "Side",
    "Dialect",
    "SigSource",
    "SigSink",
    "DisconnectPeer",
    "InFlightRegistry",
    "ClaimingSink",
    "OutboundWindow",
    "InboundWindow",
    "BodyBatch",
    "BodiesOutcome",
    "OutboundPeer",
    "InboundPeer",
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
