"""The SDU: the unit the multiplexer puts on the wire (docs/protocol/mux.md 2.1).

An SDU is an 8-byte header (``>IHH``: transmission time, M bit + protocol number,
payload length) and 1..65535 payload bytes. The M bit says which instance of the
mini-protocol sent it: 0 for the initiator's, 1 for the responder's. Pure functions only:
the bearer does the I/O.
"""

from __future__ import annotations

import struct
import time
from dataclasses import dataclass

from .errors import SDUDecodeError

__all__ = [
    "SDU",
    "SDU_HEADER_SIZE",
    "MAX_SDU_PAYLOAD",
    "EGRESS_SDU_SIZE",
    "MAX_PROTOCOL_NUM",
    "encode_sdu",
    "encode_header",
    "decode_header",
    "monotonic_timestamp",
]

SDU_HEADER_SIZE = 8
#: The largest payload the 16-bit length field can carry; any size 1..65535 is accepted on ingress.
MAX_SDU_PAYLOAD = 65535
#: What the reference socket bearers send at most per SDU, on TCP and Unix sockets alike.
EGRESS_SDU_SIZE = 12288
#: Protocol numbers are the low 15 bits of the second header word.
MAX_PROTOCOL_NUM = 0x7FFF

_HEADER = struct.Struct(">IHH")
_RESPONDER_BIT = 0x8000


@dataclass(frozen=True, slots=True)
class SDU:
    protocol_num: int
    from_responder: bool  # the M bit
    payload: bytes
    timestamp: int = 0


def encode_header(timestamp: int, protocol_num: int, from_responder: bool, length: int) -> bytes:
    """The 8 header bytes; refuses what the peer would reject or what cannot be encoded."""
    if not 0 <= protocol_num <= MAX_PROTOCOL_NUM:
        raise ValueError(f"protocol number {protocol_num} outside 0..{MAX_PROTOCOL_NUM}")
    if not 1 <= length <= MAX_SDU_PAYLOAD:
        raise ValueError(f"SDU payload of {length} bytes outside 1..{MAX_SDU_PAYLOAD} (a zero-length SDU is fatal "
                         f"to the peer)")
    word = protocol_num | _RESPONDER_BIT if from_responder else protocol_num
    return _HEADER.pack(timestamp & 0xFFFFFFFF, word, length)


def encode_sdu(sdu: SDU) -> bytes:
    """Header and payload of one SDU, ready for the socket."""
    return encode_header(sdu.timestamp, sdu.protocol_num, sdu.from_responder, len(sdu.payload)) + sdu.payload


def decode_header(b: bytes) -> tuple[int, int, bool, int]:
    """``(timestamp, protocol_num, from_responder, length)`` of an 8-byte header.

    Any timestamp is accepted (it is informational). A zero length is fatal, as in the
    reference (``SDUDecodeError "short SDU"``).
    """
    if len(b) != SDU_HEADER_SIZE:
        raise SDUDecodeError(f"SDU header must be {SDU_HEADER_SIZE} bytes, got {len(b)}")
    timestamp, word, length = _HEADER.unpack(b)
    if length == 0:
        raise SDUDecodeError(f"short SDU: zero-length payload for mini-protocol {word & MAX_PROTOCOL_NUM}")
    return timestamp, word & MAX_PROTOCOL_NUM, bool(word & _RESPONDER_BIT), length


def monotonic_timestamp() -> int:
    """The egress transmission time: low 32 bits of the monotonic clock in microseconds."""
    return (time.monotonic_ns() // 1000) & 0xFFFFFFFF
