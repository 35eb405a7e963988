"""The typed-protocol framework: a mini-protocol as data, and a driver that enforces it.

A protocol is a :class:`ProtocolSpec` (states with agency and limits, an initial state,
the transition table, the codec). A :class:`Driver` runs one peer of it over a
:class:`~ouroboros_mux.channel.MessageChannel`; the sans-IO :class:`ProtocolMachine`
underneath holds the rules without any I/O.
"""

from .agency import Agency, Role
from .driver import Direction, Driver, DriverEvent, as_driver
from .errors import (
    CodecError,
    DecoderFailure,
    ExceededSizeLimit,
    ExceededTimeLimit,
    ProtocolError,
    ProtocolViolation,
)
from .machine import ProtocolMachine
from .spec import SMALL_BYTE_LIMIT, Codec, NextState, ProtocolSpec, StateSpec

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
