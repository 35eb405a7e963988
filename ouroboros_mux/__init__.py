"""The Ouroboros network multiplexer: SDUs, bearers, channels, and the fatal conditions.

It carries mini-protocol byte streams over one TCP or Unix socket connection, exactly
as the reference ``network-mux`` does on the wire, and knows nothing about what the
protocols say.
"""

from .bearer import HANDSHAKE_SDU_TIMEOUT, SDU_TIMEOUT, Bearer, connect_tcp, connect_unix
from .channel import ChannelClosed, MalformedMessage, MessageChannel, MessageTooLarge
from .errors import (
    BearerClosed,
    ConnectFailed,
    IngressQueueOverRun,
    MuxError,
    SDUDecodeError,
    SDUReadTimeout,
    SDUWriteTimeout,
    UnknownMiniProtocol,
    WrongDirection,
)
from .mux import Mode, Mux, MuxChannel, Provenance, TrafficCounters
from .sdu import EGRESS_SDU_SIZE, MAX_SDU_PAYLOAD, SDU, SDU_HEADER_SIZE, decode_header, encode_sdu

__all__ = [
    "Bearer",
    "BearerClosed",
    "ChannelClosed",
    "ConnectFailed",
    "EGRESS_SDU_SIZE",
    "HANDSHAKE_SDU_TIMEOUT",
    "IngressQueueOverRun",
    "MAX_SDU_PAYLOAD",
    "MalformedMessage",
    "MessageChannel",
    "MessageTooLarge",
    "Mode",
    "Mux",
    "MuxChannel",
    "MuxError",
    "Provenance",
    "SDU",
    "SDUDecodeError",
    "SDUReadTimeout",
    "SDUWriteTimeout",
    "SDU_HEADER_SIZE",
    "SDU_TIMEOUT",
    "TrafficCounters",
    "UnknownMiniProtocol",
    "WrongDirection",
    "connect_tcp",
    "connect_unix",
    "decode_header",
    "encode_sdu",
]
