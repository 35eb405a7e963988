"""Peer sharing codec (``codecPeerSharing`` with ``encodeRemoteAddress``, docs/protocol/node-to-node.md 9.6).

The address list is written as the reference writes lists: definite and empty (``80``)
when there is nothing to share, indefinite otherwise; both forms are accepted.

⚠ IPv4 byte order. The reference encodes Haskell's ``HostAddress``, a word32 that holds
the address bytes in network order in memory; CBOR then writes that word's value, which
on the little-endian machines the reference runs on is the four address bytes read
little-endian: 127.0.0.1 is the uint ``0x0100007f`` (``1a0100007f``). IPv6 is four
word32s, each a big-endian group of four address bytes. This codec follows the
reference; gouroboros reads IPv4 (and IPv6 words) little-endian, Pallas reads IPv4
big-endian, and the reference itself would change with its host's endianness, so this
is the one encoding to re-check against a live node (docs/protocol/README.md 12.4, question 5).
"""

from __future__ import annotations

import enum
import ipaddress

from ouroboros_mux.cbor import Cursor

from ..framework import CodecError
from ..framework import cbor_write as w
from ..framework.envelope import open_envelope
from .types import MsgDone, MsgSharePeers, MsgShareRequest, PeerAddress, PeerSharingMessage

__all__ = ["PeerSharingCodec", "encode_address", "decode_address"]

_MAX_WORD32 = 0xFFFFFFFF
_DONE = w.array_header(1) + w.uint(2)
_EMPTY_LIST = w.array_header(0)


def encode_address(peer: PeerAddress) -> bytes:
    packed = peer.address.packed
    if isinstance(peer.address, ipaddress.IPv4Address):
        word = int.from_bytes(packed, "little")
        return w.array_header(3) + w.uint(0) + w.uint(word) + w.uint(peer.port)
    words = b"".join(w.uint(int.from_bytes(packed[i:i + 4], "big")) for i in range(0, 16, 4))
    return w.array_header(6) + w.uint(1) + words + w.uint(peer.port)


def decode_address(cursor: Cursor) -> PeerAddress:
    length = cursor.definite_array()
    kind = cursor.uint()
    if (length, kind) == (3, 0):
        word = cursor.uint(_MAX_WORD32)
        address: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.IPv4Address(word.to_bytes(4, "little"))
    elif (length, kind) == (6, 1):
        packed = b"".join(cursor.uint(_MAX_WORD32).to_bytes(4, "big") for _ in range(4))
        address = ipaddress.IPv6Address(packed)
    else:
        raise CodecError(f"unexpected peer address (length {length}, kind {kind})")
    return PeerAddress(address, cursor.uint(0xFFFF))


class PeerSharingCodec:
    def encode(self, message: PeerSharingMessage) -> bytes:
        if isinstance(message, MsgShareRequest):
            return w.array_header(2) + w.uint(0) + w.uint(message.amount)
        if isinstance(message, MsgSharePeers):
            head = w.array_header(2) + w.uint(1)
            if not message.peers:
                return head + _EMPTY_LIST
            return head + w.INDEFINITE_ARRAY + b"".join(map(encode_address, message.peers)) + w.BREAK
        if isinstance(message, MsgDone):
            return _DONE
        raise TypeError(f"not a peer sharing message: {message!r}")

    def decode(self, state: enum.Enum, raw: bytes) -> PeerSharingMessage:
        cursor, length, tag = open_envelope(raw)
        if (length, tag) == (2, 0):
            message: PeerSharingMessage = MsgShareRequest(cursor.uint(0xFF))
        elif (length, tag) == (2, 1):
            count = cursor.array_header()
            peers = []
            if count is None:
                while not cursor.at_break():
                    peers.append(decode_address(cursor))
                cursor.read_break()
            else:
                peers = [decode_address(cursor) for _ in range(count)]
            message = MsgSharePeers(tuple(peers))
        elif (length, tag) == (1, 2):
            message = MsgDone()
        else:
            raise CodecError(f"unexpected peer sharing key (length {length}, tag {tag})")
        cursor.expect_end()
        return message
