"""Structurally valid DMQ messages for mempool tests (unsigned: the mempool never verifies).

Each message is real CBOR in the docs/protocol/message.md 5.1 shape, with ``messageId = Blake2b-256(payload)``,
so the project's strict decoder reads back exactly what was stored.
"""

from __future__ import annotations

import hashlib
import struct

import cbor2

from dmq.codec import decode_message as decode
from dmq.message import DmqMessage, OperationalCertificate

COLD_VK = bytes(range(32))
OPCERT = OperationalCertificate(hot_vk=b"\x11" * 32, issue_number=0, start_kes_period=0, cold_signature=b"\x22" * 64)


def make_message(seed: int, expires_at: int, body_size: int = 120, kes_period: int = 5) -> DmqMessage:
    """A distinct message per ``seed`` (the seed is written into the body)."""
    body = struct.pack(">Q", seed) * (body_size // 8) + b"\x00" * (body_size % 8)
    payload = cbor2.dumps([body, kes_period, expires_at])
    message_id = hashlib.blake2b(payload, digest_size=32).digest()
    kes_signature = hashlib.blake2b(payload, digest_size=64).digest() * 7
    opcert = [OPCERT.hot_vk, OPCERT.issue_number, OPCERT.start_kes_period, OPCERT.cold_signature]
    raw = b"\x85" + cbor2.dumps(message_id) + payload + cbor2.dumps(kes_signature) + cbor2.dumps(opcert) + cbor2.dumps(COLD_VK)
    return DmqMessage(
        raw=raw,
        message_id=message_id,
        signed_bytes=payload,
        body=body,
        kes_period=kes_period,
        expires_at=expires_at,
        kes_signature=kes_signature,
        opcert=OPCERT,
        cold_vk=COLD_VK,
    )
