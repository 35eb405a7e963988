"""What every mini-protocol is built from: the protocol engine and the CBOR envelopes.

The engine (a protocol as a :class:`ProtocolSpec`, the sans-IO :class:`ProtocolMachine`,
the trio :class:`Driver`, :class:`Role` and :class:`Agency`) lives in :mod:`protocol_engine`,
below the handshake, which runs on it too; it is re-exported here so that each mini-protocol
imports its building blocks from one place. :mod:`.envelope` and :mod:`.cbor_write` read
and write the mini-protocols' message envelopes.
"""

from protocol_engine import (
    SMALL_BYTE_LIMIT,
    Agency,
    Codec,
    CodecError,
    DecoderFailure,
    Direction,
    Driver,
    DriverEvent,
    ExceededSizeLimit,
    ExceededTimeLimit,
    NextState,
    ProtocolError,
    ProtocolMachine,
    ProtocolSpec,
    ProtocolViolation,
    Role,
    StateSpec,
    as_driver,
)

__all__ = [
    "Agency",
    "Role",
    "StateSpec",
    "Codec",
    "NextState",
    "ProtocolSpec",
    "SMALL_BYTE_LIMIT",
    "ProtocolMachine",
    "Driver",
    "DriverEvent",
    "Direction",
    "as_driver",
    "ProtocolError",
    "ProtocolViolation",
    "ExceededSizeLimit",
    "ExceededTimeLimit",
    "DecoderFailure",
    "CodecError",
]
