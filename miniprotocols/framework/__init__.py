"""What every mini-protocol is built from: the protocol engine and the CBOR envelopes.

The engine (a protocol as a :class:`ProtocolSpec`, the sans-IO :class:`ProtocolMachine`,
the trio :class:`Driver`, :class:`Role` and :class:`Agency`) lives in :mod:`protocol_engine`,
below the handshake, which runs on it too; it is re-exported here so that each mini-protocol
imports its building blocks from one place. :mod:`.envelope` and :mod:`.cbor_write` read
and write the mini-protocols' message envelopes.
"""

import protocol_engine
from protocol_engine import *  # noqa: F403 (the engine's names, one list: protocol_engine.__all__)

__all__ = list(protocol_engine.__all__)
