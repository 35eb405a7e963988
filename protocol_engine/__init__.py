"""The typed-protocol engine: every Ouroboros mini-protocol, the handshake included, as data.

A protocol is a :class:`ProtocolSpec` (states with agency and limits, an initial state,
the transition table, the codec). The sans-IO :class:`ProtocolMachine` applies it to what
one peer (a :class:`Role`) sends and receives, and the trio :class:`Driver` runs that peer
over any :class:`~ouroboros_mux.channel.MessageChannel`: a mux channel for the
mini-protocols, the bare bearer for the handshake (which runs before the mux starts). A peer
whose rounds need no waiting can instead be run by the mux reader, its task asleep in a
:class:`Handoff` until the reader hands it what needs waiting.
It ranks between ``ouroboros_mux`` and ``handshake`` (docs/architecture.md 1) so that both
the handshake and the mini-protocols can use it.
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
from .handoff import Alarm, Handoff
from .machine import ProtocolMachine
from .spec import SMALL_BYTE_LIMIT, Codec, NextState, ProtocolSpec, StateSpec
from .state import ProtocolState

__all__ = [
    "Agency",
    "Role",
    "ProtocolState",
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
    "Alarm",
    "Handoff",
    "ProtocolError",
    "ProtocolViolation",
    "ExceededSizeLimit",
    "ExceededTimeLimit",
    "DecoderFailure",
    "CodecError",
]
